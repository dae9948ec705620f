"""The driver the bridge runners put on each MCP session: every session event
goes to the :class:`BridgeHost` (which owns the sessions) instead of being
routed by the ordinary :class:`~sansio_mcp.runtime._driver.Driver`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from sansio_mcp import RequestReceived, Session, SessionState
from sansio_mcp.runtime import Driver

from ...a2e._host import BridgeHost

__all__ = ["BridgeDriver", "HostFeeder", "refuse_requests"]


class HostFeeder(Protocol):
    """What the driver needs of a bridge runner (:class:`BridgeRunner`): its
    host, its clock, and a way to have the host's queued actions carried out."""

    host: BridgeHost
    clock: Callable[[], float]

    def poke(self) -> None: ...


async def refuse_requests(event: RequestReceived) -> dict[str, Any]:  # pragma: no cover
    raise AssertionError("the bridge host answers server requests itself")


class BridgeDriver(Driver):
    """Hands every session event to the bridge host instead of routing it itself:
    the host is told the connection has input, and the runner carries out what it
    queued (both called from here: this runs for every message a server sends)."""

    def __init__(self, session: Session, runner: HostFeeder, conn: int) -> None:
        super().__init__(
            session,
            handle_request=refuse_requests,
            handle_notification=None,
            spawn=lambda request_id, fn: None,
            cancel=lambda request_id: None,
        )
        self._runner = runner
        self._conn = conn

    def process_events(self) -> None:
        self.closed = self.session.state is SessionState.CLOSED
        runner = self._runner
        runner.host.connection_input(self._conn, runner.clock())
        runner.poke()
