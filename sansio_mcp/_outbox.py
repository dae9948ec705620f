"""What a session has queued to send, and the answers a batch collects."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

import attrs

from . import _json
from ._errors import ErrorCode, MCPError
from ._jsonrpc import JSONRPCRequest, RequestId

__all__ = ["Batch", "Outbox"]


@attrs.define
class Batch:
    """The requests of one batch from the peer that still await our answer,
    and the answers so far."""

    pending: set[RequestId] = attrs.Factory(set)
    responses: list[dict[str, Any]] = attrs.Factory(list)

    def refusal(
        self, request: JSONRPCRequest, open_requests: Container[RequestId]
    ) -> MCPError | None:
        """Why ``request`` may not be served as part of this batch; None if it may."""
        if request.method == "initialize":
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize must not be part of a batch")
        if request.id in self.pending or request.id in open_requests:
            # Refused here: routed through Outbox.answer, the error would
            # answer (and unhook) the batch of the request that owns the id.
            return MCPError(
                ErrorCode.INVALID_REQUEST,
                f"request id {request.id!r} is already in use by an unanswered request",
            )
        return None


class Outbox:
    """Messages queued to send, each with its route: the id of the peer request
    it belongs to, or None.  The answers to a batch's requests wait until the
    whole batch is answered, and leave together as one batch."""

    def __init__(self) -> None:
        self._queue: list[tuple[Any, RequestId | None]] = []
        self._batch_of: dict[RequestId, Batch] = {}

    def append(self, obj: Any, route: RequestId | None = None) -> None:
        """Queue ``obj`` as it is (not into a batch)."""
        self._queue.append((obj, route))

    def answer(self, request_id: RequestId | None, obj: dict[str, Any]) -> None:
        """Queue the answer to a peer's request (with its batch, if it came in one)."""
        batch = self._batch_of.pop(request_id, None) if request_id is not None else None
        if batch is None:
            self._queue.append((obj, request_id))
            return
        batch.pending.discard(request_id)
        batch.responses.append(obj)
        self.flush(batch)

    def expect(self, batch: Batch, request_id: RequestId) -> None:
        """``request_id`` came in ``batch``: its answer goes out with the batch."""
        batch.pending.add(request_id)
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
            self._queue.append((batch.responses, None))
            batch.responses = []

    def take(self) -> list[tuple[Any, RequestId | None]]:
        """Take the queued messages with their routes."""
        out, self._queue = self._queue, []
        return out

    def take_data(self) -> bytes:
        """Take the queued messages as NDJSON bytes."""
        if not self._queue:
            return b""
        out, self._queue = self._queue, []
        encode = _json.encode
        if len(out) == 1:
            return encode(out[0][0]) + b"\n"
        return b"".join([encode(obj) + b"\n" for obj, _ in out])
