"""OAuth 2.1 authorization for MCP over HTTP, sans I/O.

The client side is :class:`OAuthClient`, a machine that says which HTTP request to
make next and consumes the answers; the server side is :class:`ResourceServer`, which
judges a request's token and writes the 401/403 answer.  JWTs (client assertions,
DPoP proofs) are signed with PyJWT, imported only when one is needed.
"""

from typing import TYPE_CHECKING

from .._util import lazy_names

if TYPE_CHECKING:
    from ._challenge import Challenge, format_challenge, parse_challenges
    from ._client import TRANSITIONS, Decision, FlowState, OAuthClient
    from ._crypto import DPoPKey, client_assertion, dpop_proof, jwk_thumbprint
    from ._discovery import as_metadata_urls, prm_urls, resource_allowed
    from ._dpop_check import DPoPChecker
    from ._jwt_verifier import JWTVerifier, access_token_from_claims
    from ._pkce import code_challenge, random_string
    from ._router import Credentials, ProtectedRouter
    from ._server import (
        AccessToken,
        AuthRefusal,
        ResourceServer,
        StaticTokenVerifier,
        TokenVerifier,
    )
    from ._types import (
        AuthorizationError,
        AuthorizationFailed,
        Authorized,
        ClientInfo,
        Grant,
        HTTPCall,
        HTTPReply,
        OAuthConfig,
        OpenBrowser,
        TokenSet,
    )

# Each name is imported from its module when first used: the client's and the
# server's halves stay unloaded until a program uses them (import time).
lazy_names(
    __name__,
    {
        "._challenge": (
            "Challenge",
            "format_challenge",
            "parse_challenges",
        ),
        "._client": (
            "Decision",
            "FlowState",
            "OAuthClient",
            "TRANSITIONS",
        ),
        "._crypto": (
            "DPoPKey",
            "client_assertion",
            "dpop_proof",
            "jwk_thumbprint",
        ),
        "._discovery": (
            "as_metadata_urls",
            "prm_urls",
            "resource_allowed",
        ),
        "._dpop_check": ("DPoPChecker",),
        "._jwt_verifier": (
            "JWTVerifier",
            "access_token_from_claims",
        ),
        "._pkce": (
            "code_challenge",
            "random_string",
        ),
        "._router": (
            "Credentials",
            "ProtectedRouter",
        ),
        "._server": (
            "AccessToken",
            "AuthRefusal",
            "ResourceServer",
            "StaticTokenVerifier",
            "TokenVerifier",
        ),
        "._types": (
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
        ),
    },
)


__all__ = [
    "AccessToken",
    "AuthRefusal",
    "AuthorizationError",
    "AuthorizationFailed",
    "Authorized",
    "Challenge",
    "ClientInfo",
    "Credentials",
    "DPoPChecker",
    "DPoPKey",
    "Decision",
    "FlowState",
    "Grant",
    "HTTPCall",
    "HTTPReply",
    "JWTVerifier",
    "OAuthClient",
    "OAuthConfig",
    "OpenBrowser",
    "ProtectedRouter",
    "ResourceServer",
    "StaticTokenVerifier",
    "TRANSITIONS",
    "TokenSet",
    "TokenVerifier",
    "access_token_from_claims",
    "as_metadata_urls",
    "client_assertion",
    "code_challenge",
    "dpop_proof",
    "format_challenge",
    "jwk_thumbprint",
    "parse_challenges",
    "prm_urls",
    "random_string",
    "resource_allowed",
]
