"""What a session has queued to send, and the answers a batch collects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import attrs

from . import _json
from ._errors import ErrorCode, LocalProtocolError, MCPError
from ._jsonrpc import JSONRPCRequest, RequestId
from ._requests import NO_ENTRIES, id_in_use

__all__ = ["Batch", "Outbox", "Outgoing", "encode_message"]


#: What ``_json.encode`` raises for a value that is not JSON.
_NOT_JSON = (ValueError, TypeError, OverflowError, RecursionError)


def encode_message(obj: Any) -> bytes:
    """``obj`` as JSON bytes; :class:`LocalProtocolError` when it is not JSON.

    Every message is encoded as it is queued, so one that cannot be (a NaN or an infinity,
    a value JSON has no type for) is refused where it was made, never when the queue is
    sent, where it would take the messages queued beside it down too.
    """
    try:
        return _json.encode(obj)
    except _NOT_JSON as exc:
        raise _not_json(exc) from None


def _not_json(exc: Exception) -> LocalProtocolError:
    return LocalProtocolError(f"the message cannot be sent as JSON: {exc}")


class Outgoing(NamedTuple):
    """One message to send: its JSON value, its bytes (encoded once, as it was
    queued: every transport frames these), and its route, the id of the peer
    request it belongs to (or None).

    A named tuple rather than an attrs class: one is made for every message sent.
    """

    message: Any
    data: bytes
    route: RequestId | None = None


# The answer to a request is queued through this, not ``Outgoing(...)``: the named
# tuple's own ``__new__`` is Python code, and costs twice as much (one per request).
_new_outgoing = tuple.__new__


@attrs.define
class Batch:
    """The requests of one batch from the peer that still wait for our answer,
    and the answers so far."""

    pending: set[RequestId] = attrs.Factory(set)
    responses: list[dict[str, Any]] = attrs.Factory(list)
    #: Each answer's JSON bytes, as it was encoded when it came.
    encoded: list[bytes] = attrs.Factory(list)

    def add(self, obj: dict[str, Any], data: bytes | None = None) -> None:
        """Add an answer (``data``: ``obj`` already encoded); :class:`LocalProtocolError`,
        with nothing added, if it cannot be sent as JSON."""
        self.encoded.append(encode_message(obj) if data is None else data)
        self.responses.append(obj)

    def refusal(self, request: JSONRPCRequest, id_conflict: MCPError | None) -> MCPError | None:
        """Why ``request`` may not be served as part of this batch; None if it may.
        ``id_conflict``: why the session refuses its id (see ``Session._id_conflict``)."""
        if request.method == "initialize":
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize must not be part of a batch")
        if request.id in self.pending:
            return id_in_use(request.id)
        # Refused here, in the batch: refused once dispatched, the error would go out
        # alone and the batch would wait for an answer that never comes.
        return id_conflict


class Outbox:
    """Messages queued to send, each with its route: the id of the peer request
    it belongs to, or None.  The answers to a batch's requests wait until the
    whole batch is answered, and leave together as one batch."""

    def __init__(self) -> None:
        self._queue: list[Outgoing] = []
        #: The batch each of the peer's requests came in, by its id: the shared empty
        #: NO_ENTRIES until the first batch (most sessions never see one).
        self._batch_of: dict[RequestId, Batch] = NO_ENTRIES
        #: Called with ("send", message) for each message as it is taken (see ``Session.tracer``).
        self.tracer: Callable[[str, Any], None] | None = None

    def append(self, obj: Any, route: RequestId | None = None, data: bytes | None = None) -> None:
        """Queue ``obj`` as it is (not into a batch); :class:`LocalProtocolError`, with
        nothing queued, if it cannot be sent as JSON.  ``data``: ``obj`` already
        encoded (by :func:`encode_message`)."""
        self._queue.append(Outgoing(obj, encode_message(obj) if data is None else data, route))

    def answer(self, request_id: RequestId | None, obj: dict[str, Any]) -> None:
        """Queue the answer to a peer's request (with its batch, if it came in one);
        :class:`LocalProtocolError`, with nothing queued, if it cannot be sent as JSON."""
        try:
            data = _json.encode(obj)  # encode_message, inline: one per request answered
        except _NOT_JSON as exc:
            raise _not_json(exc) from None
        # Most sessions never see a batch: their map stays empty.
        batch = (
            self._batch_of.pop(request_id, None)
            if self._batch_of and request_id is not None
            else None
        )
        if batch is None:
            self._queue.append(_new_outgoing(Outgoing, (obj, data, request_id)))
            return
        batch.pending.discard(request_id)
        batch.add(obj, data)
        self.flush(batch)

    def expect(self, batch: Batch, request_id: RequestId) -> None:
        """``request_id`` came in ``batch``: its answer goes out with the batch."""
        batch.pending.add(request_id)
        if self._batch_of is NO_ENTRIES:
            self._batch_of = {}
        self._batch_of[request_id] = batch

    def drop(self, request_id: RequestId) -> None:
        """The peer cancelled ``request_id``: its batch no longer waits for it."""
        batch = self._batch_of.pop(request_id, None)
        if batch is not None:
            batch.pending.discard(request_id)
            self.flush(batch)

    def flush(self, batch: Batch) -> None:
        """Queue ``batch``'s answers once the last is in."""
        if not batch.pending and batch.responses:
            # Each answer was encoded as it came: the batch is their JSON array.
            data = b"[" + b",".join(batch.encoded) + b"]"
            self._queue.append(Outgoing(batch.responses, data))
            batch.responses, batch.encoded = [], []

    def take(self) -> list[Outgoing]:
        """Take the queued messages, each with its bytes and route."""
        out, self._queue = self._queue, []
        if self.tracer is not None:
            self._trace(out)
        return out

    def take_data(self) -> bytes:
        """Take the queued messages as NDJSON bytes."""
        out = self._queue
        if not out:
            return b""
        if self.tracer is not None:
            return self._traced_data()
        # The queue emptied in place (it is handed to nobody here): a list fewer per message.
        data = out[0].data + b"\n" if len(out) == 1 else b"".join([m.data + b"\n" for m in out])
        out.clear()
        return data

    def _traced_data(self) -> bytes:
        # Taken before the tracer runs: what a tracer queues goes out with the next take,
        # and what one that raises was handed is not sent again.
        out, self._queue = self._queue, []
        self._trace(out)
        return b"".join([m.data + b"\n" for m in out])

    def _trace(self, out: list[Outgoing]) -> None:
        tracer = self.tracer
        assert tracer is not None
        for item in out:
            tracer("send", item.message)
