"""The gate's fast path: a handshake request the gate let through once is let through
again by its state, its capability and its params' types alone (``RoleGates.plain``,
tested inline by the session), and every request is decided as the whole gate
decides it."""

from __future__ import annotations

from typing import Any

from helpers import drain, line, out, ready_server, request
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import ServerSession
from sansio_mcp._gates import RoleGates
from sansio_mcp._state import Role, SessionState
from sansio_mcp._versions import HANDSHAKE_REVISIONS, REVISIONS

#: Params each method's whole gate lets through (what primes its fast path).
VALID: dict[str, dict[str, Any]] = {
    "ping": {},
    "tools/list": {},
    "tools/call": {"name": "echo", "arguments": {"message": "hi"}},
    "resources/read": {"uri": "file:///a"},
    "resources/subscribe": {"uri": "file:///a"},
    "prompts/get": {"name": "p", "arguments": {"a": "b"}},
    "logging/setLevel": {"level": "info"},
    "completion/complete": {
        "ref": {"type": "ref/prompt", "name": "p"},
        "argument": {"name": "a", "value": "b"},
    },
    "tasks/get": {"taskId": "t"},
}
ALL = {
    "tools": {},
    "resources": {"subscribe": True},
    "prompts": {},
    "logging": {},
    "completions": {},
    "tasks": {"list": {}, "cancel": {}},
}
CAPABILITIES = st.just(ALL) | st.dictionaries(
    st.sampled_from(sorted(ALL)),
    st.sampled_from([{}, {"subscribe": True, "list": {}}, True, False, None, 0]),
)
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2),
)
FIELDS = ["name", "arguments", "task", "uri", "level", "cursor", "taskId", "ref"]


class WholeGate(RoleGates):
    """A gate that never fills ``plain``: every request through the whole gate."""

    def _remember_plain(self, *args: Any) -> None:
        pass


def session(revision: str, capabilities: dict[str, Any], gates: RoleGates) -> ServerSession:
    server = ready_server(revision, capabilities=capabilities)
    server._gates = gates  # type: ignore[misc]
    return server


def served(server: ServerSession, message: dict[str, Any]) -> tuple[Any, ...]:
    server.receive_data(line(message))
    events = [
        (type(e).__name__, e.error.code, e.error.message)
        if type(e).__name__ == "ProtocolViolation"
        else e
        for e in drain(server)
    ]
    return events, out(server), server.state, server.open_requests


@settings(max_examples=800, deadline=None)
@given(
    method=st.sampled_from(sorted(VALID)),
    changes=st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=3),
    dropped=st.lists(st.sampled_from(FIELDS), max_size=2),
    revision=st.sampled_from(HANDSHAKE_REVISIONS),
    other_revision=st.none() | st.sampled_from(HANDSHAKE_REVISIONS),
    primed_capabilities=CAPABILITIES,
    capabilities=st.none() | CAPABILITIES,
)
def test_a_primed_gate_decides_every_request_as_the_whole_gate(
    method: str,
    changes: dict[str, Any],
    dropped: list[str],
    revision: str,
    other_revision: str | None,
    primed_capabilities: dict[str, Any],
    capabilities: dict[str, Any] | None,
) -> None:
    """After a first request (which made a fast-path entry or not), the next one gets
    the whole gate's verdict: the same events, answers, state and open requests.  It
    comes to the same session (``other_revision`` None) or to another one of
    ``other_revision`` sharing the gate; ``capabilities``: the session's, changed
    between (None: the first one's)."""
    outcomes = []
    for gates in (RoleGates(Role.SERVER), WholeGate(Role.SERVER)):
        server = session(revision, primed_capabilities, gates)
        served(server, request(1, method, VALID[method]))
        if other_revision is not None:
            server = session(other_revision, primed_capabilities, gates)
        if capabilities is not None:
            server.capabilities = capabilities
        params = {k: v for k, v in {**VALID[method], **changes}.items() if k not in dropped}
        outcomes.append(served(server, request(2, method, params)))
    primed, whole = outcomes
    assert primed == whole


def test_a_request_let_through_once_skips_the_whole_gate_next_time() -> None:
    """The second tools/call of a session is let through without the whole gate; a bad
    one after it, or one without the capability, still gets the whole gate's error."""
    checked: list[str] = []

    class Counting(RoleGates):
        def check_incoming_request(self, method: str, *args: Any, **kwargs: Any) -> Any:
            checked.append(method)
            return super().check_incoming_request(method, *args, **kwargs)

    server = session("2025-11-25", {"tools": {}}, Counting(Role.SERVER))
    call = {"name": "echo", "arguments": {"message": "hi"}}
    for i in range(3):
        server.receive_data(line(request(i, "tools/call", call)))
        server.respond(i, {"content": []})
    assert checked == ["tools/call"]
    assert [answer["id"] for answer in out(server)] == [0, 1, 2]
    server.receive_data(line(request(3, "tools/call", {"name": 5})))
    [bad] = out(server)
    assert bad["error"] == {
        "code": -32602,
        "message": "tools/call: parameter 'name' must be a string",
    }
    server.capabilities = {}
    server.receive_data(line(request(4, "tools/call", call)))
    [missing] = out(server)
    assert missing["error"]["code"] == -32601
    assert checked == ["tools/call"] * 3
    assert server.state is SessionState.READY
    assert REVISIONS["2025-11-25"] is server.revision
