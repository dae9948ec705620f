"""The gateway as an OAuth 2.1 resource server (the config's ``oauth``): each
endpoint (``/mcp``, each virtual MCP's ``/mcp/{id}``) is a protected resource of
its own, with its own metadata (RFC 9728) and audience; API keys still work
beside tokens.  The client's token is the gateway's alone: upstreams get only
their connector's own headers."""

from __future__ import annotations

from typing import Any

import attrs

from sansio_mcp import RemoteProtocolError, jsontext
from sansio_mcp.auth import (
    AccessToken,
    Credentials,
    HTTPCall,
    HTTPReply,
    JWTVerifier,
    ProtectedRouter,
    ResourceServer,
    as_metadata_urls,
)
from sansio_mcp.http import Exchange, HTTPRequest

from ._config import GatewayOAuth
from ._router import GatewayHTTPServer

__all__ = ["GatewayOAuthRouter", "GatewayTokenVerifier"]

#: Seconds before an issuer whose metadata could not be found anywhere is asked again.
DISCOVERY_RETRY = 30.0

_WELL_KNOWN = "/.well-known/oauth-protected-resource"


class GatewayTokenVerifier:
    """JWTs of ``oauth.issuer``: signature, issuer and time checked here (keys
    from ``oauth.jwks_uri``, else from the ``jwks_uri`` of the issuer's metadata,
    RFC 8414, fetched first); the audience by :class:`GatewayOAuthRouter`, which
    knows the endpoint a request went to."""

    def __init__(self, oauth: GatewayOAuth) -> None:
        self.oauth = oauth
        self.jwt: JWTVerifier | None = None
        if oauth.jwks_uri is not None:
            self.jwt = JWTVerifier(oauth.issuer, [], jwks_uri=oauth.jwks_uri)
        #: Where the issuer's metadata may be, tried in turn (RFC 8414, OpenID).
        self.discovery = as_metadata_urls(oauth.issuer)
        self._next = 0
        self._failed_at: float | None = None

    def next_call(self, token: str, now: float) -> HTTPCall | None:
        if self.jwt is not None:
            return self.jwt.next_call(token, now)
        if self._failed_at is not None and now - self._failed_at < DISCOVERY_RETRY:
            return None  # an issuer whose metadata is nowhere is not asked at every request
        return HTTPCall("GET", self.discovery[self._next], {"accept": "application/json"})

    def receive_reply(self, reply: HTTPReply | None, now: float) -> None:
        if self.jwt is not None:
            self.jwt.receive_reply(reply, now)
            return
        uri = self._jwks_uri(reply)
        if uri is not None:
            self.jwt = JWTVerifier(self.oauth.issuer, [], jwks_uri=uri)
            return
        self._next = (self._next + 1) % len(self.discovery)
        if self._next == 0:  # every place tried
            self._failed_at = now

    def _jwks_uri(self, reply: HTTPReply | None) -> str | None:
        """The ``jwks_uri`` of the issuer's own metadata in ``reply``, if it is that."""
        if reply is None or reply.status != 200:
            return None
        try:
            metadata = jsontext.loads(reply.body)
        except (ValueError, RemoteProtocolError):
            return None
        if not isinstance(metadata, dict) or metadata.get("issuer") != self.oauth.issuer:
            return None  # another issuer's metadata (RFC 8414 §3.3): its keys are not trusted
        uri = metadata.get("jwks_uri")
        return uri if isinstance(uri, str) and uri.startswith(("https://", "http://")) else None

    def verify(self, token: str, now: float) -> AccessToken | None:
        if self.jwt is None:
            return None
        # Any audience passes here: the router checks the token's against its endpoint.
        self.jwt.audience = _audiences(token)
        try:
            return self.jwt.verify(token, now)
        finally:
            self.jwt.audience = []


def _audiences(token: str) -> list[str]:
    """The ``aud`` a JWT claims, unverified (the signature is checked after)."""
    import jwt

    try:
        aud = jwt.decode(token, options={"verify_signature": False}).get("aud")
    except jwt.PyJWTError:
        return []
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


class GatewayOAuthRouter(ProtectedRouter):
    """``gateway`` (a :class:`GatewayHTTPServer`) behind ``oauth``'s tokens.

    Each endpoint is its own resource: ``/mcp``'s URL is ``oauth.audience`` (or
    the request's Host and ``/mcp``), a virtual MCP's that plus ``/{id}``; its
    metadata is at ``/.well-known/oauth-protected-resource`` plus its path, and a
    token must name it in ``aud``.  A request whose bearer token is one of the
    gateway's API keys is let through to ``gateway``'s own key check instead.
    A session's principal (:class:`Access`) is the token's subject."""

    def __init__(self, gateway: GatewayHTTPServer, oauth: GatewayOAuth) -> None:
        resource_server = ResourceServer(
            oauth.audience or "",
            [oauth.issuer],
            GatewayTokenVerifier(oauth),
            required_scopes=oauth.scopes,
            scopes_supported=oauth.scopes or None,
        )
        super().__init__(gateway, resource_server, endpoint=gateway.endpoint)
        self.gateway = gateway
        self.oauth = oauth

    def _endpoint_of(self, request: HTTPRequest) -> str:
        """The endpoint ``request`` is for (its metadata's, for a metadata request)."""
        path = request.target.split("?", 1)[0]
        if path.startswith(_WELL_KNOWN + "/"):
            path = path[len(_WELL_KNOWN) :]
        endpoint = self.endpoint
        if (
            path.startswith(endpoint + "/")
            and path[len(endpoint) + 1 :] in self.gateway.virtual_mcps
        ):
            return path
        return endpoint

    def resource_server_for(self, request: HTTPRequest) -> ResourceServer:
        endpoint = self._endpoint_of(request)
        base = self.oauth.audience
        if base is None:
            host = request.headers.get("host", "localhost")
            base = f"http://{host}{self.endpoint}"
        resource = base + endpoint[len(self.endpoint) :]
        return attrs.evolve(self.resource_server, resource=resource)

    def credentials(self, request: HTTPRequest) -> Credentials | None:
        if self._api_key(request):
            return None
        return super().credentials(request)

    def _api_key(self, request: HTTPRequest) -> bool:
        """Whether ``request`` carries an API key the gateway itself judges."""
        keys = self.gateway.api_keys or any(self.gateway.virtual_mcps.values())
        if not keys:
            return False
        found = self.gateway._principal(request, self._virtual(request))
        return isinstance(found, str) or (isinstance(found, Exchange) and found.status == 403)

    def _virtual(self, request: HTTPRequest) -> str | None:
        endpoint = self._endpoint_of(request)
        return endpoint[len(self.endpoint) + 1 :] or None

    def handle_verified(
        self,
        request: HTTPRequest,
        credentials: Credentials | None,
        token: Any,
        replayed: bool | None = None,
    ) -> Exchange:
        if credentials is None and self._api_key(request):
            return self.gateway.handle(request)
        if isinstance(token, AccessToken):
            audiences = _audiences(token.token)
            if self.resource_server_for(request).resource not in audiences:
                token = None  # a token for another resource: invalid here (RFC 8707)
        self.gateway.verified_principal = getattr(token, "subject", None) or (
            None if token is None else "oauth"
        )
        try:
            exchange = super().handle_verified(request, credentials, token, replayed)
        finally:
            self.gateway.verified_principal = None
        return exchange
