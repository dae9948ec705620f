"""The lifecycle of a server link is a table, and the host moves links only by it."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from sansio_mcp import HTTPStatusError
from sansio_mcp_apps.a2e import (
    ConnectServer,
    MCPServerRegisterRequest,
    MCPServerUnregisterRequest,
    _host_state,
)
from sansio_mcp_apps.a2e._link_states import (
    LINK_TERMINAL_STATES,
    LINK_TRANSITIONS,
    SERVER_STATUS,
    IllegalLinkTransition,
    LinkState,
    LinkTrigger,
    next_link_state,
)

from .helpers import FakeServer, Harness, tool

S, T = LinkState, LinkTrigger
Move = tuple[LinkState, LinkTrigger]

# The table ------------------------------------------------------------------------------------


def _reachable(start: LinkState) -> set[LinkState]:
    seen = {start}
    frontier = [start]
    while frontier:
        state = frontier.pop()
        for (source, _), target in LINK_TRANSITIONS.items():
            if source is state and target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def test_every_state_is_reachable_from_connecting() -> None:
    assert _reachable(S.CONNECTING) == set(LinkState)


def test_the_terminal_states_are_the_ends_and_have_no_exits() -> None:
    assert {S.FAILED, S.LOST, S.REMOVED} == LINK_TERMINAL_STATES
    assert not [key for key in LINK_TRANSITIONS if key[0] in LINK_TERMINAL_STATES]


def test_every_open_state_can_end_and_be_removed() -> None:
    for state in set(LinkState) - LINK_TERMINAL_STATES:
        assert _reachable(state) & LINK_TERMINAL_STATES
        assert LINK_TRANSITIONS[(state, T.REMOVED)] is S.REMOVED
        assert LINK_TRANSITIONS[(state, T.TRANSPORT_LOST)] in LINK_TERMINAL_STATES


def test_every_state_but_removed_names_a_server_status() -> None:
    assert set(SERVER_STATUS) == set(LinkState) - {S.REMOVED}
    assert {SERVER_STATUS[s] for s in LINK_TERMINAL_STATES - {S.REMOVED}} == {
        "error",
        "disconnected",
    }


def test_a_move_outside_the_table_raises_and_leaves_the_link_as_it_was() -> None:
    with pytest.raises(IllegalLinkTransition):
        next_link_state(S.READY, T.STARTED)
    h, _ = _ready()
    link = h.host._links[h.conn_of("s")]
    with pytest.raises(IllegalLinkTransition):
        link.advance(T.TRANSPORT_OPENED)
    assert link.state is S.READY and link.server.status == "ready"


def test_nothing_but_advance_moves_a_link() -> None:
    """Every assignment to a ``.state`` in the bridge is the one in ServerLink.advance."""
    package = Path(_host_state.__file__).parent
    assignments = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else [node.target]
                    if isinstance(node, ast.AugAssign | ast.AnnAssign)
                    else []
                )
                for target in targets:
                    if isinstance(target, ast.Attribute) and target.attr == "state":
                        assignments.append(f"{path.name}:{function.name}")
    assert assignments == ["_host_state.py:advance"]


# The host takes every move of the table, and only those -------------------------------------


def _register(h: Harness) -> None:
    h.send(MCPServerRegisterRequest(id="r", ts=h.now, config={"server_id": "s", "cmd": ["srv"]}))


def _connecting(**options: object) -> tuple[Harness, ConnectServer]:
    """A link whose transport the runner has not opened yet."""
    h = Harness(**options)
    h.add_server("srv", FakeServer(tools=[tool("t")]))
    h.hold_connect.add("srv")
    _register(h)
    [action] = h.pending_connects
    return h, action


def _starting() -> tuple[Harness, int]:
    """A link whose initialize went out and was never answered."""
    h, action = _connecting()
    h.host.connection_opened(action.connection, h.now)
    h.run()  # (nothing reaches the server: the harness never opened it)
    return h, action.connection


def _syncing() -> tuple[Harness, int]:
    """A started link whose tools/list and prompts/list the server holds."""
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("t")], prompts=[]))
    fake.handlers["tools/list"] = fake.handlers["prompts/list"] = lambda server, event: None
    _register(h)
    return h, h.conn_of("s")


def _ready(**options: object) -> tuple[Harness, int]:
    h = Harness(**options)
    h.add_server("srv", FakeServer(tools=[tool("t")]))
    h.register("s", "srv")
    return h, h.conn_of("s")


def _session_closes(h: Harness, conn: int) -> None:
    h.host._links[conn].session.receive_data(b"")
    h.host.connection_input(conn, h.now)
    h.run()


def _transport_lost(h: Harness, conn: int) -> None:
    h.host.connection_lost(conn, "gone", h.now)
    h.run()


def _unregister(h: Harness, conn: int) -> None:
    h.send(MCPServerUnregisterRequest(id="u", ts=h.now, server_id="s"))


def _start_times_out(h: Harness, conn: int) -> None:
    h.advance(31.0)  # server/discover times out, and the session falls back to initialize,
    h.advance(31.0)  # which times out too


def _tools_unreachable_over_http(h: Harness, conn: int) -> None:
    """What an HTTP transport reports when a POST could not reach the server (status 0)."""
    [tools_list] = [e for e in h.servers["srv"].held if e.method == "tools/list"]
    h.host._links[conn].session.fail_request(
        tools_list.request_id, HTTPStatusError(message="unreachable", data={"status": 0})
    )
    h.host.connection_input(conn, h.now)
    h.run()


def _ping_goes_unanswered() -> None:
    h, conn = _ready(ping_interval=10.0, ping_timeout=2.0)
    h.links.pop(conn)  # nothing reaches the server any more
    h.advance(10.0)
    h.advance(2.0)


def _on_connecting(act: Callable[[Harness, int], None]) -> Callable[[], None]:
    def scenario() -> None:
        h, action = _connecting()
        act(h, action.connection)

    return scenario


def _on(
    reach: Callable[[], tuple[Harness, int]], act: Callable[[Harness, int], None]
) -> Callable[[], None]:
    def scenario() -> None:
        h, conn = reach()
        act(h, conn)

    return scenario


SCENARIOS: dict[Move, Callable[[], None]] = {
    (S.CONNECTING, T.TRANSPORT_OPENED): _ready,
    (S.STARTING, T.STARTED): _ready,
    (S.SYNCING, T.SYNCED): _ready,
    (S.CONNECTING, T.CONNECT_TIMED_OUT): _on_connecting(lambda h, conn: h.advance(31.0)),
    (S.CONNECTING, T.TRANSPORT_LOST): _on_connecting(_transport_lost),
    (S.CONNECTING, T.SESSION_CLOSED): _on_connecting(_session_closes),
    (S.CONNECTING, T.REMOVED): _on_connecting(_unregister),
    (S.STARTING, T.START_FAILED): _on(_starting, _start_times_out),
    (S.STARTING, T.TRANSPORT_LOST): _on(_starting, _transport_lost),
    (S.STARTING, T.REMOVED): _on(_starting, _unregister),
    (S.SYNCING, T.TRANSPORT_LOST): _on(_syncing, _transport_lost),
    (S.SYNCING, T.SESSION_CLOSED): _on(_syncing, _tools_unreachable_over_http),
    (S.SYNCING, T.REMOVED): _on(_syncing, _unregister),
    (S.READY, T.TRANSPORT_LOST): _on(_ready, _transport_lost),
    (S.READY, T.SESSION_CLOSED): _on(_ready, _session_closes),
    (S.READY, T.REMOVED): _on(_ready, _unregister),
    (S.READY, T.PING_TIMED_OUT): _ping_goes_unanswered,
}


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[Move]:
    """Every move the host makes, in order."""
    moves: list[Move] = []
    table_lookup = _host_state.next_link_state

    def recording(state: LinkState, trigger: LinkTrigger) -> LinkState:
        target = table_lookup(state, trigger)
        moves.append((state, trigger))
        return target

    monkeypatch.setattr(_host_state, "next_link_state", recording)
    return moves


def test_the_scenarios_cover_the_whole_table() -> None:
    assert set(SCENARIOS) == set(LINK_TRANSITIONS)


@pytest.mark.parametrize("move", list(SCENARIOS), ids=lambda m: f"{m[0].name}-{m[1].name}")
def test_the_host_takes_each_move_of_the_table(move: Move, taken: list[Move]) -> None:
    SCENARIOS[move]()  # (the harness fails on any exception the host caught, an illegal move too)
    assert move in taken
    assert set(taken) <= set(LINK_TRANSITIONS)
