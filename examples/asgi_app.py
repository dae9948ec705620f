"""Mount an MCP server into a Starlette app and run it under uvicorn.

python examples/asgi_app.py --port 8000
sansio-mcp inspect http://127.0.0.1:8000/tools/mcp
"""

from __future__ import annotations

import argparse

import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from asyncio_adapters.asgi import MCPApp
from sansio_mcp_apps.example_server import build_server


def build_app() -> Starlette:
    mcp = MCPApp(build_server())

    async def health(request: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[Route("/health", health), Mount("/tools", app=mcp)],
        lifespan=mcp.lifespan,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    uvicorn.run(build_app(), host=options.host, port=options.port, log_level="warning")
