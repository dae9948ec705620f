"""A connector's status as a transition table, and its reconnect backoff."""

from __future__ import annotations

import enum

import attrs

from sansio_mcp.state_tables import generated_block, transition_moves

__all__ = [
    "CONNECTOR_TRANSITIONS",
    "ConnectorStatus",
    "IllegalConnectorTransition",
    "StatusTrigger",
    "Backoff",
    "backoff_delay",
    "next_status",
    "render_connector_table",
]


class ConnectorStatus(enum.Enum):
    CONNECTING = "connecting"
    READY = "ready"
    BACKOFF = "backoff"
    CLOSED = "closed"


class StatusTrigger(enum.Enum):
    LISTED = "first tools listed"
    FAILED = "connection failed or lost"
    RETRY = "backoff elapsed"
    LIST_CHANGED = "tools listed again"
    STOP = "gateway stopping"


S, T = ConnectorStatus, StatusTrigger

#: ``(status, trigger) -> next status``; any other move is a bug.
CONNECTOR_TRANSITIONS: dict[tuple[ConnectorStatus, StatusTrigger], ConnectorStatus] = {
    (S.CONNECTING, T.LISTED): S.READY,
    (S.CONNECTING, T.FAILED): S.BACKOFF,
    (S.CONNECTING, T.STOP): S.CLOSED,
    (S.READY, T.LIST_CHANGED): S.READY,
    (S.READY, T.FAILED): S.BACKOFF,
    (S.READY, T.STOP): S.CLOSED,
    (S.BACKOFF, T.RETRY): S.CONNECTING,
    (S.BACKOFF, T.STOP): S.CLOSED,
    (S.CLOSED, T.STOP): S.CLOSED,
}


class IllegalConnectorTransition(RuntimeError):
    """A move the table does not allow."""


def next_status(status: ConnectorStatus, trigger: StatusTrigger) -> ConnectorStatus:
    try:
        return CONNECTOR_TRANSITIONS[status, trigger]
    except KeyError:
        raise IllegalConnectorTransition(
            f"a connector cannot go from {status.value} on {trigger.value!r}"
        ) from None


@attrs.frozen
class Backoff:
    """Seconds between reconnect attempts: ``base * 2**attempt``, at most ``cap``."""

    base: float = 0.25
    cap: float = 30.0


def backoff_delay(attempt: int, backoff: Backoff | None = None) -> float:
    """The wait before reconnect attempt ``attempt`` (0 for the first retry)."""
    backoff = backoff or Backoff()
    return float(min(backoff.cap, backoff.base * (2 ** min(attempt, 32))))


def render_connector_table() -> str:
    """The connector status table as Markdown (docs/gateway.md)."""
    out = ["", "| status | allowed triggers → next status |", "| --- | --- |"]
    for status in ConnectorStatus:
        moves = transition_moves(CONNECTOR_TRANSITIONS, (status,), StatusTrigger, by_value=True)
        out.append(f"| {status.value} | {moves} |")
    return generated_block("connector-states", out)
