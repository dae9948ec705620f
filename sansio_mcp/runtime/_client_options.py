"""The options every ``open_*_client`` takes, written once.

Each adapter's ``open_client``, ``open_stdio_client``, ``open_http_client``,
``open_sse_client`` and ``open_ws_client`` accepts these keywords
(``**options: Unpack[SessionOptions]``) beside its transport's own, and turns
them into a :class:`ClientOptions`, which makes the session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

import attrs

from .._client_session import ClientSession
from .._json import DEFAULT_MAX_MESSAGE_SIZE
from .._stdio import safe_environment
from .._versions import ALL_REVISIONS
from ._client import ClientHandlers, new_client_session

if TYPE_CHECKING:
    from ._oauth import OAuthProvider

__all__ = [
    "ClientOptions",
    "HTTPClientOptions",
    "SSEClientOptions",
    "SessionOptions",
    "StdioChild",
    "StdioOptions",
]


class SessionOptions(TypedDict, total=False):
    """The keywords of every ``open_*_client`` (see :class:`ClientOptions`)."""

    handlers: ClientHandlers | None
    client_info: dict[str, Any] | None
    protocol_version: str | None
    mode: str
    supported_versions: Sequence[str]
    initialize_timeout: float | None
    max_input_rounds: int
    max_message_size: int
    auth: OAuthProvider | None
    trace: Callable[[str, Any], None] | None


class HTTPClientOptions(SessionOptions, total=False):
    """``open_http_client``'s keywords: extra request ``headers``, the largest
    answer body (``max_body``, 16 MiB), the ``ssl_context`` for ``https``, and how
    long requests wait for the GET stream's head (``get_stream_head_wait``, 5 s)."""

    headers: dict[str, str] | None
    max_body: int
    #: An :class:`ssl.SSLContext`, or None for the default one.
    ssl_context: Any
    #: Seconds (finite, at least 0) later requests wait for a handshake session's
    #: GET stream's response head, from when the GET went out.
    get_stream_head_wait: float


class SSEClientOptions(SessionOptions, total=False):
    """``open_sse_client``'s keywords: the largest answer body (``max_body``, 16 MiB)."""

    max_body: int


class StdioOptions(SessionOptions, total=False):
    """``open_stdio_client``'s keywords (see :class:`StdioChild`)."""

    env: Mapping[str, str] | None
    inherit_env: bool
    cwd: str | os.PathLike[str] | None
    shutdown_grace: float


@attrs.frozen
class ClientOptions:
    """How a client session starts, whatever the transport.

    ``mode`` is ``"auto"`` (probe ``server/discover``, fall back to the
    handshake), ``"stateless"`` or ``"handshake"`` (``"modern"`` and
    ``"legacy"``: deprecated spellings); a ``protocol_version`` implies the mode
    of its era.  ``max_input_rounds`` bounds how many times one call answers
    ``input_required`` before failing with ``InputRoundsExceeded``.
    ``max_message_size`` is the largest message (bytes) the client reads: an answer over
    it fails its request at once with an error naming its size and the limit.
    ``auth`` (an :class:`~sansio_mcp.runtime.OAuthProvider`) authorizes an HTTP
    client's requests (Streamable HTTP, legacy SSE); other transports ignore it.
    ``trace`` is called with ``("send", message)`` and ``("receive", message)``
    for every JSON-RPC message each way (see ``Session.tracer``), on every
    transport: to log or record the traffic.
    """

    handlers: ClientHandlers = attrs.field(factory=ClientHandlers)
    client_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    mode: str = "auto"
    supported_versions: Sequence[str] = ALL_REVISIONS
    initialize_timeout: float | None = 30.0
    max_input_rounds: int = 10
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    auth: OAuthProvider | None = None
    trace: Callable[[str, Any], None] | None = None

    @classmethod
    def of(cls, options: SessionOptions, **defaults: Any) -> ClientOptions:
        """The options given, over a transport's ``defaults``, over the usual ones."""
        merged: dict[str, Any] = {**defaults, **options}
        if merged.get("handlers") is None:
            merged.pop("handlers", None)
        return cls(**merged)

    def handshake_only(self) -> ClientOptions:
        """These options where the transport has no stateless revision (HTTP+SSE):
        ``auto`` means ``handshake``."""
        return attrs.evolve(self, mode="handshake") if self.mode == "auto" else self

    def new_session(self) -> ClientSession:
        """A :class:`ClientSession` advertising what the handlers can answer."""
        session = new_client_session(
            self.handlers,
            client_info=self.client_info,
            supported_versions=self.supported_versions,
            protocol_version=self.protocol_version,
            mode=self.mode,
            max_input_rounds=self.max_input_rounds,
            max_message_size=self.max_message_size,
        )
        session.tracer = self.trace
        return session

    def keywords(self) -> SessionOptions:
        """These options as ``open_*_client`` keywords (to pass them on): the fields
        are :class:`SessionOptions`'s keys."""
        return cast(SessionOptions, attrs.asdict(self, recurse=False))


@attrs.frozen
class StdioChild:
    """How ``open_stdio_client`` runs its server: ``command``, in ``cwd``, with a
    minimal environment (PATH, HOME, …) plus ``env``, not the whole parent
    environment, unless ``inherit_env`` is set; on exit its stdin is closed, then
    it is sent SIGTERM, then SIGKILL, each after ``shutdown_grace`` seconds.
    ``client`` is the rest: the session's options."""

    command: list[str]
    env: dict[str, str]
    cwd: str | os.PathLike[str] | None
    shutdown_grace: float
    client: ClientOptions

    @classmethod
    def of(cls, command: Sequence[str], options: StdioOptions) -> StdioChild:
        """A ValueError for an empty command, a TypeError for an unknown keyword
        (before any process is started)."""
        if not command:
            raise ValueError("command must not be empty")
        rest: dict[str, Any] = dict(options)
        env = dict(os.environ) if rest.pop("inherit_env", False) else safe_environment(os.environ)
        env.update(rest.pop("env", None) or {})
        cwd = rest.pop("cwd", None)
        grace = rest.pop("shutdown_grace", 2.0)
        return cls(list(command), env, cwd, grace, ClientOptions.of(rest))  # type: ignore[arg-type]

    @property
    def name(self) -> str:
        """What its stderr lines are logged as."""
        return os.path.basename(self.command[0])
