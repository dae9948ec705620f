"""A small OAuth 2.1 authorization server for tests, as an HTTP router (served by
``serve_router`` on either backend): metadata (RFC 8414), dynamic registration
(RFC 7591), an authorization endpoint that approves at once and redirects with
``code``, ``state`` and ``iss``, and a token endpoint (authorization code with PKCE
S256, refresh tokens, client credentials).  The tokens it issues are what its
:attr:`TestAuthorizationServer.verifier` accepts, so a protected server can share it."""

from __future__ import annotations

import base64
import itertools
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from sansio_mcp import _json
from sansio_mcp._http_messages import HTTPRequest
from sansio_mcp._server_session import ServerSession
from sansio_mcp._streamable_http import Exchange
from sansio_mcp.auth import AccessToken, code_challenge

__all__ = ["TestAuthorizationServer"]


def _json_answer(status: int, body: dict[str, Any]) -> Exchange:
    headers = {"content-type": "application/json", "cache-control": "no-store"}
    return Exchange(status, headers, _json.dumps(body).encode("utf-8"))


def _error(error: str, description: str, status: int = 400) -> Exchange:
    return _json_answer(status, {"error": error, "error_description": description})


class TestAuthorizationServer:
    """The authorization server at ``issuer`` (set once its port is known).

    ``scopes_supported`` is advertised; ``lifetime`` is each access token's life in
    seconds; ``now`` is the wall clock tokens are dated on (the service sets it).  ``log`` records
    ``(endpoint, parameters)`` of every request, for assertions.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        issuer: str = "",
        *,
        scopes_supported: list[str] | None = None,
        lifetime: float = 3600.0,
        refresh: bool = True,
    ) -> None:
        self.issuer = issuer
        self.scopes_supported = scopes_supported
        self.lifetime = lifetime
        self.refresh = refresh
        self.now = 0.0
        self.log: list[tuple[str, dict[str, str]]] = []
        self.clients: dict[str, str | None] = {}
        self.tokens: dict[str, AccessToken] = {}
        self._codes: dict[str, dict[str, str]] = {}
        self._refresh: dict[str, tuple[str, str]] = {}
        self._serial = itertools.count(1)

    # The verifier a protected resource server shares ----------------------------------

    @property
    def verifier(self) -> TestAuthorizationServer:
        return self

    def verify(self, token: str, now: float) -> AccessToken | None:
        return self.tokens.get(token)

    # Router ------------------------------------------------------------------------

    def set_time(self, now: float) -> None:
        """The wall clock, from the service before each request (tokens are dated on it)."""
        self.now = now

    def flush(self, session: ServerSession) -> None:
        return None

    def owns(self, session: ServerSession) -> bool:
        return False

    def handle(self, request: HTTPRequest) -> Exchange:
        parts = urlsplit(request.target)
        path = parts.path
        if path == "/.well-known/oauth-authorization-server" and request.method == "GET":
            self.log.append(("metadata", {}))
            return _json_answer(200, self.metadata())
        if path == "/authorize" and request.method == "GET":
            return self._authorize(dict(parse_qsl(parts.query)))
        if path == "/register" and request.method == "POST":
            return self._register(request)
        if path == "/token" and request.method == "POST":
            form = dict(parse_qsl(request.body.decode("utf-8", "replace")))
            return self._token(form, request.headers.get("authorization"))
        return _error("not_found", f"nothing at {path}", 404)

    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.scopes_supported is not None:
            metadata["scopes_supported"] = self.scopes_supported
        return metadata

    def _register(self, request: HTTPRequest) -> Exchange:
        try:
            body = _json.loads(request.body)
        except Exception:
            return _error("invalid_client_metadata", "the body is not JSON")
        if not isinstance(body, dict) or not body.get("redirect_uris"):
            return _error("invalid_redirect_uri", "redirect_uris is required")
        client_id = f"client-{next(self._serial)}"
        self.clients[client_id] = None
        self.log.append(("register", {"client_name": str(body.get("client_name"))}))
        return _json_answer(
            201, {"client_id": client_id, "token_endpoint_auth_method": "none", **body}
        )

    def _authorize(self, query: dict[str, str]) -> Exchange:
        self.log.append(("authorize", query))
        redirect = query.get("redirect_uri", "")
        if query.get("client_id") not in self.clients or not redirect:
            return _error("invalid_request", "unknown client or no redirect_uri")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return _error("invalid_request", "PKCE S256 is required")
        code = f"code-{next(self._serial)}"
        self._codes[code] = query
        answer = {"code": code, "iss": self.issuer}
        if "state" in query:
            answer["state"] = query["state"]
        location = redirect + ("&" if "?" in redirect else "?") + urlencode(answer)
        return Exchange(302, {"location": location}, b"")

    def _client_of(self, form: dict[str, str], authorization: str | None) -> str | None:
        if authorization and authorization.lower().startswith("basic "):
            decoded = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id = unquote(client_id)
            return client_id if self.clients.get(client_id) == unquote(secret) else None
        public = form.get("client_id", "")
        return public if public in self.clients and self.clients[public] is None else None

    def _token(self, form: dict[str, str], authorization: str | None) -> Exchange:
        self.log.append(("token", form))
        client_id = self._client_of(form, authorization)
        if client_id is None:
            return _error("invalid_client", "client authentication failed", 401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            request = self._codes.pop(form.get("code", ""), None)
            if request is None or request.get("client_id") != client_id:
                return _error("invalid_grant", "unknown or used code")
            if code_challenge(form.get("code_verifier", "")) != request.get("code_challenge"):
                return _error("invalid_grant", "the code_verifier does not match")
            if form.get("redirect_uri") != request.get("redirect_uri"):
                return _error("invalid_grant", "redirect_uri differs")
            return self._issue(client_id, request.get("scope", ""), refresh=self.refresh)
        if grant == "refresh_token":
            owner, granted = self._refresh.pop(form.get("refresh_token", ""), (None, ""))
            if owner != client_id:
                return _error("invalid_grant", "unknown refresh token")
            # RFC 6749 §6: an omitted scope is the scope granted before.
            return self._issue(client_id, form.get("scope") or granted, refresh=True)
        if grant == "client_credentials":
            return self._issue(client_id, form.get("scope", ""), refresh=False)
        return _error("unsupported_grant_type", f"grant {grant!r} is not supported")

    def _issue(self, client_id: str, scope: str, *, refresh: bool) -> Exchange:
        token = f"access-{next(self._serial)}"
        self.tokens[token] = AccessToken(
            token, frozenset(scope.split()), client_id, expires_at=self.now + self.lifetime
        )
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": int(self.lifetime),
        }
        if scope:
            answer["scope"] = scope
        if refresh:
            refresh_token = f"refresh-{next(self._serial)}"
            self._refresh[refresh_token] = (client_id, scope)
            answer["refresh_token"] = refresh_token
        return _json_answer(200, answer)

    def register_confidential(self, client_id: str, secret: str) -> None:
        """A pre-registered confidential client (``client_secret_basic``)."""
        self.clients[client_id] = secret
