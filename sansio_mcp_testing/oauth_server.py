"""A small OAuth 2.1 authorization server for tests, as an HTTP router (served by
``serve_router`` on either backend): metadata (RFC 8414), dynamic registration
(RFC 7591), an authorization endpoint that approves at once and redirects with
``code``, ``state`` and ``iss``, and a token endpoint (authorization code with PKCE
S256, refresh tokens, client credentials).  The tokens it issues are what its
:attr:`TestAuthorizationServer.verifier` accepts, so a protected server can share it.
With ``jwt=True`` they are signed JWTs (RFC 9068) whose keys it serves at ``/jwks``;
with ``dpop=True`` it binds them to the client's DPoP key (RFC 9449 §5)."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from sansio_mcp import ServerSession, _json
from sansio_mcp.auth import AccessToken, DPoPChecker, DPoPKey, code_challenge, jwk_thumbprint
from sansio_mcp.http import Exchange, HTTPRequest

__all__ = ["TestAuthorizationServer"]


def _json_answer(status: int, body: dict[str, Any]) -> Exchange:
    headers = {"content-type": "application/json", "cache-control": "no-store"}
    return Exchange(status, headers, _json.dumps(body).encode("utf-8"))


def _error(error: str, description: str, status: int = 400) -> Exchange:
    return _json_answer(status, {"error": error, "error_description": description})


class TestAuthorizationServer:
    """The authorization server at ``issuer`` (set once its port is known).

    ``scopes_supported`` is advertised, and ``code_challenge_methods`` (None: the
    field is left out of the metadata); ``lifetime`` is each access token's life in
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
        jwt: bool = False,
        dpop: bool = False,
        code_challenge_methods: Sequence[str] | None = ("S256",),
    ) -> None:
        self.issuer = issuer
        self.code_challenge_methods = code_challenge_methods
        #: The key JWT access tokens are signed with (ES256), when ``jwt``.
        self.signing_key = DPoPKey() if jwt else None
        self.dpop = DPoPChecker() if dpop else None
        self.scopes_supported = scopes_supported
        self.lifetime = lifetime
        self.refresh = refresh
        self.now = 0.0
        self.log: list[tuple[str, dict[str, str]]] = []
        self.clients: dict[str, str | None] = {}
        self.tokens: dict[str, AccessToken] = {}
        self._codes: dict[str, dict[str, str]] = {}
        #: refresh token -> (client id, scope, the DPoP key's thumbprint it is bound to).
        self._refresh: dict[str, tuple[str, str, str | None]] = {}
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
            jkt, refusal = self._dpop_binding(request)
            if refusal is not None:
                return refusal
            return self._token(form, request.headers.get("authorization"), jkt)
        if path == "/jwks" and request.method == "GET" and self.signing_key is not None:
            self.log.append(("jwks", {}))
            jwk = {**self.signing_key.public_jwk, "kid": "k1", "use": "sig", "alg": "ES256"}
            return _json_answer(200, {"keys": [jwk]})
        return _error("not_found", f"nothing at {path}", 404)

    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.code_challenge_methods is not None:
            metadata["code_challenge_methods_supported"] = list(self.code_challenge_methods)
        if self.scopes_supported is not None:
            metadata["scopes_supported"] = self.scopes_supported
        if self.signing_key is not None:
            metadata["jwks_uri"] = f"{self.issuer}/jwks"
        if self.dpop is not None:
            metadata["dpop_signing_alg_values_supported"] = list(self.dpop.algorithms)
        return metadata

    def _dpop_binding(self, request: HTTPRequest) -> tuple[str | None, Exchange | None]:
        """The thumbprint a token request's DPoP proof binds its tokens to (None: no
        proof), or the refusal of a bad proof (RFC 9449 §5)."""
        proof = request.headers.get("dpop")
        if self.dpop is None or proof is None:
            return None, None
        error = self.dpop.check(
            proof,
            method="POST",
            url=f"{self.issuer}/token",
            access_token=None,
            jkt=None,
            now=self.now,
        )
        if error is not None:
            return None, _error("invalid_dpop_proof", error)
        import jwt

        return jwk_thumbprint(jwt.get_unverified_header(proof)["jwk"]), None

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

    def _token(
        self, form: dict[str, str], authorization: str | None, jkt: str | None = None
    ) -> Exchange:
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
            resource = request.get("resource") or form.get("resource")
            return self._issue(
                client_id, request.get("scope", ""), refresh=self.refresh, jkt=jkt, aud=resource
            )
        if grant == "refresh_token":
            given = form.get("refresh_token", "")
            owner, granted, bound = self._refresh.get(given, (None, "", None))
            if owner != client_id:
                return _error("invalid_grant", "unknown refresh token")
            if bound is not None and jkt != bound:
                # RFC 9449 §5: a public client's refresh token is bound to its DPoP key.
                return _error("invalid_grant", "the refresh token is bound to another DPoP key")
            del self._refresh[given]
            # RFC 6749 §6: an omitted scope is the scope granted before.
            scope = form.get("scope") or granted
            return self._issue(client_id, scope, refresh=True, jkt=jkt, aud=form.get("resource"))
        if grant == "client_credentials":
            scope = form.get("scope", "")
            return self._issue(client_id, scope, refresh=False, jkt=jkt, aud=form.get("resource"))
        return _error("unsupported_grant_type", f"grant {grant!r} is not supported")

    def _issue(
        self,
        client_id: str,
        scope: str,
        *,
        refresh: bool,
        jkt: str | None = None,
        aud: str | None = None,
    ) -> Exchange:
        serial = next(self._serial)
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": f"user-{client_id}",
            "aud": aud or self.issuer,
            "client_id": client_id,
            "scope": scope,
            "iat": int(self.now),
            "exp": int(self.now + self.lifetime),
            "jti": f"at-{serial}",
        }
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        token = f"access-{serial}"
        if self.signing_key is not None:
            import jwt

            key = self.signing_key
            headers = {"kid": "k1", "typ": "at+jwt"}
            token = jwt.encode(claims, key.private_key, algorithm=key.algorithm, headers=headers)
        self.tokens[token] = AccessToken(
            token,
            frozenset(scope.split()),
            client_id,
            subject=claims["sub"],
            expires_at=self.now + self.lifetime,
            claims=claims,
            jkt=jkt,
        )
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": int(self.lifetime),
        }
        if scope:
            answer["scope"] = scope
        if refresh:
            refresh_token = f"refresh-{next(self._serial)}"
            self._refresh[refresh_token] = (client_id, scope, jkt)
            answer["refresh_token"] = refresh_token
        return _json_answer(200, answer)

    def register_confidential(self, client_id: str, secret: str) -> None:
        """A pre-registered confidential client (``client_secret_basic``)."""
        self.clients[client_id] = secret
