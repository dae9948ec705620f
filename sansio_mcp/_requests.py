"""Request tracking for a session: our requests until they end, the peer's
until we answer them.

A :class:`RequestTracker` is owned by its session: request ids, the chain of
wire requests a stateless request may travel as, progress tokens, deadlines, a
bounded memory of cancelled ids so that late answers are dropped, not
reported, and the events that say how each request ended.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Container
from typing import Any

import attrs

from ._errors import (
    ConnectionClosedError,
    ErrorCode,
    LocalProtocolError,
    MCPError,
    OversizedMessage,
    RemoteProtocolError,
)
from ._events import (
    CancelRequested,
    Event,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)
from ._jsonrpc import RequestId
from ._versions import REVISIONS, Revision

__all__ = [
    "IdMemory",
    "OutgoingRequest",
    "RequestTracker",
    "id_in_use",
    "progress_token_in",
    "progress_token_of",
    "with_progress_token",
]

# How many cancelled request ids we remember to drop their late responses.
_CANCELLED_MEMORY = 1024


@attrs.define
class OutgoingRequest:
    method: str
    deadline: float | None
    progress_token: str | int | None
    #: The id events report: the first wire id of an MRTR or version-retry chain.
    origin: RequestId = 0
    #: Stateless requests keep their params for retries.
    params: dict[str, Any] | None = None
    rounds: int = 1
    modern: bool = False
    #: The stateless revision a stateless request went out at (for -32022 retries).
    version: str | None = None
    #: The timeout it was sent with, so a redo can be given the same time.
    timeout: float | None = None


def id_in_use(request_id: RequestId) -> MCPError:
    """The refusal of a request whose id an unanswered one of the peer's holds."""
    return MCPError(
        ErrorCode.INVALID_REQUEST,
        f"request id {request_id!r} is already in use by an unanswered request",
    )


def progress_token_of(params: dict[str, Any]) -> str | int | None:
    """The progress token a request's ``_meta`` asks for, if a valid one."""
    meta = params.get("_meta")
    return progress_token_in(meta) if isinstance(meta, dict) else None


def progress_token_in(meta: dict[str, Any]) -> str | int | None:
    """:func:`progress_token_of` a request whose ``params._meta`` is ``meta``."""
    token = meta.get("progressToken")
    if isinstance(token, (str, int)) and not isinstance(token, bool):
        return token
    return None


def with_progress_token(
    params: dict[str, Any] | None, token: str | int | None
) -> dict[str, Any] | None:
    """A copy of ``params`` whose ``_meta`` carries ``token`` (when there is one)."""
    wire_params = dict(params) if params is not None else None
    if token is not None:
        wire_params = wire_params or {}
        meta = dict(wire_params.get("_meta") or {})
        meta["progressToken"] = token
        wire_params["_meta"] = meta
    return wire_params


_ABSENT = object()


class IdMemory(OrderedDict[RequestId, None]):
    """A bounded set of request ids: the oldest is forgotten first.  A dict, so that
    ``in`` (asked of every request the peer sends) is the dict's own."""

    def __init__(self, size: int = _CANCELLED_MEMORY) -> None:
        super().__init__()
        self._size = size

    def add(self, request_id: RequestId) -> None:
        self[request_id] = None
        while len(self) > self._size:
            self.popitem(last=False)

    def discard(self, request_id: RequestId) -> bool:
        """Forget ``request_id``; whether it was remembered."""
        return self.pop(request_id, _ABSENT) is not _ABSENT


class NoEntries(dict[Any, Any]):
    """An empty map shared by every owner until it first records something (one map
    spared per owner: a session is made per stateless request).  Read as any empty
    dict; writing to it raises, so that a missed write site cannot share an entry
    between sessions (each owner replaces it with a dict of its own first)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a shared empty map is read-only: make one of your own first")

    __setitem__ = setdefault = update = __ior__ = _refuse


#: The one :class:`NoEntries`.
NO_ENTRIES: dict[Any, Any] = NoEntries()


class RequestTracker:
    """Both directions' open requests.

    Ours are known by their *origin*, the id :meth:`Session.send_request`
    returned, and on the wire by the id of the request currently carrying
    them (MRTR rounds and version retries get new wire ids).  How a request
    ends, and the progress reported on it, go to the session's ``events``.
    """

    # The ids of cancelled requests, ours and the peer's, kept from the first
    # cancellation on (a session made for one stateless request seldom sees one).
    _cancelled_outgoing: IdMemory | None = None

    def __init__(self, events: deque[Event]) -> None:
        self._events = events
        self._next_id = 0
        # Our requests' maps: the shared NO_ENTRIES until the first is recorded (most
        # sessions, one per stateless request, ask their peer nothing); written only by
        # ask_progress, add and pause, which make the tracker's own first.  Set here,
        # not as class defaults: an attribute of the instance is read faster.
        # wire id -> our request it carries
        self._outgoing: dict[RequestId, OutgoingRequest] = NO_ENTRIES
        # origin id -> wire id of the request currently carrying it
        self._wire_of: dict[RequestId, RequestId] = NO_ENTRIES
        # origin id -> chain waiting for the application's input (MRTR)
        self._paused: dict[RequestId, OutgoingRequest] = NO_ENTRIES
        self._progress_tokens: dict[str | int, RequestId] = NO_ENTRIES
        #: The peer's requests we have not answered yet: the event each came as (one
        #: record per request, the application's and ours).
        self.incoming: dict[RequestId, RequestReceived] = {}
        # Read for every request the peer sends and every answer (an instance's own
        # attribute, unlike a class default, is read by a specialized instruction):
        #: The ids of the peer's requests it cancelled (None until the first): a new
        #: request may not reuse one (see :meth:`id_conflict`).
        self.cancelled_incoming: IdMemory | None = None
        #: The last progress reported on each of the peer's open requests that has had
        #: some (made by the first report: most requests never see one).
        self.last_progress: dict[RequestId, float] | None = None

    # Ours ------------------------------------------------------------------------

    @property
    def pending(self) -> frozenset[RequestId]:
        """Origins of our requests that have not ended yet."""
        return frozenset(self._wire_of) | frozenset(self._paused)

    def wire_ids(self) -> frozenset[RequestId]:
        """Ids of our requests on the wire now."""
        return frozenset(self._outgoing)

    def next_id(self, *, take: bool = True) -> RequestId:
        """The id of our next request; ``take=False`` only looks at it."""
        request_id = self._next_id
        if take:
            self._next_id += 1
        return request_id

    def start_ids_at(self, first: int) -> None:
        """Number our next requests from ``first`` on."""
        self._next_id = first

    def ask_progress(self, origin: RequestId) -> RequestId:
        """Route progress for ``origin`` to it; the token (its id) to send."""
        if self._progress_tokens is NO_ENTRIES:
            self._progress_tokens = {}
        self._progress_tokens[origin] = origin
        return origin

    def add(self, wire_id: RequestId, request: OutgoingRequest) -> None:
        """Track ``request``, now carried on the wire by ``wire_id``."""
        if self._outgoing is NO_ENTRIES:
            self._outgoing, self._wire_of = {}, {}
        self._outgoing[wire_id] = request
        self._wire_of[request.origin] = wire_id

    def wire_id(self, origin: RequestId) -> RequestId | None:
        return self._wire_of.get(origin)

    def on_wire(self, wire_id: RequestId) -> OutgoingRequest | None:
        return self._outgoing.get(wire_id)

    def take(self, wire_id: RequestId) -> OutgoingRequest | None:
        """Stop tracking the request ``wire_id`` carries (its answer came); its
        progress token stays, for a retry that continues the chain."""
        request = self._outgoing.pop(wire_id, None)
        if request is not None:
            self._wire_of.pop(request.origin, None)
        return request

    def answered(self, wire_id: RequestId | None, error: MCPError | None) -> OutgoingRequest | None:
        """The request the peer's answer (result, or ``error``) to ``wire_id`` ends,
        no longer tracked; None when it ends none (reported if it should have)."""
        if wire_id is None:
            assert error is not None
            violation = RemoteProtocolError(
                f"the peer reported an error about a message it could not identify: "
                f"{error.message} (code {error.code})",
                code=error.code,
                data=error.data,
            )
            self._events.append(ProtocolViolation(violation))
            return None
        request = self.take(wire_id)
        cancelled = self._cancelled_outgoing
        if request is None and cancelled is not None and cancelled.discard(wire_id):
            return None  # a late answer to a request we cancelled: dropped, as the spec says
        if request is None:
            self._events.append(
                ProtocolViolation(
                    RemoteProtocolError(
                        f"response to unknown request id {wire_id!r}", request_id=wire_id
                    )
                )
            )
        return request

    def end(self, origin: RequestId, *, drop_late_answer: bool = False) -> OutgoingRequest | None:
        """Stop tracking one of our requests, paused or on the wire, and its
        progress; with ``drop_late_answer`` a late answer to it is dropped."""
        request = self._paused.pop(origin, None)
        if request is None:
            wire_id = self._wire_of.pop(origin, None)
            if wire_id is None:
                return None
            request = self._outgoing.pop(wire_id)
            if drop_late_answer:
                if self._cancelled_outgoing is None:
                    self._cancelled_outgoing = IdMemory()
                self._cancelled_outgoing.add(wire_id)
        self.forget_progress(request)
        return request

    def forget_progress(self, request: OutgoingRequest) -> None:
        if request.progress_token is not None:
            self._progress_tokens.pop(request.progress_token, None)

    def complete(
        self, request: OutgoingRequest, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        """Report the end of a request no longer tracked: its result or its error."""
        if error is not None:
            self.fail(request, error)
            return
        assert result is not None
        self.forget_progress(request)
        self._events.append(ResponseReceived(request.origin, request.method, result))

    def fail(self, request: OutgoingRequest, error: MCPError) -> None:
        """Report that a request no longer tracked failed."""
        self.forget_progress(request)
        self._events.append(RequestFailed(request.origin, request.method, error))

    def fail_malformed(self, error: RemoteProtocolError) -> None:
        """End the request a malformed answer from the peer was meant for."""
        # A malformed answer to a pending request must end that request, not hang it.
        if error.answer or error.request_id is None:
            return
        request = self.take(error.request_id)
        if request is not None:
            what = "refused" if isinstance(error, OversizedMessage) else "malformed"
            message = f"the answer to {request.method} was {what}: {error.message}"
            self.fail(request, MCPError(ErrorCode.INVALID_REQUEST, message))

    def on_progress(self, params: dict[str, Any]) -> None:
        """The peer reported progress on one of our requests."""
        token = params["progressToken"]
        request_id = self._progress_tokens.get(token)
        if request_id is None:
            return  # late progress for a finished request
        total = params.get("total")
        message = params.get("message")
        self._events.append(
            ProgressReceived(
                request_id,
                token,
                params["progress"],
                total if isinstance(total, (int, float)) else None,
                message if isinstance(message, str) else None,
            )
        )

    def pause(self, request: OutgoingRequest) -> None:
        """Hold a request until the application provides the input it needs (MRTR)."""
        if self._paused is NO_ENTRIES:
            self._paused = {}
        self._paused[request.origin] = request

    def is_paused(self, origin: RequestId) -> bool:
        return origin in self._paused

    def resume(self, origin: RequestId) -> OutgoingRequest | None:
        """Take a paused request back, to send its next round."""
        return self._paused.pop(origin, None)

    def _open(self) -> tuple[OutgoingRequest, ...]:
        """Our requests on the wire, then those paused for input."""
        return (*self._outgoing.values(), *self._paused.values())

    def next_deadline(self) -> float | None:
        """The earliest deadline of our requests, or None if nothing is armed."""
        if not self._outgoing and not self._paused:
            return None  # most sessions (one per stateless request) ask nothing
        return min((r.deadline for r in self._open() if r.deadline is not None), default=None)

    def expired(self, now: float) -> list[OutgoingRequest]:
        """Our requests whose deadline has passed."""
        return [r for r in self._open() if r.deadline is not None and r.deadline <= now]

    def close(self, reason: str | None = None) -> None:
        """Forget every open request (the peer's too); ours fail (saying ``reason``,
        and with ``data={"gaveUp": True}``: the session ended the connection itself)."""
        message = reason or "the connection closed before a response"
        data = {"gaveUp": True} if reason else None
        for request in self._open():
            self.fail(request, ConnectionClosedError(message=message, data=data))
        self._outgoing.clear()
        self._wire_of.clear()
        self._paused.clear()
        self._progress_tokens.clear()
        self.incoming.clear()
        self.last_progress = None

    # The peer's --------------------------------------------------------------------

    def id_conflict(
        self, request_id: RequestId, open_elsewhere: Container[RequestId] = ()
    ) -> MCPError | None:
        """Why the peer may not use ``request_id`` for a new request; None if it may.
        ``open_elsewhere``: ids of the peer's that are still open but not requests
        being served (a server's open subscriptions/listen)."""
        # An id must not be reused in a session; one the peer cancelled may still
        # get its handler's late answer, which must not answer the newcomer.
        if request_id in self.incoming or request_id in open_elsewhere:
            return id_in_use(request_id)
        cancelled = self.cancelled_incoming
        if cancelled is not None and request_id in cancelled:
            return MCPError(
                ErrorCode.INVALID_REQUEST,
                f"request id {request_id!r} was used by a request cancelled before",
            )
        return None

    def on_cancelled(self, params: dict[str, Any]) -> RequestId | None:
        """The peer cancelled a request of its (``notifications/cancelled``): our
        late answer will be dropped.  The id, unless it is one to ignore."""
        request_id: RequestId | None = params.get("requestId")
        if request_id is None or request_id not in self.incoming:
            return None  # unknown or finished: the spec says ignore it
        if self.incoming[request_id].method == "initialize":
            return None
        del self.incoming[request_id]
        if self.last_progress is not None:
            self.last_progress.pop(request_id, None)
        if self.cancelled_incoming is None:
            self.cancelled_incoming = IdMemory()
        self.cancelled_incoming.add(request_id)
        reason = params.get("reason")
        self._events.append(
            CancelRequested(request_id, reason if isinstance(reason, str) else None)
        )
        return request_id

    def progress_params(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None,
        message: str | None,
        revision: Revision | None,
    ) -> dict[str, Any] | None:
        """The params of progress on the peer's request; None when it asked for none.

        Progress must increase, as the spec requires.  ``revision`` is the
        session's, for a request that came in through the handshake.
        """
        incoming = self.incoming.get(request_id)
        if incoming is None:
            raise LocalProtocolError(f"no open request with id {request_id!r}")
        if incoming.progress_token is None:
            return None
        last = self.last_progress.get(request_id) if self.last_progress is not None else None
        if last is not None and progress <= last:
            raise LocalProtocolError(f"progress must increase (was {last}, now {progress})")
        params: dict[str, Any] = {"progressToken": incoming.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if incoming.meta:
            revision = REVISIONS[incoming.meta.protocol_version]
        if message is not None and revision is not None and revision.name >= "2025-03-26":
            params["message"] = message
        return params

    def progress_sent(self, request_id: RequestId, progress: float) -> None:
        """Progress ``progress`` went out on the peer's request ``request_id`` (the
        next must be more: see :meth:`progress_params`)."""
        if self.last_progress is None:
            self.last_progress = {}
        self.last_progress[request_id] = progress

    def answer(self, request_id: RequestId) -> RequestReceived | None:
        """Close the peer's request for our answer; None when the peer cancelled it
        (the answer is dropped, as the spec requires)."""
        request = self.incoming.pop(request_id, None)
        if request is None:
            cancelled = self.cancelled_incoming
            if cancelled is not None and cancelled.discard(request_id):
                return None
            raise LocalProtocolError(f"no open request with id {request_id!r}")
        if self.last_progress is not None:
            self.last_progress.pop(request_id, None)
        return request
