"""The driver the bridge runners put on each MCP session: every session event
goes to the :class:`BridgeHost` (which owns the sessions) instead of being
routed by the ordinary :class:`~sansio_mcp._driver.Driver`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._driver import Driver
from .._events import RequestReceived
from .._session import Session
from .._state import SessionState

__all__ = ["BridgeDriver", "refuse_requests"]


async def refuse_requests(event: RequestReceived) -> dict[str, Any]:  # pragma: no cover
    raise AssertionError("the bridge host answers server requests itself")


class BridgeDriver(Driver):
    """Hands every session event to the bridge host instead of routing it itself."""

    def __init__(self, session: Session, pump: Callable[[], None]) -> None:
        super().__init__(
            session,
            handle_request=refuse_requests,
            handle_notification=None,
            spawn=lambda request_id, fn: None,
            cancel=lambda request_id: None,
        )
        self._pump = pump

    def process_events(self) -> None:
        self.closed = self.session.state is SessionState.CLOSED
        self._pump()
