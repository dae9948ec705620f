"""Trio adapters for sansio-mcp: they move bytes; the core decides."""

from sansio_mcp.runtime import ClientHandlers

from ._backend import PipeStream
from ._runner import TrioRunner, TrioSessionHost
from ._transports import BACKEND
from .client import Client, open_client, open_stdio_client
from .server import TrioContext, serve, serve_stdio

__all__ = [
    "BACKEND",
    "Client",
    "ClientHandlers",
    "PipeStream",
    "TrioContext",
    "TrioRunner",
    "TrioSessionHost",
    "open_client",
    "open_stdio_client",
    "serve",
    "serve_stdio",
]
