"""A message transport driving the declarative ``Server`` without an adapter.

The transport is two ``asyncio.Queue`` objects of JSON values (dicts), as a framework
that already decodes its messages (a message bus, a worker pool, an RPC layer) would
have. Nothing from ``asyncio_adapters`` is used: the server side is
``ServerSession`` + ``Server`` + ``answer_request``, and the client side a bare
``ClientSession``. It shows:

* ``receive_message(obj)`` in, ``messages_to_send()`` out: no bytes, no framing;
* ``answer_request(server, ctx)``: a plain handler is answered at once, an ``async``
  one comes back as an awaitable, run in a task of its own;
* a ``ContextHost`` giving handlers the primitives (``flush``, ``sleep``, the clock,
  signals, background tasks, requests to the client) on this transport;
* errors answered, never raised: an unknown tool is a -32602 error response;
* ``CancelRequested`` cancelling the handler's task, and ``close()`` at the end.

Run it: ``python examples/message_queue.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sansio_mcp import (
    NEED_DATA,
    CancelRequested,
    ClientSession,
    ErrorCode,
    MCPError,
    ProgressReceived,
    RequestFailed,
    RequestId,
    RequestReceived,
    ResponseReceived,
)
from sansio_mcp.runtime import Context, Server, answer_request

#: What travels: one JSON value per item; None marks the end of input.
Queue = asyncio.Queue[Any]

server = Server("queue-demo", "1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """A plain function: answered as soon as its request is read, with no task."""
    return a + b


@server.tool()
async def countdown(ctx: Context, start: int) -> str:
    """An async handler: runs in a task, reports progress as it goes."""
    for done in range(1, start + 1):
        await ctx.report_progress(done, start)
        await ctx.sleep(0.01)
    return "liftoff"


async def serve_queue(inbox: Queue, outbox: Queue) -> None:
    """Serve one client: read messages from ``inbox`` until None, answer into ``outbox``."""
    session = server.create_session()
    handlers: dict[RequestId, asyncio.Task[None]] = {}

    def ship() -> None:
        for message in session.messages_to_send():
            outbox.put_nowait(message)

    class QueueHost:
        """What a handler can do on this transport (a ``ContextHost``)."""

        async def request(
            self,
            method: str,
            params: dict[str, Any] | None = None,
            *,
            related_request: RequestId | None = None,
        ) -> dict[str, Any]:
            # This demo's client answers no requests; a real transport would send
            # the request with session.send_request and wait for its ResponseReceived.
            raise MCPError(ErrorCode.INTERNAL_ERROR, f"this transport cannot ask {method}")

        async def flush(self) -> None:
            ship()  # progress and logs go out as the handler makes them

        async def sleep(self, seconds: float) -> None:
            await asyncio.sleep(seconds)

        def now(self) -> float:
            return time.monotonic()

        def new_signal(self) -> asyncio.Event:
            return asyncio.Event()

        def start_cancellable(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Task[Any]:
            return asyncio.ensure_future(fn())

    host = QueueHost()

    async def answer_later(request_id: RequestId, pending: Any) -> None:
        try:
            await pending
        finally:
            handlers.pop(request_id, None)
            ship()

    while (message := await inbox.get()) is not None:
        session.receive_message(message)
        while (event := session.next_event()) is not NEED_DATA:
            if isinstance(event, RequestReceived):
                ctx = Context.for_request(event, session, now=time.time(), host=host)
                pending = answer_request(server, ctx)
                if pending is not None:  # an async handler: give it a task
                    task = asyncio.create_task(answer_later(event.request_id, pending))
                    handlers[event.request_id] = task
            elif isinstance(event, CancelRequested) and event.request_id in handlers:
                handlers[event.request_id].cancel()  # a cancelled request gets no answer
        ship()
    session.close()  # the end of input: nothing is owed to a client that left
    for task in list(handlers.values()):
        task.cancel()
    await asyncio.gather(*handlers.values(), return_exceptions=True)


class QueueClient:
    """A bare ClientSession over the two queues, waiting for one answer at a time."""

    def __init__(self, to_server: Queue, to_client: Queue, seen: list[str]) -> None:
        self.session = ClientSession()
        self.to_server = to_server
        self.to_client = to_client
        self.seen = seen

    async def wait_for(self, request_id: RequestId) -> ResponseReceived | RequestFailed:
        for message in self.session.messages_to_send():
            self.to_server.put_nowait(message)
        while True:
            self.session.receive_message(await self.to_client.get())
            while (event := self.session.next_event()) is not NEED_DATA:
                if isinstance(event, ProgressReceived):
                    self.seen.append(f"progress {event.progress:g}/{event.total:g}")
                elif (
                    isinstance(event, (ResponseReceived, RequestFailed))
                    and event.request_id == request_id
                ):
                    return event

    async def call(self, name: str, arguments: dict[str, Any]) -> ResponseReceived | RequestFailed:
        params = {"name": name, "arguments": arguments}
        return await self.wait_for(self.session.send_request("tools/call", params, progress=True))


async def main() -> list[str]:
    seen: list[str] = []
    to_server: Queue = asyncio.Queue()
    to_client: Queue = asyncio.Queue()
    serving = asyncio.create_task(serve_queue(to_server, to_client))

    client = QueueClient(to_server, to_client, seen)
    await client.wait_for(client.session.initialize())
    listed = await client.wait_for(client.session.send_request("tools/list"))
    assert isinstance(listed, ResponseReceived)
    seen.append(f"tools: {[tool['name'] for tool in listed.result['tools']]}")
    for name, arguments in [
        ("add", {"a": 40, "b": 2}),
        ("countdown", {"start": 3}),
        ("launch", {}),
    ]:
        outcome = await client.call(name, arguments)
        if isinstance(outcome, ResponseReceived):
            seen.append(f"{name}: {outcome.result['content'][0]['text']}")
        else:
            seen.append(f"{name} failed: {outcome.error.code} {outcome.error.message}")

    to_server.put_nowait(None)  # we are done: the server's input ends
    await serving
    return seen


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
