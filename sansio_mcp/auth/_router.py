"""An HTTP router (Streamable HTTP, legacy SSE) behind bearer tokens: the protected
resource metadata is served, and a request without a good enough token is answered
401 or 403 before it reaches the MCP machine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from inspect import isawaitable
from typing import Any, Protocol
from urllib.parse import urlsplit

import attrs

from .. import _json
from .._errors import RemoteProtocolError
from .._http_messages import HTTPRequest
from .._server_session import ServerSession
from .._streamable_http import Exchange
from ._discovery import origin_of
from ._dpop_check import REPLAYED
from ._server import AccessToken, AuthRefusal, ResourceServer

__all__ = ["Credentials", "ProtectedRouter", "operations"]

#: A request's scopes beyond the resource server's, by method and name or URI.
ScopesFor = Callable[[str, str | None], Sequence[str]]


def operations(body: bytes) -> list[tuple[str, str | None]]:
    """The method of each request in a JSON-RPC body (one message or a batch), with
    the tool or prompt ``name`` or the resource ``uri`` its params name.  A body that
    is no JSON-RPC gives none: the MCP machine answers it."""
    try:
        parsed = _json.loads(body)
    except RemoteProtocolError:
        return []
    found: list[tuple[str, str | None]] = []
    for message in parsed if isinstance(parsed, list) else [parsed]:
        method = message.get("method") if isinstance(message, dict) else None
        if not isinstance(method, str):
            continue
        params = message.get("params")
        target = None
        if isinstance(params, dict):
            named = params.get("name", params.get("uri"))
            target = named if isinstance(named, str) else None
        found.append((method, target))
    return found


class Router(Protocol):
    """What an HTTP service needs of a transport machine (Streamable HTTP, legacy SSE)."""

    def handle(self, request: HTTPRequest) -> Exchange: ...

    def flush(self, session: ServerSession) -> None: ...

    def owns(self, session: ServerSession) -> bool: ...


@attrs.frozen
class Credentials:
    """The token a request presents: ``scheme`` is ``"bearer"`` or ``"dpop"``."""

    scheme: str
    token: str


class ProtectedRouter:
    """``router`` behind ``resource_server``'s verifier.

    :meth:`handle` asks the verifier at once; the runtime's HTTP service instead reads
    :meth:`credentials`, awaits the verifier (which may be ``async`` or need HTTP calls
    made) and hands the result to :meth:`handle_verified`.  The time expiry and DPoP
    proofs are judged by comes in through :meth:`set_time` (wall-clock seconds).  A
    resource server whose ``resource`` is empty takes it from each request: its
    ``Host`` and ``endpoint`` (what a server on an ephemeral port needs).  A request let
    through leaves its :class:`AccessToken` on its session as ``session.auth``, where
    the handlers it starts find it (``ctx.auth``).  A session is bound to the subject
    and client that opened it: another's token naming it gets 404, as for an unknown
    session (a router with ``session_for(request)`` says which session a request names).
    A request needs the resource server's :meth:`~ResourceServer.scopes_for` its
    operations, and what ``scopes_for(method, name)`` adds (the runtime's per-tool
    scopes).
    """

    def __init__(
        self,
        router: Router,
        resource_server: ResourceServer,
        *,
        endpoint: str = "/mcp",
        scopes_for: ScopesFor | None = None,
    ) -> None:
        self.router = router
        self.resource_server = resource_server
        self.endpoint = endpoint
        self.scopes_for = scopes_for
        self.now = 0.0

    def set_time(self, now: float) -> None:
        self.now = now

    def expire_idle(self, now: float) -> None:
        expire = getattr(self.router, "expire_idle", None)
        if expire is not None:
            expire(now)

    def resource_server_for(self, request: HTTPRequest) -> ResourceServer:
        """The resource server ``request`` is judged by (its metadata served by): the
        one given, its empty ``resource`` taken from the request's Host.  A router
        protecting several resources (one per path) says which here."""
        rs = self.resource_server
        if rs.resource:
            return rs
        host = request.headers.get("host", "localhost")
        return attrs.evolve(rs, resource=f"http://{host}{self.endpoint}")

    def credentials(self, request: HTTPRequest) -> Credentials | None:
        """The token ``request`` presents, when it needs verifying (not for the
        metadata document)."""
        rs = self.resource_server
        if self._is_metadata(self.resource_server_for(request), request):
            return None
        presented = rs.presented_token(request.headers.get("authorization"))
        return None if presented is None else Credentials(*presented)

    @staticmethod
    def _is_metadata(rs: ResourceServer, request: HTTPRequest) -> bool:
        path = request.target.split("?", 1)[0]
        return path == rs.metadata_path and request.method in ("GET", "HEAD")

    def handle(self, request: HTTPRequest) -> Exchange:
        credentials = self.credentials(request)
        token: Any = None
        if credentials is not None:
            token = self.resource_server.verifier.verify(credentials.token, self.now)
            if isawaitable(token):
                close = getattr(token, "close", None)
                if close is not None:
                    close()  # never awaited: say so here rather than as a warning later
                raise TypeError(
                    "this verifier is async: serve the router with the runtime's HTTP "
                    "service (serve_http, serve_sse, MCPApp), which awaits it"
                )
        return self.handle_verified(request, credentials, token)

    def handle_verified(
        self,
        request: HTTPRequest,
        credentials: Credentials | None,
        token: Any,
        replayed: bool | None = None,
    ) -> Exchange:
        """Answer ``request``, whose ``credentials`` the verifier judged ``token``.
        ``replayed``: what a replay cache shared by replicas said of the request's DPoP
        proof (its :meth:`dpop_replay_key`): True, used before (refused, once the
        proof is otherwise good); False, first use; None, not asked (this router's
        checker remembers the ``jti`` itself, for this process)."""
        rs = self.resource_server_for(request)
        if self._is_metadata(rs, request):
            headers = {"content-type": "application/json", "cache-control": "max-age=300"}
            return Exchange(200, headers, rs.metadata_document())
        if token is not None and not isinstance(token, AccessToken):
            raise TypeError("a ProtectedRouter's verifier must return an AccessToken or None")
        required = self._required_scopes(rs, request)
        refusal = rs.judge(token, credentials is not None, self.now, required)
        if refusal is None and token is not None and credentials is not None:
            refusal = self._dpop_refusal(rs, request, credentials, token, replayed)
        if refusal is None and token is not None and not self._same_principal(request, token):
            # Another user's session (a leaked id): to this caller it does not exist.
            refusal = AuthRefusal(404, {"content-type": "text/plain"}, b"unknown session")
        if refusal is not None:
            return Exchange(refusal.status, dict(refusal.headers), refusal.body)
        exchange = self.router.handle(request)
        if exchange.session is not None:
            exchange.session.auth = token
        nonce = rs.dpop.current_nonce(self.now) if token is not None and token.jkt else None
        if nonce is not None:
            exchange.headers["dpop-nonce"] = nonce  # the next one, before this one lapses
        return exchange

    def _required_scopes(self, rs: ResourceServer, request: HTTPRequest) -> list[str]:
        """Every scope ``request`` needs: the global ones, and its operations'."""
        required = list(rs.required_scopes)
        if request.method != "POST" or not (rs.operation_scopes or self.scopes_for):
            return required
        for method, target in operations(request.body):
            required += rs.scopes_for(method, target)
            if self.scopes_for is not None:
                required += self.scopes_for(method, target)
        return list(dict.fromkeys(required))

    def _same_principal(self, request: HTTPRequest, token: AccessToken) -> bool:
        """Whether the session ``request`` names (if any) was started with a token of the
        same subject and client: a session is bound to whoever opened it."""
        session_for = getattr(self.router, "session_for", None)
        session = session_for(request) if session_for is not None else None
        bound = getattr(session, "auth", None)
        if not isinstance(bound, AccessToken):
            return True
        return (bound.subject, bound.client_id) == (token.subject, token.client_id)

    def _request_url(self, rs: ResourceServer, request: HTTPRequest) -> str:
        """The URL the client sent ``request`` to, for a proof's ``htu``: the resource's
        origin and the prefix it is mounted under (an ASGI app's ``root_path``, which
        ``request.target`` lacks) before the target."""
        path = urlsplit(rs.resource).path.rstrip("/")
        mounted = path.endswith(self.endpoint) and self.endpoint != "/"
        prefix = path[: len(path) - len(self.endpoint)] if mounted else ""
        return origin_of(rs.resource) + prefix + request.target

    def dpop_replay_key(
        self, request: HTTPRequest, credentials: Credentials | None, token: Any
    ) -> tuple[str, float] | None:
        """For a replay cache shared by replicas: the key of the DPoP proof ``request``
        carries with the DPoP-bound ``token`` the verifier accepted, and how long to
        keep it (``ReplayCache.first_use(key, ttl)``); None when there is no proof to
        remember."""
        if credentials is None or credentials.scheme != "dpop":
            return None
        if not isinstance(token, AccessToken) or token.jkt is None:
            return None
        checker = self.resource_server.dpop
        key = checker.replay_key(request.headers.get("dpop"), token.jkt)
        return None if key is None else (key, checker.replay_window)

    def _dpop_refusal(
        self,
        rs: ResourceServer,
        request: HTTPRequest,
        credentials: Credentials,
        token: AccessToken,
        replayed: bool | None = None,
    ) -> AuthRefusal | None:
        """A DPoP-bound token must come as ``DPoP`` with a good proof; an unbound one
        as ``Bearer`` (RFC 9449 §7.1-7.2)."""
        if token.jkt is None:
            if credentials.scheme == "dpop":
                return rs.dpop_refusal("the access token is not DPoP-bound", self.now)
            return None
        if credentials.scheme != "dpop":
            return rs.dpop_refusal("a DPoP-bound token must be sent with the DPoP scheme", self.now)
        error = rs.dpop.check(
            request.headers.get("dpop"),
            method=request.method,
            url=self._request_url(rs, request),
            access_token=credentials.token,
            jkt=token.jkt,
            now=self.now,
            remember=replayed is None,
        )
        if error is None and replayed:
            error = REPLAYED
        return None if error is None else rs.dpop_refusal(error, self.now)

    def flush(self, session: ServerSession) -> None:
        self.router.flush(session)

    def owns(self, session: ServerSession) -> bool:
        return self.router.owns(session)
