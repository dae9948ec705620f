"""A connection attempt that fails on asyncio leaves its task as it found it.

The client's task group cancels its owner when a host task fails; when the block then
ended with that failure (HTTP 405 to the first POST) rather than the cancellation, the
owner's cancel request was never withdrawn: the task's next task group ended in a
CancelledError nobody asked for, so a caller could not try again (the CLI's fallback
to the legacy HTTP+SSE transport died of it).
"""

from __future__ import annotations

import asyncio

import pytest

from asyncio_adapters.http_client import open_http_client
from sansio_mcp import HTTPStatusError

_405 = (
    b"HTTP/1.1 405 Method Not Allowed\r\ncontent-type: text/plain\r\n"
    b"content-length: 12\r\nconnection: close\r\n\r\nPOST refused"
)


async def _refuse_post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(_405)
    await writer.drain()
    writer.close()


@pytest.mark.parametrize("mode", ["auto", "legacy", "modern"])
def test_a_refused_connection_leaves_no_cancellation_behind(mode: str) -> None:
    async def main() -> None:
        listener = await asyncio.start_server(_refuse_post, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            for _ in range(2):  # and again: the second attempt fails the same way
                with pytest.raises(HTTPStatusError) as failed:
                    async with open_http_client(f"http://127.0.0.1:{port}/mcp", mode=mode):
                        pass
                assert failed.value.data["status"] == 405
                task = asyncio.current_task()
                assert task is not None and task.cancelling() == 0
                async with asyncio.TaskGroup() as group:
                    group.create_task(asyncio.sleep(0))
        finally:
            listener.close()
            await listener.wait_closed()

    asyncio.run(main())
