"""asyncio adapters for sansio-mcp: the same names and semantics as
:mod:`trio_adapters`, for asyncio applications."""

from typing import TYPE_CHECKING

from sansio_mcp import lazy_names

# Each name is imported from its module when first used, as in :mod:`trio_adapters`:
# importing the package costs next to nothing (import time, issue 37).
if TYPE_CHECKING:
    from sansio_mcp.runtime import ClientHandlers

    from ._backend import PipeStream
    from ._runner import AsyncioRunner, AsyncioSessionHost
    from ._transports import BACKEND
    from .client import Client, open_client, open_stdio_client
    from .server import AsyncioContext, serve, serve_stdio

lazy_names(
    __name__,
    {
        "sansio_mcp.runtime": ("ClientHandlers",),
        "._backend": ("PipeStream",),
        "._runner": ("AsyncioRunner", "AsyncioSessionHost"),
        "._transports": ("BACKEND",),
        ".client": ("Client", "open_client", "open_stdio_client"),
        ".server": ("AsyncioContext", "serve", "serve_stdio"),
    },
)

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
