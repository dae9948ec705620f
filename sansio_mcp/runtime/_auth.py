"""Verifying a protected HTTP request's token, written once for every backend: the
verifier may be ``async`` (token introspection) or ask for HTTP calls (a JWK set to
fetch), which are made here with the library's HTTP client on the backend."""

from __future__ import annotations

from inspect import isawaitable
from typing import Any

from .._http import HTTPRequest
from ..auth import AccessToken, HTTPReply, ProtectedRouter, TokenVerifier
from ..auth._router import Credentials
from ._backend import Backend
from ._oauth import CALL_TIMEOUT, fetch

__all__ = ["Verdict", "verify_request", "verify_token"]

#: HTTP calls one verification may make (a key set fetched, fetched again).
MAX_VERIFIER_CALLS = 2


async def verify_token(
    verifier: TokenVerifier, token: str, now: float, backend: Backend, *, ssl_context: Any = None
) -> AccessToken | None:
    """``verifier``'s judgement of ``token``: the HTTP calls it asks for are made
    first (a failed one is reported to it as None), then ``verify`` is awaited if it
    is ``async``."""
    next_call = getattr(verifier, "next_call", None)
    for _ in range(MAX_VERIFIER_CALLS if next_call is not None else 0):
        call = next_call(token, now)  # type: ignore[misc]
        if call is None:
            break
        reply: HTTPReply | None = None
        try:
            async with backend.move_on_after(CALL_TIMEOUT):
                reply = await fetch(backend, call, ssl_context=ssl_context)
        except (OSError, ValueError):
            reply = None
        verifier.receive_reply(reply, now)  # type: ignore[attr-defined]
    result = verifier.verify(token, now)
    if isawaitable(result):
        result = await result
    return result  # type: ignore[no-any-return]


#: A protected request's presented credentials and the verifier's judgement of them.
Verdict = tuple[Credentials | None, AccessToken | None]


async def verify_request(router: object, request: HTTPRequest, backend: Backend) -> Verdict | None:
    """The verdict on ``request``'s token when ``router`` is protected (None when it is
    not), for ``route``: awaited here so that the router itself stays synchronous."""
    if not isinstance(router, ProtectedRouter):
        return None
    credentials = router.credentials(request)
    if credentials is None:
        return (None, None)
    verifier = router.resource_server.verifier
    token = await verify_token(verifier, credentials.token, backend.wall_clock(), backend)
    return (credentials, token)
