"""The options every ``open_*_client`` takes, written once.

Each adapter's ``open_client``, ``open_stdio_client``, ``open_http_client``,
``open_sse_client`` and ``open_ws_client`` accepts these keywords
(``**options: Unpack[SessionOptions]``) beside its transport's own, and turns
them into a :class:`ClientOptions`, which makes the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

import attrs

from .._client_session import ClientSession
from .._json import DEFAULT_MAX_MESSAGE_SIZE
from .._versions import ALL_REVISIONS
from ._client import ClientHandlers, new_client_session
from ._oauth import OAuthProvider

__all__ = ["ClientOptions", "SessionOptions"]


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


@attrs.frozen
class ClientOptions:
    """How a client session starts, whatever the transport.

    ``mode`` is ``"auto"`` (probe ``server/discover``, fall back to the
    handshake), ``"modern"`` or ``"legacy"``; a ``protocol_version`` implies
    the mode of its era.  ``max_input_rounds`` bounds how many times one call
    answers ``input_required`` before failing with ``InputRoundsExceeded``.
    ``max_message_size`` is the largest message (bytes) the client reads: an answer over
    it fails its request at once with an error naming its size and the limit.
    ``auth`` (an :class:`~sansio_mcp.runtime.OAuthProvider`) authorizes an HTTP
    client's requests (Streamable HTTP, legacy SSE); other transports ignore it.
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

    @classmethod
    def of(cls, options: SessionOptions, **defaults: Any) -> ClientOptions:
        """The options given, over a transport's ``defaults``, over the usual ones."""
        merged: dict[str, Any] = {**defaults, **options}
        if merged.get("handlers") is None:
            merged.pop("handlers", None)
        return cls(**merged)

    def handshake_only(self) -> ClientOptions:
        """These options where the transport has no stateless revision (HTTP+SSE):
        ``auto`` means ``legacy``."""
        return attrs.evolve(self, mode="legacy") if self.mode == "auto" else self

    def new_session(self) -> ClientSession:
        """A :class:`ClientSession` advertising what the handlers can answer."""
        return new_client_session(
            self.handlers,
            client_info=self.client_info,
            supported_versions=self.supported_versions,
            protocol_version=self.protocol_version,
            mode=self.mode,
            max_input_rounds=self.max_input_rounds,
            max_message_size=self.max_message_size,
        )

    def keywords(self) -> SessionOptions:
        """These options as ``open_*_client`` keywords (to pass them on)."""
        return SessionOptions(
            handlers=self.handlers,
            client_info=self.client_info,
            protocol_version=self.protocol_version,
            mode=self.mode,
            supported_versions=self.supported_versions,
            initialize_timeout=self.initialize_timeout,
            max_input_rounds=self.max_input_rounds,
            max_message_size=self.max_message_size,
            auth=self.auth,
        )
