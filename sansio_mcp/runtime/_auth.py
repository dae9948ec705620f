"""Verifying a protected HTTP request's token, written once for every backend: the
verifier may be ``async`` (token introspection) or ask for HTTP calls (a JWK set to
fetch), which are made here with the library's HTTP client on the backend."""

from __future__ import annotations

import logging
from inspect import isawaitable
from typing import TYPE_CHECKING, Any

from .._errors import ProtocolError
from .._http import HTTPRequest
from ..auth._router import Credentials, ProtectedRouter
from ..auth._server import AccessToken, TokenVerifier
from ._backend import Backend
from ._primitives import Signal
from ._store_base import StoreUnavailable

if TYPE_CHECKING:
    from ..auth import HTTPReply
    from ._stores import Stores

__all__ = ["Verdict", "verify_request", "verify_token"]

_log = logging.getLogger("sansio_mcp.http")

#: HTTP calls one verification may make (a key set fetched, fetched again).
MAX_VERIFIER_CALLS = 2


async def verify_token(
    verifier: TokenVerifier, token: str, now: float, backend: Backend, *, ssl_context: Any = None
) -> AccessToken | None:
    """``verifier``'s judgement of ``token``: the HTTP calls it asks for are made
    first (a failed one is reported to it as None), then ``verify`` is awaited if it
    is ``async``.  While one request makes a verifier's call, the others wait for its
    answer rather than make the same call (a burst at startup fetches keys once)."""
    if getattr(verifier, "next_call", None) is not None:
        await _make_calls(verifier, token, now, backend, ssl_context)
    result = verifier.verify(token, now)
    if isawaitable(result):
        result = await result
    return result  # type: ignore[no-any-return]


#: The requests waiting for a verifier's call in flight, by ``id`` of the verifier
#: (an entry lives only while its call does, so the id cannot be reused meanwhile).
_in_flight: dict[int, list[Signal]] = {}


async def _make_calls(
    verifier: Any, token: str, now: float, backend: Backend, ssl_context: Any
) -> None:
    made = 0
    while made < MAX_VERIFIER_CALLS:
        call = verifier.next_call(token, now)
        if call is None:
            return
        waiting = _in_flight.get(id(verifier))
        if waiting is not None:
            signal = backend.new_signal()
            waiting.append(signal)
            await signal.wait()
            made += 1  # the call was made, for us too
            continue
        _in_flight[id(verifier)] = waiting = []
        # Here, not at the top: a server that verifies no JWTs never loads the OAuth client.
        from ._oauth import CALL_TIMEOUT, fetch

        try:
            reply: HTTPReply | None = None
            try:
                async with backend.move_on_after(CALL_TIMEOUT):
                    reply = await fetch(backend, call, ssl_context=ssl_context)
            except (OSError, ValueError, ProtocolError):  # unreachable, or not HTTP
                reply = None
            verifier.receive_reply(reply, now)
        finally:
            del _in_flight[id(verifier)]
            for signal in waiting:
                signal.set()
        made += 1


#: A protected request's presented credentials, the verifier's judgement of them, and
#: whether a replay cache shared by replicas saw its DPoP proof before (None: not asked).
Verdict = tuple[Credentials | None, AccessToken | None, bool | None]


async def verify_request(
    router: object, request: HTTPRequest, backend: Backend, stores: Stores | None = None
) -> Verdict | None:
    """The verdict on ``request``'s token when ``router`` is protected (None when it is
    not), for ``route``: awaited here so that the router itself stays synchronous.
    With ``stores``, a DPoP proof's ``jti`` is offered to their replay cache, so that
    a proof used at one replica is refused at every other; while that store is
    unavailable, the router's own checker remembers it (this replica alone), so that
    protected calls keep working."""
    if not isinstance(router, ProtectedRouter):
        return None
    credentials = router.credentials(request)
    if credentials is None:
        return (None, None, None)
    verifier = router.resource_server.verifier
    token = await verify_token(verifier, credentials.token, backend.wall_clock(), backend)
    replayed = None
    once = router.dpop_replay_key(request, credentials, token) if stores is not None else None
    if stores is not None and once is not None:
        try:
            replayed = not await stores.replay.first_use(*once)
        except StoreUnavailable as error:
            _log.warning("DPoP replay check on this replica only: %s", error)
    return (credentials, token, replayed)
