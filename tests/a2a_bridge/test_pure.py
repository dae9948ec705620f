"""The bridge's pure half: config validation, the handle table (time passed in), the
state table, and the translation of parts and tasks.  No I/O."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp_apps.a2a import (
    META_KEY,
    STATES,
    ConfigError,
    ExpiredHandle,
    HandleTable,
    PartError,
    ResultLimits,
    TooManyHandles,
    UnknownHandle,
    UnknownTaskState,
    load_config,
    parse_config,
    part_to_content,
    state_mapping,
    task_result,
)

# Config ------------------------------------------------------------------------------


def test_config_defaults_and_card_location() -> None:
    config = parse_config(
        {
            "agents": {
                "hello": {"url": "http://localhost:9999/"},
                "planner": {"cardUrl": "https://planner.example.org/card.json"},
            }
        }
    )
    assert (config.port, config.allowed_hosts, config.handle_ttl_ms) == (8931, (), 900_000)
    assert config.task_ttl_ms == 86_400_000  # a day, from each task's creation
    assert (config.max_handles_per_owner, config.max_handles) == (1000, 100_000)
    bounded = parse_config(
        {"agents": {"a": {"url": "http://x"}}, "maxHandlesPerOwner": 5, "maxHandles": 50}
    )
    assert (bounded.max_handles_per_owner, bounded.max_handles) == (5, 50)
    hello, planner = config.agents
    assert hello.card_location == "http://localhost:9999/.well-known/agent-card.json"
    assert planner.card_location == "https://planner.example.org/card.json"
    assert config.agent("planner") is planner and config.agent("nobody") is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ([], "must be a JSON object"),
        ({}, "agents must be a non-empty object"),
        ({"agents": {}}, "agents must be a non-empty object"),
        ({"agents": {"a": {}}, "extra": 1}, "unknown key(s): 'extra'"),
        ({"agents": {"a": {}}}, "agents.a needs exactly one of 'url' and 'cardUrl'"),
        ({"agents": {"a": {"url": "http://x", "cardUrl": "http://y"}}}, "exactly one"),
        ({"agents": {"a": {"url": "x"}}}, "agents.a.url must be an http:// or https:// URL"),
        ({"agents": {"a": {"url": "http:///p"}}}, "agents.a.url has no host"),
        ({"agents": {"a": {"url": "http://x", "token": 1}}}, "unknown key(s): 'token'"),
        ({"agents": {"a b": {"url": "http://x"}}}, "agent alias 'a b'"),
        ({"agents": {"a": {"url": "http://x"}}, "port": 70000}, "port must be an integer"),
        ({"agents": {"a": {"url": "http://x"}}, "port": True}, "port must be an integer"),
        ({"agents": {"a": {"url": "http://x"}}, "handleTtlMs": 0}, "handleTtlMs must be"),
        ({"agents": {"a": {"url": "http://x"}}, "taskTtlMs": 999}, "taskTtlMs must be"),
        (
            {"agents": {"a": {"url": "http://x"}}, "maxHandlesPerOwner": 0},
            "maxHandlesPerOwner must be an integer from 1",
        ),
        ({"agents": {"a": {"url": "http://x"}}, "maxHandles": "9"}, "maxHandles must be"),
        ({"agents": {"a": {"url": "http://x"}}, "allowedHosts": "x"}, "allowedHosts must be"),
    ],
)
def test_config_problems(raw: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert problem in str(caught.value)


def test_config_not_json() -> None:
    with pytest.raises(ConfigError, match="not JSON"):
        load_config(b"{agents")


# Handles -----------------------------------------------------------------------------


def test_handles_are_idempotent_and_restart_on_use() -> None:
    counter = iter(range(100))
    table: HandleTable[str] = HandleTable("tk_", 10.0, new_token=lambda: str(next(counter)))
    first = table.mint("task-1", now=0.0)
    assert first == "tk_0" and table.mint("task-1", now=5.0) == first
    assert table.resolve(first, now=14.9) == "task-1"  # 5 + 10 > 14.9
    assert table.resolve(first, now=24.8) == "task-1"  # restarted at 14.9
    with pytest.raises(ExpiredHandle, match="kept in memory for 10 seconds"):
        table.resolve(first, now=34.8)
    with pytest.raises(UnknownHandle):
        table.resolve("tk_other", now=0.0)
    assert table.mint("task-1", now=40.0) != first  # a fresh handle after expiry


def test_a_handle_is_its_owners() -> None:
    """Another owner's handle, live or expired, is as unknown as a made-up one; the same
    value gets a handle of its own per owner."""
    counter = iter(range(100))
    table: HandleTable[str] = HandleTable("tk_", 10.0, new_token=lambda: str(next(counter)))
    alices = table.mint("task-1", 0.0, "subject:alice")
    bobs = table.mint("task-1", 0.0, "subject:bob")
    assert alices != bobs and table.peek("task-1", 0.0) == "task-1"
    assert table.resolve(alices, 1.0, "subject:alice") == "task-1"
    for stranger in ("subject:bob", "anonymous", None):
        with pytest.raises(UnknownHandle) as theirs:
            table.resolve(alices, 1.0, stranger)
        assert str(theirs.value) == f"unknown handle {alices!r}"
    with pytest.raises(ExpiredHandle):
        table.resolve(alices, 20.0, "subject:alice")
    with pytest.raises(UnknownHandle):
        table.resolve(bobs, 20.0, "subject:alice")  # expired, and not hers
    assert table.peek("task-1", 20.0) is None


@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 30)), max_size=30))
def test_handle_lives_exactly_ttl_after_last_use(uses: list[tuple[str, float]]) -> None:
    """Whatever the uses, a handle resolves iff less than ``ttl`` passed since its value
    was last minted or resolved."""
    table: HandleTable[str] = HandleTable("h_", 10.0)
    now = 0.0
    last: dict[str, float] = {}
    handles: dict[str, str] = {}
    for value, step in uses:
        now += step
        if value in handles:
            if now < last[value] + 10.0:
                assert table.resolve(handles[value], now) == value
            else:
                with pytest.raises(ExpiredHandle):
                    table.resolve(handles[value], now)
                handles[value] = table.mint(value, now)
        else:
            handles[value] = table.mint(value, now)
        last[value] = now
        assert len(set(handles.values())) == len(handles)


# States ------------------------------------------------------------------------------


def test_state_table_covers_a2a() -> None:
    from a2a.types import TaskState

    assert set(STATES) == set(TaskState.keys())
    assert state_mapping(None).a2a_state == "TASK_STATE_UNSPECIFIED"
    errors = {name for name, row in STATES.items() if row.is_error}
    assert errors == {
        "TASK_STATE_FAILED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_AUTH_REQUIRED",
        "TASK_STATE_UNSPECIFIED",
    }
    assert STATES["TASK_STATE_CANCELED"].status == "cancelled"
    assert STATES["TASK_STATE_AUTH_REQUIRED"].task_status == "completed"  # never input_required
    with pytest.raises(UnknownTaskState):
        state_mapping("TASK_STATE_PAUSED")


# Parts -------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**50), 2**50) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(JSON)
def test_data_part_carries_its_json(value: Any) -> None:
    block = part_to_content({"data": value}, {"artifactId": "a1"})
    assert block["type"] == "text"
    assert json.loads(block["text"]) == value
    assert block["_meta"][META_KEY] == {"partKind": "data", "artifactId": "a1"}


def test_data_numbers_lose_their_double() -> None:
    block = part_to_content({"data": {"n": 42.0, "x": 0.5, "l": [1.0]}})
    assert json.loads(block["text"]) == {"n": 42, "x": 0.5, "l": [1]}
    assert '"n":42,' in block["text"]


@given(st.binary(max_size=64), st.sampled_from(["image/png", "audio/wav", "application/pdf", ""]))
def test_raw_parts(data: bytes, media_type: str) -> None:
    part: dict[str, Any] = {"raw": base64.b64encode(data).decode()}
    if media_type:
        part["mediaType"] = media_type
    block = part_to_content(part)
    if media_type.startswith(("image/", "audio/")):
        assert block["type"] == media_type.split("/")[0]
        assert base64.b64decode(block["data"]) == data
        assert block["mimeType"] == media_type
    else:
        resource = block["resource"]
        assert resource["uri"].startswith("a2a://part/")
        assert base64.b64decode(resource["blob"]) == data
        assert resource["mimeType"] == (media_type or "application/octet-stream")


def test_url_and_bad_parts() -> None:
    link = part_to_content({"url": "https://x/r.pdf", "filename": "r.pdf", "mediaType": "a/b"})
    assert link == {
        "type": "resource_link",
        "uri": "https://x/r.pdf",
        "name": "r.pdf",
        "mimeType": "a/b",
        "_meta": {META_KEY: {"partKind": "url", "filename": "r.pdf", "mediaType": "a/b"}},
    }
    for bad, problem in [
        ({"kind": "text", "text": "v0.3"}, "v0.3"),
        ({"text": "a", "url": "b"}, "exactly one"),
        ({}, "exactly one"),
        ({"raw": "not base64!"}, "not valid base64"),
        ({"url": ""}, "non-empty"),
    ]:
        with pytest.raises(PartError, match=problem):
            part_to_content(bad)


def test_task_result_notes_what_it_drops_and_single_data() -> None:
    task = {
        "id": "t",
        "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [
            {"artifactId": "a", "name": "one", "parts": [{"data": {"k": 1.0}}, {"kind": "x"}]},
            {"artifactId": "b", "name": "two", "parts": [{"text": "hi"}]},
        ],
    }
    result = task_result(task, context_handle="cx_1", task_handle="tk_1")
    envelope = result["structuredContent"]
    assert envelope["data"] == {"k": 1}
    assert envelope["artifacts"] == [
        {"artifactId": "a", "name": "one"},
        {"artifactId": "b", "name": "two"},
    ]
    assert "a part was left out" in envelope["note"]
    assert [c["text"] for c in result["content"]] == ['{"k":1}', "hi"]


def test_state_table_in_the_docs_is_current() -> None:
    from pathlib import Path

    from sansio_mcp.state_tables import page_block
    from sansio_mcp_apps.a2a import render_a2a_states

    page = (Path(__file__).resolve().parents[2] / "docs" / "a2a-bridge.md").read_text()
    assert page_block(page, render_a2a_states()) == render_a2a_states(), (
        "docs/a2a-bridge.md is stale: paste `python -m sansio_mcp_cli.docs_tables` into it"
    )


PARTS = st.one_of(
    st.builds(lambda t: {"text": t}, st.text(max_size=5)),
    st.builds(lambda d: {"data": d}, JSON),
    st.builds(lambda u: {"url": "https://x/" + u}, st.text("abc", min_size=1, max_size=3)),
    st.builds(lambda b: {"raw": base64.b64encode(b).decode()}, st.binary(max_size=8)),
    st.just({"kind": "text", "text": "v0.3"}),
)


@given(
    st.lists(st.lists(PARTS, min_size=1, max_size=4), max_size=3),
    st.sampled_from(sorted(STATES)),
)
def test_task_envelope_properties(artifact_parts: list[list[dict[str, Any]]], state: str) -> None:
    """Whatever the artifacts: one block per valid part (or a summary when none), a note
    exactly when something was lost, ``data`` exactly when one data part exists, and the
    state's row decides ``isError`` and ``status``."""
    artifacts = [
        {"artifactId": f"a{i}", "name": f"n{i}", "parts": parts}
        for i, parts in enumerate(artifact_parts)
    ]
    task = {"id": "t", "contextId": "c", "status": {"state": state}, "artifacts": artifacts}
    result = task_result(task, context_handle=None, task_handle="tk_x")
    envelope = result["structuredContent"]
    parts = [p for a in artifacts for p in a["parts"]]
    valid = [p for p in parts if "kind" not in p]
    data = [p["data"] for p in valid if "data" in p]
    assert len(result["content"]) == (len(valid) or 1)
    assert ("data" in envelope) == (len(data) == 1)
    if len(data) == 1:
        assert json.loads(json.dumps(envelope["data"])) == data[0]
    row = STATES[state]
    assert result["isError"] is row.is_error
    assert envelope["status"] == row.status
    lossy = row.note is not None or len(valid) < len(parts)
    assert ("note" in envelope) == lossy
    assert "contextHandle" not in envelope and envelope["taskHandle"] == "tk_x"


@pytest.mark.parametrize("offered", [True, False])
def test_handshake_session_refuses_tasks_methods(offered: bool) -> None:
    """A server offering the tasks extension answers its tasks/* on a handshake session
    (where no request can declare it) with -32021 naming it; a server without it, -32601."""
    from sansio_mcp import ServerSession
    from sansio_mcp._tasks import TASKS_EXTENSION

    capabilities: dict[str, Any] = {"tools": {}}
    if offered:
        capabilities["extensions"] = {TASKS_EXTENSION: {}}
    server = ServerSession(capabilities=capabilities, server_info={"name": "s", "version": "1"})

    def send(message: dict[str, Any]) -> list[Any]:
        server.receive_data(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        data = server.data_to_send()
        return [json.loads(line) for line in data.splitlines()]

    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    send({"id": 1, "method": "initialize", "params": init})
    send({"method": "notifications/initialized"})
    for number, method in enumerate(("tasks/get", "tasks/update", "tasks/cancel"), start=2):
        (answer,) = send({"id": number, "method": method, "params": {"taskId": "t"}})
        if offered:
            assert answer["error"]["code"] == -32021
            required = answer["error"]["data"]["requiredCapabilities"]
            assert required == {"extensions": {TASKS_EXTENSION: {}}}
        else:
            assert answer["error"]["code"] == -32601


# Bounds of a translated result ---------------------------------------------------------

a2a_parts = st.one_of(
    st.builds(lambda t: {"text": t}, st.text(max_size=40)),
    st.builds(
        lambda d: {"data": d}, st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
    ),
    st.just({"kind": "text", "text": "v0.3"}),  # malformed: left out with a note
)


@given(
    artifacts=st.lists(st.lists(a2a_parts, max_size=30), max_size=6),
    history=st.lists(st.lists(a2a_parts, max_size=5), max_size=5),
    max_parts=st.integers(1, 40),
    max_bytes=st.integers(1024, 6000),
)
def test_a_result_stays_within_its_bounds_and_says_what_it_cut(
    artifacts: list[list[dict[str, Any]]],
    history: list[list[dict[str, Any]]],
    max_parts: int,
    max_bytes: int,
) -> None:
    task = {
        "id": "t",
        "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": f"a{i}", "parts": p} for i, p in enumerate(artifacts)],
        "history": [{"role": "ROLE_AGENT", "messageId": "m", "parts": p} for p in history],
    }
    limits = ResultLimits(max_parts=max_parts, max_bytes=max_bytes)
    result = task_result(
        task, context_handle="cx", task_handle="tk", with_history=True, limits=limits
    )
    envelope = result["structuredContent"]
    blocks = [b for b in result["content"] if META_KEY in b.get("_meta", {})]
    blocks += [b for m in envelope["history"] for b in m["content"]]
    entries = len(envelope["artifacts"]) + len(envelope["history"]) + ("data" in envelope)
    assert len(blocks) + entries <= max_parts
    kept = sum(
        len(json.dumps(b, separators=(",", ":"), ensure_ascii=False).encode()) for b in blocks
    )
    assert kept <= max_bytes
    total = sum(len(p) for p in artifacts) + sum(len(p) for p in history)
    malformed = sum(1 for parts in (*artifacts, *history) for p in parts if "kind" in p)
    closing = result["content"][-1]["text"]
    listed = len(envelope["artifacts"]) + len(envelope["history"])
    if len(blocks) + malformed < total or listed < len(artifacts) + len(history):
        # Something was cut: the last block and the note say so.
        assert closing.startswith("[the bridge left out ") and "maxResultParts" in closing
        assert closing[1:-1] in envelope["note"]


def test_result_bounds_are_config_keys() -> None:
    agents = {"agents": {"a": {"url": "http://localhost:1"}}}
    assert parse_config(agents).result_limits == ResultLimits(1000, 8 * 1024 * 1024)
    config = parse_config({**agents, "maxResultParts": 5, "maxResultBytes": 4096})
    assert config.result_limits == ResultLimits(5, 4096)
    for key, bad in (("maxResultParts", 0), ("maxResultBytes", 100), ("maxResultParts", "9")):
        with pytest.raises(ConfigError, match=key):
            parse_config({**agents, key: bad})


def test_live_handles_in_all_are_bounded() -> None:
    table: HandleTable[str] = HandleTable("tk_", 10.0, max_per_owner=5, max_total=2)
    first = table.mint("task-1", 0.0, "alice")
    table.mint("task-2", 0.0, "bob")
    with pytest.raises(TooManyHandles) as refused:
        table.mint("task-3", 1.0, "carol")
    assert str(refused.value) == (
        "too many live handles: the bridge already holds 2, the most maxHandles allows; "
        "a handle is freed when it expires"
    )
    assert table.mint("task-1", 1.0, "alice") == first  # a live one is still given
    assert table.mint("task-3", 10.5, "carol")  # bob's expired at 10.0
    with pytest.raises(ValueError, match="at least 1"):
        HandleTable("tk_", 10.0, max_total=0)


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdef"), st.sampled_from("xyz"), st.floats(0, 6)),
        max_size=40,
    )
)
def test_live_handles_never_pass_their_bounds(mints: list[tuple[str, str, float]]) -> None:
    """Whatever the mints, live handles stay within both bounds, and a mint is refused
    only when a new handle would pass one of them."""
    table: HandleTable[str] = HandleTable("h_", 10.0, max_per_owner=2, max_total=4)
    now = 0.0
    for value, owner, step in mints:
        now += step
        table.sweep(now)
        owned = sum(1 for _, _, who in table._values.values() if who == owner)
        total = len(table)
        live = (table._handles.get(value) or {}).get(owner) is not None
        try:
            table.mint(value, now, owner)
        except TooManyHandles:
            assert not live and (owned >= 2 or total >= 4)
        else:
            assert live or (owned < 2 and total < 4)
        owners = [who for _, _, who in table._values.values()]
        assert len(owners) <= 4 and all(owners.count(who) <= 2 for who in owners)
