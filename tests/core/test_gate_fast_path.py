"""The gate's fast path: a handshake request it let through once is let through again
by its state, its capability and its params' types alone, and decides every request
as the whole gate does."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import _gates
from sansio_mcp._errors import MCPError
from sansio_mcp._gates import RoleGates
from sansio_mcp._state import Role, SessionState
from sansio_mcp._versions import HANDSHAKE_REVISIONS, LATEST_STATELESS_REVISION, REVISIONS

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
    "sampling/createMessage": {"messages": [], "maxTokens": 5},
}
CAPABILITIES = st.dictionaries(
    st.sampled_from(["tools", "resources", "prompts", "logging", "completions", "tasks"]),
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
ALL = {"tools": {}, "resources": {"subscribe": True}, "prompts": {}, "logging": {}}
FIELDS = ["name", "arguments", "task", "uri", "level", "cursor", "taskId", "_meta"]


def verdict(gates: RoleGates, method: str, params: dict[str, Any], *args: Any) -> Any:
    try:
        return gates.check_incoming_request(method, params, *args)
    except MCPError as error:
        return (error.code, error.message)


@settings(max_examples=1500)
@given(
    method=st.sampled_from(sorted(VALID)),
    changes=st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=3),
    dropped=st.lists(st.sampled_from(FIELDS), max_size=2),
    primed_in=st.sampled_from(HANDSHAKE_REVISIONS),
    revision=st.none() | st.sampled_from([*HANDSHAKE_REVISIONS, LATEST_STATELESS_REVISION]),
    primed_state=st.sampled_from([SessionState.READY, *SessionState]),
    state=st.none() | st.sampled_from(list(SessionState)),
    primed_capabilities=st.just(ALL) | CAPABILITIES,
    capabilities=st.none() | CAPABILITIES,
)
def test_a_primed_gate_decides_every_request_as_a_fresh_one(
    method: str,
    changes: dict[str, Any],
    dropped: list[str],
    primed_in: str,
    revision: str | None,
    primed_state: SessionState,
    state: SessionState | None,
    primed_capabilities: dict[str, Any],
    capabilities: dict[str, Any] | None,
) -> None:
    """Whatever request came first (and made a fast-path entry or not), the next one
    gets the whole gate's verdict: the same state, or the same error (None: the next
    one's revision, state or capabilities are the first one's)."""
    primed = RoleGates(Role.SERVER)
    verdict(primed, method, VALID[method], REVISIONS[primed_in], primed_capabilities, primed_state)
    params = {k: v for k, v in {**VALID[method], **changes}.items() if k not in dropped}
    args = (
        REVISIONS[primed_in if revision is None else revision],
        primed_capabilities if capabilities is None else capabilities,
        primed_state if state is None else state,
    )
    assert verdict(primed, method, params, *args) == verdict(
        RoleGates(Role.SERVER), method, params, *args
    )


def test_a_request_let_through_once_skips_the_whole_gate_next_time(monkeypatch: Any) -> None:
    """The second tools/call of a session is decided without the whole gate's param
    check (the fast path), and a bad one after it still gets the whole gate's error."""
    checked: list[str] = []
    whole = _gates.check_params

    def counting(method: str, params: dict[str, Any]) -> str | None:
        checked.append(method)
        return whole(method, params)

    monkeypatch.setattr(_gates, "check_params", counting)
    gates = RoleGates(Role.SERVER)
    args = (REVISIONS["2025-11-25"], {"tools": {}}, SessionState.READY)
    for _ in range(3):
        assert verdict(gates, "tools/call", VALID["tools/call"], *args) is SessionState.READY
    assert checked == ["tools/call"]
    bad = verdict(gates, "tools/call", {"name": 5}, *args)
    assert bad == (-32602, "tools/call: parameter 'name' must be a string")
    assert verdict(gates, "tools/call", VALID["tools/call"], args[0], {}, args[2])[0] == -32601
