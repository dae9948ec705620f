"""asyncio adapters for sansio-mcp: the same names and semantics as
:mod:`trio_adapters`, for asyncio applications."""

from sansio_mcp.runtime import ClientHandlers

from ._backend import PipeStream
from ._runner import AsyncioRunner, AsyncioSessionHost
from ._transports import BACKEND
from .client import Client, open_client, open_stdio_client
from .server import AsyncioContext, serve, serve_stdio

__all__ = [
    "BACKEND",
    "AsyncioContext",
    "AsyncioRunner",
    "AsyncioSessionHost",
    "Client",
    "ClientHandlers",
    "PipeStream",
    "open_client",
    "open_stdio_client",
    "serve",
    "serve_stdio",
]
