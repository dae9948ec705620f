"""What the authorization machine takes and gives: its configuration, the tokens and
client registrations it keeps, the steps it asks for, and its error."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from .._errors import MCPError

__all__ = [
    "AuthorizationError",
    "AuthorizationFailed",
    "Authorized",
    "ClientInfo",
    "Grant",
    "HTTPCall",
    "HTTPReply",
    "OAuthConfig",
    "OpenBrowser",
    "TokenSet",
]


class AuthorizationError(MCPError, local=True):
    """Authorization failed: ``data`` holds the OAuth ``error`` code when a server gave
    one, and the HTTP ``status`` when a response was refused."""

    code = -32001


class Grant(enum.Enum):
    """How the client gets its access token."""

    #: A user approves in a browser (OAuth 2.1 §4.1, with PKCE S256).
    AUTHORIZATION_CODE = "authorization_code"
    #: The client acts for itself (OAuth 2.1 §4.2, SEP-1046).
    CLIENT_CREDENTIALS = "client_credentials"
    #: A JWT the client holds is the grant (RFC 7523 §2.1; workload identity, SEP-1933).
    JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    #: An identity provider's ID token is exchanged (RFC 8693) for an ID-JAG, which is
    #: then a JWT bearer grant (enterprise-managed authorization, SEP-990).
    TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@attrs.frozen
class ClientInfo:
    """A client's registration with one authorization server (``issuer``; None: any)."""

    client_id: str
    client_secret: str | None = None
    #: ``token_endpoint_auth_method``; None: chosen from the server's metadata.
    auth_method: str | None = None
    issuer: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientInfo:
        return cls(
            **{k: data.get(k) for k in ("client_secret", "auth_method", "issuer")},
            client_id=str(data["client_id"]),
        )


@attrs.frozen
class TokenSet:
    """An access token and what came with it; ``expires_at`` is on the caller's clock."""

    access_token: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    issuer: str | None = None

    def expired(self, now: float, leeway: float = 30.0) -> bool:
        return self.expires_at is not None and now >= self.expires_at - leeway

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TokenSet:
        fields = ("token_type", "expires_at", "refresh_token", "scope", "issuer")
        return cls(
            access_token=str(data["access_token"]),
            **{k: data[k] for k in fields if data.get(k) is not None},
        )


def _cimd_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        credentials = parts.username is not None or parts.password is not None
    except ValueError:
        return "it is not a URL"
    segments = parts.path.split("/")
    if parts.scheme != "https":
        return "it is not https"
    if not parts.hostname:
        return "it has no host"
    if parts.path in ("", "/"):
        return "it has no path"
    if "." in segments or ".." in segments:
        return "it has a . or .. path segment"
    if "#" in url:
        return "it has a fragment"
    if credentials:
        return "it has a user name or password"
    return None


def _client_id_url(_config: object, _field: object, url: str | None) -> None:
    """A Client ID Metadata Document URL must be ``https`` with a path (the CIMD
    draft §3): anything else is refused when the configuration is made."""
    problem = None if url is None else _cimd_problem(url)
    if problem is not None:
        raise ValueError(f"client_metadata_url {url!r} cannot be a client_id: {problem}")


@attrs.frozen
class OAuthConfig:
    """How a client authorizes with the servers it meets.

    * ``grant``: the flow (:class:`Grant`).
    * ``client``: a pre-registered client; without one the client uses its Client ID
      Metadata Document (``client_metadata_url``) where the server supports it, else
      dynamic registration (RFC 7591).
    * ``scope``: a fixed scope; None chooses it (the challenge's, else the resource's
      ``scopes_supported``, plus ``offline_access`` when ``offline_access`` is set and
      the server offers it).
    * ``private_key`` (PEM) and ``signing_algorithm``: ``private_key_jwt`` client
      authentication.
    * ``assertion``: the JWT of :attr:`Grant.JWT_BEARER`; ``id_token``,
      ``idp_token_endpoint`` and ``idp_client_id``: :attr:`Grant.TOKEN_EXCHANGE`.
    * ``dpop``: bind tokens to a key (RFC 9449); None: when the server offers ES256.
    * ``max_authorizations``: flows in a row without a request getting through before
      the client gives up (a server that keeps refusing cannot loop it forever).
    """

    grant: Grant = Grant.AUTHORIZATION_CODE
    client_name: str = "sansio-mcp"
    redirect_uri: str = "http://127.0.0.1:33418/callback"
    client: ClientInfo | None = None
    client_metadata_url: str | None = attrs.field(default=None, validator=_client_id_url)
    scope: str | None = None
    offline_access: bool = True
    private_key: str | None = None
    signing_algorithm: str = "ES256"
    assertion: str | None = None
    id_token: str | None = None
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    dpop: bool | None = None
    max_authorizations: int = 3
    application_type: str = "native"


@attrs.frozen
class HTTPCall:
    """A request the machine wants made; feed its answer to ``receive_reply``."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None


@attrs.frozen
class HTTPReply:
    """An HTTP answer: status, headers (names lowercased) and the whole body."""

    status: int
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = b""


@attrs.frozen
class OpenBrowser:
    """Send the user to ``url``; feed the URL the browser came back to to
    ``receive_redirect``."""

    url: str


@attrs.frozen
class Authorized:
    """The flow is over: requests carry ``tokens`` from now on."""

    tokens: TokenSet


@attrs.frozen
class AuthorizationFailed:
    """The flow is over and failed."""

    error: AuthorizationError
