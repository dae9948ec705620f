"""Trio adapters for sansio-mcp: they move bytes; the core decides."""

from typing import TYPE_CHECKING

from sansio_mcp import lazy_names

# Each name is imported from its module when first used, and Trio with it: importing the
# package costs next to nothing, using a name costs what that name needs (import time,
# issue 37; ``import mcp`` likewise loads anyio's Trio backend only when run on Trio).
if TYPE_CHECKING:
    from sansio_mcp.runtime import ClientHandlers

    from ._backend import PipeStream
    from ._runner import TrioRunner, TrioSessionHost
    from ._transports import BACKEND
    from .client import Client, open_client, open_stdio_client
    from .server import TrioContext, serve, serve_stdio

lazy_names(
    __name__,
    {
        "sansio_mcp.runtime": ("ClientHandlers",),
        "._backend": ("PipeStream",),
        "._runner": ("TrioRunner", "TrioSessionHost"),
        "._transports": ("BACKEND",),
        ".client": ("Client", "open_client", "open_stdio_client"),
        ".server": ("TrioContext", "serve", "serve_stdio"),
    },
)

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
