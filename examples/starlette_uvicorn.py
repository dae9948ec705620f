"""A framework that owns its event loop: MCP mounted in Starlette, served by uvicorn.

The application is a Starlette app with its own routes; ``MCPApp`` is one more ASGI
app mounted beside them, and its ``lifespan`` runs inside the application's. uvicorn
is started from this program's own asyncio loop (``uvicorn.Server.serve``, not
``uvicorn.run``) on 127.0.0.1 with a port the OS picks, so the same loop can also
run a client against it, then shut the server down and wait for it. It shows:

* ``MCPApp(server)`` mounted at ``/tools`` (the endpoint is ``/tools/mcp``) beside an
  ordinary route;
* the application's lifespan wrapping ``mcp.lifespan``: MCP's handler tasks start
  with the application and are cancelled and awaited when it stops;
* a clean shutdown: ``should_exit``, then awaiting ``serve()``: every connection,
  task and the listening socket are gone before the program ends.

Run it: ``python examples/starlette_uvicorn.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from asyncio_adapters.asgi import MCPApp
from asyncio_adapters.http_client import open_http_client
from sansio_mcp.runtime import Context, Server

server = Server("framework-demo", "1.0.0")


@server.tool()
async def forecast(ctx: Context, city: str) -> str:
    """The forecast for a city."""
    await ctx.report_progress(1, 1, "looked it up")
    return f"{city}: sunny"


def build_app(seen: list[str]) -> Starlette:
    mcp = MCPApp(server)

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.lifespan(app):  # MCP's handler tasks live as long as the app
            seen.append("app started")
            yield
        seen.append("app stopped")

    return Starlette(routes=[Route("/health", health), Mount("/tools", app=mcp)], lifespan=lifespan)


async def get(port: int, path: str) -> str:
    """A plain HTTP GET (the other routes of the application)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    response = await reader.read()
    writer.close()
    await writer.wait_closed()
    return response.split(b"\r\n\r\n", 1)[1].decode()


async def main() -> list[str]:
    seen: list[str] = []
    config = uvicorn.Config(
        build_app(seen), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
    )
    web = uvicorn.Server(config)
    serving = asyncio.create_task(web.serve())
    while not web.started:  # uvicorn has no "started" event to await
        if serving.done():
            serving.result()  # it failed to start: say why
        await asyncio.sleep(0.01)
    port = web.servers[0].sockets[0].getsockname()[1]

    seen.append(f"/health: {await get(port, '/health')}")
    async with open_http_client(f"http://127.0.0.1:{port}/tools/mcp") as client:
        seen.append(f"tools: {[tool['name'] for tool in await client.list_tools()]}")
        answer = await client.call_tool("forecast", {"city": "Oslo"})
        seen.append(f"forecast: {answer['content'][0]['text']}")

    web.should_exit = True  # uvicorn's own way to stop: finish requests, run the lifespan
    await serving
    seen.append(f"listening: {any(s.is_serving() for s in web.servers)}")
    return seen


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
