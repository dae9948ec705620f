"""An HTTP router (Streamable HTTP, legacy SSE) behind bearer tokens: the protected
resource metadata is served, and a request without a good enough token is answered
401 or 403 before it reaches the MCP machine."""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from .._http_messages import HTTPRequest
from .._server_session import ServerSession
from .._streamable_http import Exchange
from ._server import AccessToken, ResourceServer

__all__ = ["ProtectedRouter"]


class _Router(Protocol):
    def handle(self, request: HTTPRequest) -> Exchange: ...

    def flush(self, session: ServerSession) -> None: ...

    def owns(self, session: ServerSession) -> bool: ...


class ProtectedRouter:
    """``router`` behind ``resource_server``'s verifier.

    The verifier must answer at once (an :class:`AccessToken` or None); the time it
    judges expiry by comes in through :meth:`set_time` (wall-clock seconds).  A
    resource server whose ``resource`` is empty takes it from each request: its
    ``Host`` and ``endpoint`` (what a server on an ephemeral port needs).
    """

    def __init__(
        self, router: _Router, resource_server: ResourceServer, *, endpoint: str = "/mcp"
    ) -> None:
        self.router = router
        self.resource_server = resource_server
        self.endpoint = endpoint
        self.now = 0.0

    def set_time(self, now: float) -> None:
        self.now = now

    def expire_idle(self, now: float) -> None:
        expire = getattr(self.router, "expire_idle", None)
        if expire is not None:
            expire(now)

    def _resource_server(self, request: HTTPRequest) -> ResourceServer:
        rs = self.resource_server
        if rs.resource:
            return rs
        host = request.headers.get("host", "localhost")
        return attrs.evolve(rs, resource=f"http://{host}{self.endpoint}")

    def handle(self, request: HTTPRequest) -> Exchange:
        rs = self._resource_server(request)
        path = request.target.split("?", 1)[0]
        if path == rs.metadata_path and request.method in ("GET", "HEAD"):
            headers = {"content-type": "application/json", "cache-control": "max-age=300"}
            return Exchange(200, headers, rs.metadata_document())
        presented = rs.bearer_token(request.headers.get("authorization"))
        token: Any = rs.verifier.verify(presented, self.now) if presented else None
        if token is not None and not isinstance(token, AccessToken):
            raise TypeError("a ProtectedRouter's verifier must return an AccessToken or None")
        refusal = rs.judge(token, presented is not None, self.now)
        if refusal is not None:
            return Exchange(refusal.status, dict(refusal.headers), refusal.body)
        return self.router.handle(request)

    def flush(self, session: ServerSession) -> None:
        self.router.flush(session)

    def owns(self, session: ServerSession) -> bool:
        return self.router.owns(session)
