"""OAuth for the HTTP clients, written once for every backend: :class:`OAuthProvider`
(what ``open_http_client(url, auth=...)`` and ``open_sse_client`` take) runs the core's
:class:`~sansio_mcp.auth.OAuthClient` with the backend's TCP streams, keeps tokens in a
:class:`TokenStore`, and hands the browser step to the application's callback."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from .._errors import ProtocolError
from .._http import HTTPClientConnection, HTTPResponseHead
from .._ndjson import NEED_DATA
from .._streamable_http_client import Endpoint
from ..auth import (
    AuthorizationError,
    AuthorizationFailed,
    Authorized,
    ClientInfo,
    Decision,
    DPoPKey,
    FlowState,
    HTTPCall,
    HTTPReply,
    OAuthClient,
    OAuthConfig,
    OpenBrowser,
    TokenSet,
)
from ._backend import Backend, Signal

_log = logging.getLogger("sansio_mcp.oauth")

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuthProvider",
    "TokenStore",
    "fetch",
]

#: The largest metadata, registration or token answer read (bytes).
MAX_AUTH_BODY = 1024 * 1024
#: Seconds one request of a flow (not the browser step) may take.
CALL_TIMEOUT = 30.0

OpenBrowserCallback = Callable[[str], Awaitable[str]]


async def fetch(
    backend: Backend,
    call: HTTPCall,
    *,
    ssl_context: Any = None,
    max_body: int = MAX_AUTH_BODY,
) -> HTTPReply:
    """Make one HTTP request on a new connection and read the whole answer."""
    endpoint = Endpoint.parse(call.url)
    stream = await backend.open_tcp_stream(
        endpoint.host, endpoint.port, tls=endpoint.scheme == "https", ssl_context=ssl_context
    )
    try:
        conn = HTTPClientConnection(endpoint.host_header)
        headers = {**call.headers, "connection": "close"}
        await stream.send_all(conn.send_request(call.method, endpoint.target, headers, call.body))
        head: HTTPResponseHead | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data and head is None:
                    raise OSError(f"{endpoint.host_header} closed the connection unanswered")
            elif isinstance(event, HTTPResponseHead):
                head = event
            elif isinstance(event, bytes):
                body += event
                if len(body) > max_body:
                    raise OSError(f"the answer of {call.url} is over {max_body} bytes")
            else:
                break
        if head is None:
            raise OSError(f"{endpoint.host_header} sent no HTTP answer")
        return HTTPReply(head.status, dict(head.headers), bytes(body))
    finally:
        await stream.aclose()


class TokenStore(Protocol):
    """Where a provider keeps tokens and client registrations, by server URL."""

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, data: dict[str, Any]) -> None: ...


class MemoryTokenStore:
    """Tokens for the life of the process."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}

    def load(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    def save(self, key: str, data: dict[str, Any]) -> None:
        self.data[key] = data


class FileTokenStore:
    """Tokens in a JSON file (created with mode 0600), one entry per server URL (with
    its DPoP private key, as PEM, when the tokens are DPoP-bound)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self, key: str) -> dict[str, Any] | None:
        entry = self._read().get(key)
        return entry if isinstance(entry, dict) else None

    def save(self, key: str, data: dict[str, Any]) -> None:
        everything = self._read()
        everything[key] = data
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(self.path.suffix + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(everything, file, indent=1)
        os.replace(temporary, self.path)


class OAuthProvider:
    """OAuth 2.1 for an HTTP client: give it as ``auth=`` to ``open_http_client`` or
    ``open_sse_client``.

    ``entropy`` and ``clock`` (wall-clock seconds) are injectable for tests.
    ``open_browser(url)`` sends the user to the authorization URL and returns the URL
    the browser was redirected to (the CLI's loopback listener does this); without one
    the provider follows the authorization server's redirect itself, which only works
    with servers that approve at once (tests, the conformance suite).  With
    ``flows=False`` it only sends the token its store holds: a 401 or 403 fails the
    request with an :class:`AuthorizationError` (``data["status"]``), and no discovery,
    registration or browser step is ever started (the CLI's ``--bearer``).
    """

    def __init__(
        self,
        config: OAuthConfig | None = None,
        *,
        store: TokenStore | None = None,
        open_browser: OpenBrowserCallback | None = None,
        ssl_context: Any = None,
        entropy: Callable[[int], bytes] = os.urandom,
        clock: Callable[[], float] | None = None,
        flows: bool = True,
    ) -> None:
        self.config = config or OAuthConfig()
        self.flows = flows
        self._clock = clock
        self.store = store if store is not None else MemoryTokenStore()
        self.open_browser = open_browser
        self.ssl_context = ssl_context
        self.entropy = entropy
        self.machine: OAuthClient | None = None
        self._backend: Backend | None = None
        self._generation = 0
        self._running = False
        self._waiting: list[Signal] = []
        self._saved = 0
        #: Why the stored state could not be used (a DPoP key that does not parse), or None.
        self.store_problem: str | None = None

    def bind(self, backend: Backend, server_url: str, ssl_context: Any = None) -> None:
        """Called by the client host: the backend to run flows on, the MCP server's URL."""
        self._backend = backend
        if self.ssl_context is None:
            self.ssl_context = ssl_context
        if self.machine is None or self.machine.server_url != server_url:
            saved = self.store.load(server_url) or {}
            tokens = saved.get("tokens")
            clients = saved.get("clients") or {}
            authorization_server = saved.get("authorization_server")
            token_set = TokenSet.from_json(tokens) if isinstance(tokens, dict) else None
            dpop_key = self._stored_dpop_key(server_url, saved.get("dpop_key"))
            bound = token_set is not None and token_set.token_type.lower() == "dpop"
            if dpop_key is None and bound:
                # Bound to a key this process does not have: of no use, and a refresh
                # with them would fail; the flow starts afresh.
                token_set = None
            self.machine = OAuthClient(
                server_url,
                self.config,
                entropy=self.entropy,
                tokens=token_set,
                dpop_key=dpop_key,
                clients={k: ClientInfo.from_json(v) for k, v in clients.items()},
                authorization_server=(
                    authorization_server if isinstance(authorization_server, dict) else None
                ),
            )

    def _stored_dpop_key(self, server_url: str, stored: Any) -> DPoPKey | None:
        """The stored DPoP key (``{"alg", "pem"}``), or None: none stored, or one that
        does not parse (reported in :attr:`store_problem` and the log)."""
        if stored is None:
            return None
        try:
            if not isinstance(stored, dict) or not isinstance(stored.get("pem"), str):
                raise ValueError('not an object with a "pem" string')
            return DPoPKey(stored["pem"], str(stored.get("alg", "ES256")))
        except Exception as exc:  # whatever the file holds: reported, never a crash
            self.store_problem = (
                f"the stored DPoP key for {server_url} does not parse "
                f"({exc or type(exc).__name__}): DPoP-bound tokens are dropped and "
                "authorization starts afresh"
            )
            _log.warning("%s", self.store_problem)
            return None

    def clock(self) -> float:
        """Wall-clock seconds (the backend's unless one was given): JWTs and token
        expiry are dated on it, not on the monotonic clock."""
        if self._clock is not None:
            return self._clock()
        backend, _ = self._require()
        return backend.wall_clock()

    @property
    def tokens(self) -> TokenSet | None:
        return self.machine.tokens if self.machine is not None else None

    def _require(self) -> tuple[Backend, OAuthClient]:
        if self._backend is None or self.machine is None:
            raise RuntimeError("the provider is not bound to a client (pass it as auth=)")
        return self._backend, self.machine

    async def headers(self, method: str, url: str) -> tuple[dict[str, str], int]:
        """The headers for one request to the MCP server, and the token generation they
        carry (give it back to :meth:`after_response`)."""
        _, machine = self._require()
        await self._wait_for_flow()
        if machine.needs_refresh(self.clock()):
            machine.start_refresh()
            await self._run_flow()
        return machine.request_headers(method, url, self.clock()), self._generation

    async def after_response(
        self, status: int, headers: dict[str, str], generation: int, authorized: bool
    ) -> bool | AuthorizationError | None:
        """What the MCP server answered: True to send the request again, None to use the
        answer, an :class:`AuthorizationError` to fail the request with."""
        _, machine = self._require()
        if status in (401, 403) and not self.flows:
            return AuthorizationError(
                message=f"the server refused the token (HTTP {status})", data={"status": status}
            )
        if status in (401, 403):
            await self._wait_for_flow()
            if generation != self._generation:
                return True  # another request's flow got a new token meanwhile
        decision = machine.on_response(status, headers, authorized=authorized)
        if decision is Decision.PROCEED:
            return None
        if decision is Decision.RETRY:
            return True
        if decision is Decision.GIVE_UP:
            return machine.last_error or AuthorizationError(
                message=f"the server refused the request (HTTP {status})"
            )
        try:
            error = await self._run_flow()
        except (ProtocolError, TypeError, ValueError) as exc:
            # A configuration the flow cannot use (no assertion for a JWT grant, PyJWT
            # missing): the request fails with the reason, the client lives on.
            machine.state = FlowState.IDLE
            return AuthorizationError(message=f"authorization failed: {exc}")
        return True if error is None else error

    async def _wait_for_flow(self) -> None:
        while self._running:
            backend, _ = self._require()
            signal = backend.new_signal()
            self._waiting.append(signal)
            await signal.wait()

    async def _run_flow(self) -> AuthorizationError | None:
        backend, machine = self._require()
        self._running = True
        try:
            while True:
                step = machine.next_step(self.clock())
                if isinstance(step, Authorized):
                    self._generation += 1
                    return None
                if isinstance(step, AuthorizationFailed):
                    return step.error
                if isinstance(step, OpenBrowser):
                    try:
                        redirect = await self._browse(step.url)
                    except (OSError, ValueError) as exc:
                        machine.fail(f"the authorization step failed: {exc}")
                        continue
                    machine.receive_redirect(redirect)
                    continue
                if not isinstance(step, HTTPCall):  # pragma: no cover - the machine's contract
                    raise TypeError(f"unexpected step {step!r}")
                try:
                    async with backend.fail_after(CALL_TIMEOUT):
                        reply = await fetch(backend, step, ssl_context=self.ssl_context)
                except (OSError, ValueError) as exc:
                    machine.fail(f"{step.method} {step.url} failed: {exc}")
                    continue
                machine.receive_reply(reply, self.clock())
        finally:
            self._running = False
            self._save()
            waiting, self._waiting = self._waiting, []
            for signal in waiting:
                signal.set()

    async def _browse(self, url: str) -> str:
        if self.open_browser is not None:
            return await self.open_browser(url)
        backend, _ = self._require()
        async with backend.fail_after(CALL_TIMEOUT):
            reply = await fetch(backend, HTTPCall("GET", url, {}), ssl_context=self.ssl_context)
        location = reply.headers.get("location")
        if reply.status not in (301, 302, 303, 307, 308) or not location:
            raise ValueError(
                f"the authorization server answered HTTP {reply.status} without redirecting; "
                "a user must approve: give the provider an open_browser callback"
            )
        return location

    def _save(self) -> None:
        machine = self.machine
        if machine is None or machine.changed == self._saved:
            return
        self._saved = machine.changed
        self.store.save(
            machine.server_url,
            {
                "tokens": machine.tokens.to_json() if machine.tokens else None,
                "clients": {k: v.to_json() for k, v in machine.clients.items()},
                # A process started later refreshes the tokens without a new flow,
                # with the key a DPoP-bound refresh token is bound to.
                "authorization_server": machine.authorization_server,
                "dpop_key": (
                    {"alg": key.algorithm, "pem": key.private_pem()}
                    if (key := machine.dpop_key) is not None
                    else None
                ),
            },
        )
