"""Long-running tools as tasks (the tasks extension, 2026-07-28).

``long_job(seconds, steps)`` may run as a task; ``approve_job(job)`` runs only as one
and asks for approval inside the task.  Run it as a demo (a server and clients over
Streamable HTTP on asyncio, in one process):

    python examples/tasks_server.py

or serve it on stdio for the command line, which follows a task and prints its status
changes on stderr:

    sansio-mcp call long_job --args '{"seconds": 1, "steps": 2}' \
        -- python examples/tasks_server.py --serve
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sansio_mcp import MCPError
from sansio_mcp.runtime import Server
from sansio_mcp_apps.example_server import add_task_tools


def build_server() -> Server:
    server = Server("tasks-example", "1.0.0", task_poll_interval_ms=100)
    # The bundled example server's two task tools, with longer jobs allowed.
    add_task_tools(server, max_seconds=600)
    return server


async def demo() -> None:
    from asyncio_adapters import ClientHandlers
    from asyncio_adapters.http_client import open_http_client
    from asyncio_adapters.http_server import serve_http

    started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(serve_http(build_server(), port=0, started=started))
    url = f"http://127.0.0.1:{await started}/mcp"
    handlers = ClientHandlers(
        elicitation=lambda params: {"action": "accept", "content": {"approve": True}},
        tasks=True,
    )
    try:
        async with open_http_client(url, handlers=handlers, mode="modern") as client:
            statuses: list[str] = []
            result = await client.call_tool(
                "long_job",
                {"seconds": 0.3, "steps": 3},
                on_status=lambda task: statuses.append(task["status"]),
            )
            print(result["content"][0]["text"], "| last status:", statuses[-1])
            handle = await client.call_tool("approve_job", {"job": "deploy"}, task=True)
            print("approve_job is a task:", bool(handle.task_id))
            print((await handle.result())["content"][0]["text"])
        async with open_http_client(url, mode="modern") as plain:
            quick = await plain.call_tool("long_job", {"seconds": 0, "steps": 1})
            print("without the extension:", quick["content"][0]["text"])
            try:
                await plain.call_tool("approve_job", {"job": "deploy"})
            except MCPError as error:
                print("approve_job without the extension:", error.code)
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


def main() -> None:
    if "--serve" in sys.argv[1:]:
        import trio

        from trio_adapters import serve_stdio

        trio.run(serve_stdio, build_server())
        return
    asyncio.run(demo())


if __name__ == "__main__":
    main()
