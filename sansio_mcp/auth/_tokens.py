"""The token endpoint's side of a flow, as pure functions: how a client authenticates
(RFC 6749 §2.3, RFC 7523 §2.2), what a form request looks like, and what a token
answer means."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from .. import _json
from ._crypto import client_assertion
from ._types import ClientInfo, HTTPCall, HTTPReply, TokenSet

__all__ = ["authenticate", "auth_method", "form_call", "json_object", "oauth_error", "token_set"]

_FORM = "application/x-www-form-urlencoded"
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def json_object(reply: HTTPReply) -> dict[str, Any] | None:
    """The answer's body as a JSON object, or None."""
    try:
        value = _json.loads(reply.body)
    except Exception:
        return None
    return value if isinstance(value, dict) else None


def form_call(url: str, form: Mapping[str, str], headers: Mapping[str, str]) -> HTTPCall:
    return HTTPCall(
        "POST",
        url,
        {"content-type": _FORM, "accept": "application/json", **headers},
        urlencode(form).encode("ascii"),
    )


def auth_method(client: ClientInfo, metadata: Mapping[str, Any], has_private_key: bool) -> str:
    """The client's ``token_endpoint_auth_method``: as registered, else the first the
    server supports of what the client can do (a key, a secret, nothing)."""
    if client.auth_method:
        return client.auth_method
    supported = metadata.get("token_endpoint_auth_methods_supported")
    supported = supported if isinstance(supported, list) else ["client_secret_basic"]
    wanted = ["private_key_jwt"] if has_private_key else []
    if client.client_secret:
        wanted += ["client_secret_basic", "client_secret_post"]
    wanted.append("none")
    return next((method for method in wanted if method in supported), wanted[0])


def authenticate(
    client: ClientInfo,
    method: str,
    form: dict[str, str],
    headers: dict[str, str],
    *,
    private_key: str | None,
    algorithm: str,
    audience: str,
    now: float,
    jti: Callable[[], str],
) -> None:
    """Add the client's authentication to a token request's ``form`` and ``headers``."""
    if method == "client_secret_basic" and client.client_secret is not None:
        # RFC 6749 §2.3.1: each part form-encoded before joining.
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif method == "client_secret_post" and client.client_secret is not None:
        form["client_id"] = client.client_id
        form["client_secret"] = client.client_secret
    elif method == "private_key_jwt" and private_key:
        form["client_id"] = client.client_id
        form["client_assertion_type"] = _ASSERTION_TYPE
        form["client_assertion"] = client_assertion(
            private_key, algorithm, client_id=client.client_id, audience=audience, now=now,
            jti=jti(),
        )  # fmt: skip
    else:
        form["client_id"] = client.client_id


def token_set(
    document: Mapping[str, Any],
    now: float,
    *,
    requested: list[str],
    issuer: str,
    previous_refresh: str | None,
) -> TokenSet | None:
    """The tokens of a successful answer, or None when it has no usable access token.
    A refresh answer without a refresh token keeps the previous one (RFC 6749 §6)."""
    token, token_type = document.get("access_token"), document.get("token_type")
    if not isinstance(token, str) or not token or not isinstance(token_type, str):
        return None
    expires_in = document.get("expires_in")
    refresh = document.get("refresh_token")
    scope = document.get("scope")
    return TokenSet(
        token,
        token_type,
        now + expires_in if isinstance(expires_in, (int, float)) else None,
        refresh if isinstance(refresh, str) else previous_refresh,
        scope if isinstance(scope, str) else (" ".join(requested) or None),
        issuer,
    )


def oauth_error(what: str, reply: HTTPReply, document: Mapping[str, Any] | None) -> str:
    """Why a server refused a request, from its OAuth error answer (RFC 6749 §5.2)."""
    error = document.get("error") if document else None
    description = document.get("error_description") if document else None
    detail = f"{error}: {description}" if error and description else (error or "")
    return f"the {what} was refused (HTTP {reply.status}{', ' + detail if detail else ''})"
