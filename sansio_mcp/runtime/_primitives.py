"""The smallest event-loop shapes, apart from :mod:`._backend` so that the modules
``_backend`` names for typing (the server, the client) can use them without an
import circle.  ``_backend`` re-exports them."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Cancellable", "Signal", "Sleeper"]


class Signal(Protocol):
    """A one-shot event for one waiting task: ``set`` wakes its ``wait`` (or lets
    a later ``wait`` return at once).  Each request has its own."""

    def set(self) -> None: ...

    async def wait(self) -> Any: ...


class Cancellable(Protocol):
    """A task (or its cancel scope) that can be cancelled."""

    def cancel(self) -> Any: ...


class Sleeper(Protocol):
    """What can sleep (a :class:`~sansio_mcp.runtime._backend.Backend` can)."""

    async def sleep(self, seconds: float) -> None: ...
