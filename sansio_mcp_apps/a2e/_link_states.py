"""The lifecycle of one server link (one connection attempt) as a transition table.

A link is born ``CONNECTING`` when the host asks its runner to open a
transport, and ends in one of three terminal states.  A ``(state, trigger)``
key in :data:`LINK_TRANSITIONS` is allowed and names the next state; anything
else is a bug in the bridge, and :func:`next_link_state` raises
:class:`IllegalLinkTransition` rather than let the flags drift apart.

The server's public status (``MCPServerInfo.status``) follows from the
link's state (:data:`SERVER_STATUS`), which is why two terminal states exist
for a link that ended: an attempt that failed is ``error``, a connection that
worked and then ended is ``disconnected``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from sansio_mcp.state_tables import generated_block, transition_moves

from ._models import MCPServerStatus

__all__ = [
    "LINK_TRANSITIONS",
    "LINK_TERMINAL_STATES",
    "SERVER_STATUS",
    "IllegalLinkTransition",
    "LinkState",
    "LinkTrigger",
    "next_link_state",
    "render_link_table",
]


class _Member(Enum):
    # Identity hashing: members are singletons, and Enum's __hash__ is Python code.
    __hash__ = object.__hash__


class LinkState(_Member):
    CONNECTING = "connecting"  # the runner opens the transport
    STARTING = "starting"  # transport up: initialize (or server/discover) sent
    SYNCING = "syncing"  # session started: the first listings are being read
    READY = "ready"  # synced: calls are routed to it, it is pinged
    FAILED = "failed"  # the attempt failed (no transport, refused, no answer)
    LOST = "lost"  # a connection that was up ended
    REMOVED = "removed"  # the server was unregistered, or the bridge is stopping


class LinkTrigger(_Member):
    """What happened to a link, as far as its lifecycle cares."""

    TRANSPORT_OPENED = "transport opened"  # the runner reports connection_opened
    CONNECT_TIMED_OUT = "no transport in time"  # within min(30 s, the server's timeout)
    START_FAILED = "session start failed"  # refused, no answer in time, or cannot start
    STARTED = "session started"  # initialize (or server/discover) answered
    SYNCED = "first listings read"  # tools, resources, prompts: every one offered
    TRANSPORT_LOST = "transport lost"  # the runner reports connection_lost
    SESSION_CLOSED = "session closed"  # its input ended, or an HTTP request went nowhere
    PING_TIMED_OUT = "ping unanswered"
    REMOVED = "server removed"  # unregistered, or the bridge is stopping


_S, _T = LinkState, LinkTrigger
_OPEN = (_S.CONNECTING, _S.STARTING, _S.SYNCING, _S.READY)

LINK_TRANSITIONS: Mapping[tuple[LinkState, LinkTrigger], LinkState] = {
    (_S.CONNECTING, _T.TRANSPORT_OPENED): _S.STARTING,
    (_S.CONNECTING, _T.CONNECT_TIMED_OUT): _S.FAILED,
    # A transport that never came up failed; one that did was lost.
    (_S.CONNECTING, _T.TRANSPORT_LOST): _S.FAILED,
    (_S.STARTING, _T.TRANSPORT_LOST): _S.LOST,
    (_S.SYNCING, _T.TRANSPORT_LOST): _S.LOST,
    (_S.READY, _T.TRANSPORT_LOST): _S.LOST,
    (_S.STARTING, _T.START_FAILED): _S.FAILED,
    (_S.STARTING, _T.STARTED): _S.SYNCING,
    (_S.SYNCING, _T.SYNCED): _S.READY,
    (_S.READY, _T.PING_TIMED_OUT): _S.FAILED,
    # Not from STARTING: a session that closes while starting fails its start
    # request first, and that is START_FAILED.
    (_S.CONNECTING, _T.SESSION_CLOSED): _S.LOST,
    (_S.SYNCING, _T.SESSION_CLOSED): _S.LOST,
    (_S.READY, _T.SESSION_CLOSED): _S.LOST,
    **{(state, _T.REMOVED): _S.REMOVED for state in _OPEN},
}

#: States without a way out: the link is over, and the host holds it no more.
LINK_TERMINAL_STATES: frozenset[LinkState] = frozenset(
    state for state in LinkState if not any(key[0] is state for key in LINK_TRANSITIONS)
)

#: The server's status while its link is in a state (a removed server has none).
SERVER_STATUS: Mapping[LinkState, str] = {
    _S.CONNECTING: MCPServerStatus.CONNECTING.value,
    _S.STARTING: MCPServerStatus.CONNECTING.value,
    _S.SYNCING: MCPServerStatus.CONNECTING.value,
    _S.READY: MCPServerStatus.READY.value,
    _S.FAILED: MCPServerStatus.ERROR.value,
    _S.LOST: MCPServerStatus.DISCONNECTED.value,
}


class IllegalLinkTransition(RuntimeError):
    """The bridge tried a move its link lifecycle does not have (a bug)."""


def next_link_state(state: LinkState, trigger: LinkTrigger) -> LinkState:
    """The state ``trigger`` leads to from ``state``; raises :class:`IllegalLinkTransition`."""
    try:
        return LINK_TRANSITIONS[(state, trigger)]
    except KeyError:
        raise IllegalLinkTransition(
            f"a link in state {state.name} cannot take {trigger.name}"
        ) from None


def render_link_table() -> str:
    """The server link lifecycle as Markdown (docs/architecture.md): a row per state,
    with the server's status in that state and its triggers -> next state."""
    out = ["", "| state | server status | allowed triggers → next state |", "| --- | --- | --- |"]
    for state in LinkState:
        moves = transition_moves(LINK_TRANSITIONS, (state,), LinkTrigger)
        status = SERVER_STATUS.get(state, "(the server is gone)")
        out.append(f"| {state.name} | {status} | {moves or '— (terminal)'} |")
    return generated_block("link-states", out)
