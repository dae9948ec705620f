"""OAuth 2.1 authorization for MCP over HTTP, sans I/O.

The client side is :class:`OAuthClient`, a machine that says which HTTP request to
make next and consumes the answers; the server side is :class:`ResourceServer`, which
judges a request's token and writes the 401/403 answer.  JWTs (client assertions,
DPoP proofs) are signed with PyJWT, imported only when one is needed.
"""

import importlib
from typing import TYPE_CHECKING, Any

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
_LAZY = {
    "AccessToken": "._server",
    "AuthRefusal": "._server",
    "AuthorizationError": "._types",
    "AuthorizationFailed": "._types",
    "Authorized": "._types",
    "Challenge": "._challenge",
    "ClientInfo": "._types",
    "Credentials": "._router",
    "DPoPChecker": "._dpop_check",
    "DPoPKey": "._crypto",
    "Decision": "._client",
    "FlowState": "._client",
    "Grant": "._types",
    "HTTPCall": "._types",
    "HTTPReply": "._types",
    "JWTVerifier": "._jwt_verifier",
    "OAuthClient": "._client",
    "OAuthConfig": "._types",
    "OpenBrowser": "._types",
    "ProtectedRouter": "._router",
    "ResourceServer": "._server",
    "StaticTokenVerifier": "._server",
    "TRANSITIONS": "._client",
    "TokenSet": "._types",
    "TokenVerifier": "._server",
    "access_token_from_claims": "._jwt_verifier",
    "as_metadata_urls": "._discovery",
    "client_assertion": "._crypto",
    "code_challenge": "._pkce",
    "dpop_proof": "._crypto",
    "format_challenge": "._challenge",
    "jwk_thumbprint": "._crypto",
    "parse_challenges": "._challenge",
    "prm_urls": "._discovery",
    "random_string": "._pkce",
    "resource_allowed": "._discovery",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


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
