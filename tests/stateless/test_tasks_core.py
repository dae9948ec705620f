"""The tasks extension's pure core (sansio_mcp/_tasks.py) and the server session's
rules for it: the status machine (every status by every trigger), task records
and their wire shapes against the ext-tasks schema, the task table's expiry, the
per-request decision, and the gating of tasks/* and listen taskIds."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import (
    MCPError,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    ServerSession,
)
from sansio_mcp._errors import InvalidParams, MissingRequiredClientCapability
from sansio_mcp._http_headers import request_headers, validate_request_headers
from sansio_mcp._tasks import (
    ANONYMOUS_OWNER,
    TASK_TRANSITIONS,
    TASKS_EXTENSION,
    TERMINAL_STATUSES,
    IllegalTaskTransition,
    TaskLimits,
    TaskRecord,
    TaskStatus,
    TaskTable,
    TaskTrigger,
    declares_tasks,
    declaring_tasks,
    iso_time,
    request_declares_tasks,
    runs_as_task,
)
from sansio_mcp._versions import META_CLIENT_CAPABILITIES
from sansio_mcp.auth import AccessToken
from sansio_mcp.runtime._tasks import task_owner

from .helpers import (
    CLIENT_CAPS,
    ELICIT_REQUEST,
    SERVER_CAPS,
    Link,
    Schema,
    discovered,
    drain,
    meta,
    raw_request,
    stateless_client,
)

TASKS_CAPS = {"extensions": {TASKS_EXTENSION: {}}}
NOW = 1_790_000_000.0


@pytest.fixture(scope="module")
def ext() -> Schema:
    return Schema("ext-tasks/draft")


def _record(status: TaskStatus, now: float = NOW) -> TaskRecord:
    """A record brought to ``status`` through the table's own moves."""
    record = TaskRecord.new(now, ttl_ms=60_000, poll_interval_ms=250)
    if status is TaskStatus.INPUT_REQUIRED:
        record.ask({"name": ELICIT_REQUEST}, now)
    elif status is TaskStatus.COMPLETED:
        record.complete({"content": [{"type": "text", "text": "done"}]}, now)
    elif status is TaskStatus.FAILED:
        record.fail(MCPError(-32603, "boom"), now)
    elif status is TaskStatus.CANCELLED:
        record.cancel(now)
    assert record.status is status
    return record


# The status machine -------------------------------------------------------------------


@given(st.sampled_from(TaskStatus), st.sampled_from(TaskTrigger), st.floats(0, 1e6))
def test_every_status_by_every_trigger(
    status: TaskStatus, trigger: TaskTrigger, later: float
) -> None:
    record = _record(status)
    before = (record.status, record.last_updated_at)
    target = TASK_TRANSITIONS.get((status, trigger))
    if target is None:
        with pytest.raises(IllegalTaskTransition):
            record.apply(trigger, NOW + later)
        assert (record.status, record.last_updated_at) == before  # nothing changed
        return
    assert record.apply(trigger, NOW + later) is target
    assert record.status is target
    assert record.last_updated_at == NOW + later
    assert (record.ended_at is not None) == (target in TERMINAL_STATUSES)


def test_terminal_statuses_have_no_moves_and_everything_starts_working() -> None:
    assert TERMINAL_STATUSES == {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
    assert not [key for key in TASK_TRANSITIONS if key[0] in TERMINAL_STATUSES]
    assert TaskRecord.new(NOW, ttl_ms=None).status is TaskStatus.WORKING
    # every status is reachable from working
    reachable = {TaskStatus.WORKING}
    while True:
        more = {t for (s, _), t in TASK_TRANSITIONS.items() if s in reachable} - reachable
        if not more:
            break
        reachable |= more
    assert reachable == set(TaskStatus)


@given(st.lists(st.text(min_size=1), min_size=1, max_size=5, unique=True))
def test_task_ids_come_from_the_injected_source(names: list[str]) -> None:
    source = iter(names)
    records = [TaskRecord.new(NOW, ttl_ms=None, new_id=lambda: next(source)) for _ in names]
    assert [r.task_id for r in records] == names
    assert [r.create_result()["taskId"] for r in records] == names


@given(
    st.lists(
        st.sampled_from(["complete", "fail", "cancel", "tool_cancel", "ask", "answer"]),
        min_size=1,
        max_size=12,
    )
)
def test_once_terminal_a_task_never_changes(steps: list[str]) -> None:
    record = TaskRecord.new(NOW, ttl_ms=1000)
    seen_terminal: dict[str, Any] | None = None
    for i, step in enumerate(steps):
        now = NOW + i
        before = record.detailed()
        try:
            if step == "complete":
                record.complete({"content": []}, now)
            elif step == "fail":
                record.fail(MCPError(-32603, "x"), now)
            elif step == "cancel":
                record.cancel(now)
            elif step == "tool_cancel":
                record.cancelled_by_tool("called off", now)
            elif step == "ask":
                record.ask({"k": ELICIT_REQUEST}, now)
            elif step == "answer":
                record.answer({key: {"action": "accept"} for key in record.pending}, now)
        except IllegalTaskTransition:
            assert record.detailed() == before  # a refused move changes nothing
        if record.terminal:
            if seen_terminal is None:
                seen_terminal = record.detailed()
            assert record.detailed() == seen_terminal


@pytest.mark.parametrize("asked", [False, True])
def test_the_tool_may_end_its_task_as_cancelled(asked: bool) -> None:
    record = TaskRecord.new(NOW, ttl_ms=1000)
    if asked:
        record.ask({"k": ELICIT_REQUEST}, NOW)
    assert record.cancelled_by_tool("the peer called it off", NOW + 1)
    assert record.status is TaskStatus.CANCELLED and not record.pending
    assert record.detailed()["statusMessage"] == "the peer called it off"
    assert record.ended_at == NOW + 1
    assert not record.cancelled_by_tool("again", NOW + 2) and not record.cancel(NOW + 2)
    assert record.status_message == "the peer called it off"


# Records and the wire ------------------------------------------------------------------


def test_input_request_keys_are_unique_over_a_tasks_life() -> None:
    record = TaskRecord.new(NOW, ttl_ms=None)
    first = record.ask({"name": ELICIT_REQUEST}, NOW)
    record.answer({"name": {"action": "accept"}}, NOW + 1)
    second = record.ask({"name": ELICIT_REQUEST, "name-2": ELICIT_REQUEST}, NOW + 2)
    assert first == {"name": "name"}
    assert len(second) == 2 and "name" not in second  # no key is reused
    assert sorted(second.values()) == ["name", "name-2"]  # each maps back to the tool's key
    assert set(record.detailed()["inputRequests"]) == set(second)


def test_updates_ignore_unknown_and_answered_keys_and_wait_for_every_key() -> None:
    record = TaskRecord.new(NOW, ttl_ms=None)
    record.ask({"a": ELICIT_REQUEST, "b": ELICIT_REQUEST}, NOW)
    assert record.answer({"zzz": {"action": "accept"}}, NOW) == {}
    assert record.answer({"a": {"action": "accept"}}, NOW + 1) == {"a": {"action": "accept"}}
    assert record.status is TaskStatus.INPUT_REQUIRED
    assert set(record.detailed()["inputRequests"]) == {"b"}
    assert record.answer({"a": {"action": "decline"}}, NOW + 2) == {}  # answered already
    record.answer({"b": {"action": "accept"}}, NOW + 3)
    assert record.status is TaskStatus.WORKING
    assert record.answers == {"a": {"action": "accept"}, "b": {"action": "accept"}}


@pytest.mark.parametrize("status", list(TaskStatus))
def test_wire_shapes_validate_against_the_extension_schema(ext: Schema, status: TaskStatus) -> None:
    record = _record(status)
    ext.validate("CreateTaskResult", _record(TaskStatus.WORKING).create_result())
    ext.validate("GetTaskResult", record.get_result())
    ext.validate("DetailedTask", record.detailed())
    ext.validate("TaskStatusNotificationParams", record.detailed())
    variant = {
        TaskStatus.WORKING: "WorkingTask",
        TaskStatus.INPUT_REQUIRED: "InputRequiredTask",
        TaskStatus.COMPLETED: "CompletedTask",
        TaskStatus.FAILED: "FailedTask",
        TaskStatus.CANCELLED: "CancelledTask",
    }[status]
    ext.validate(variant, record.detailed())
    wire = record.get_result()
    assert "requestState" not in wire and "ttl" not in wire and "pollInterval" not in wire
    assert wire["resultType"] == "complete"
    assert ("result" in wire) == (status is TaskStatus.COMPLETED)
    assert ("error" in wire) == (status is TaskStatus.FAILED)
    assert ("inputRequests" in wire) == (status is TaskStatus.INPUT_REQUIRED)


def test_create_result_is_flat() -> None:
    created = TaskRecord.new(NOW, ttl_ms=30_000, poll_interval_ms=100).create_result()
    assert created["resultType"] == "task"
    assert {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"} <= set(created)
    assert "task" not in created and "result" not in created
    assert created["createdAt"] == iso_time(NOW)


@given(st.floats(min_value=0, max_value=4e9))
def test_iso_time_is_utc_iso_8601(seconds: float) -> None:
    text = iso_time(seconds)
    assert text.endswith("Z") and "T" in text
    assert len(text) == len("2026-01-01T00:00:00.000Z")


# The table -----------------------------------------------------------------------------


@pytest.mark.parametrize("ends", [False, True])
def test_a_task_is_kept_ttl_from_its_creation_then_unknown(ends: bool) -> None:
    """Both revisions count ``ttl``/``ttlMs`` from creation: finished or not, a task
    is forgotten then."""
    table = TaskTable()
    record = TaskRecord.new(NOW, ttl_ms=2_000)
    table.add(record)
    if ends:
        record.complete({"content": []}, NOW + 1)
    assert table.get(record.task_id, NOW + 1.999) is record
    with pytest.raises(InvalidParams):
        table.get(record.task_id, NOW + 2)
    assert len(table) == 0
    with pytest.raises(InvalidParams) as caught:
        table.get("nope", NOW)
    assert caught.value.code == -32602


@given(
    input_ttl=st.none() | st.integers(1, 10**7),
    unpolled_ttl=st.none() | st.integers(1, 10**7),
    parked_after=st.floats(0, 1000),
    seen_after=st.floats(0, 1000),
    ttl=st.none() | st.integers(0, 10**7),
)
def test_an_open_task_is_overdue_at_its_earliest_bound(
    input_ttl: int | None,
    unpolled_ttl: int | None,
    parked_after: float,
    seen_after: float,
    ttl: int | None,
) -> None:
    limits = TaskLimits(input_ttl_ms=input_ttl, unpolled_ttl_ms=unpolled_ttl)
    record = TaskRecord.new(NOW, ttl_ms=ttl)
    record.seen(NOW + seen_after)
    record.ask({"k": ELICIT_REQUEST}, NOW + parked_after)
    expected = [
        at
        for at, bound in (
            (NOW + parked_after + (input_ttl or 0) / 1000, input_ttl),
            (NOW + seen_after + (unpolled_ttl or 0) / 1000, unpolled_ttl),
            (NOW + (ttl or 0) / 1000, ttl),  # the ttl, from creation
        )
        if bound is not None
    ]
    due = record.overdue(limits)
    if not expected:
        assert due is None
    else:
        assert due is not None and due[0] == min(expected)
        assert due[1].code == -32603 and due[1].data["taskId"] == record.task_id
    # Answered, the input bound no longer applies; ended, none does.
    record.answer({"k": {"action": "decline"}}, NOW + 2000)
    again = record.overdue(limits)
    assert (again is None) == (unpolled_ttl is None and ttl is None)
    record.complete({"content": []}, NOW + 2001)
    assert record.overdue(limits) is None


def test_task_caps_name_the_limit_reached() -> None:
    limits = TaskLimits(max_live=5, max_live_per_owner=2)
    limits.check_capacity(4, 1)
    limits.check_capacity(4, None)  # no owner key: only the process cap
    with pytest.raises(MCPError) as per_owner:
        limits.check_capacity(3, 2)
    assert per_owner.value.data == {"limit": "max_live_per_owner", "max": 2}
    with pytest.raises(MCPError) as per_process:
        limits.check_capacity(5, None)
    assert per_process.value.code == -32603
    assert per_process.value.data == {"limit": "max_live", "max": 5}
    TaskLimits(max_live=None, max_live_per_owner=None).check_capacity(10**9, 10**9)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError):
            TaskLimits(input_ttl_ms=bad)  # type: ignore[arg-type]


def test_ttl_must_be_non_negative() -> None:
    with pytest.raises(ValueError):
        TaskRecord.new(NOW, ttl_ms=-1)


# The per-request decision --------------------------------------------------------------


@pytest.mark.parametrize("support", [None, "optional", "required"])
@pytest.mark.parametrize("declared", [False, True])
@pytest.mark.parametrize("stateless", [False, True])
def test_runs_as_task(support: str | None, declared: bool, stateless: bool) -> None:
    caps = TASKS_CAPS if declared else {"sampling": {}}
    if support == "required" and not stateless:
        # A handshake revision before 2025-11-25 cannot declare the extension: -32601.
        with pytest.raises(MCPError) as refused:
            runs_as_task(support, caps, modern=stateless)
        assert refused.value.code == -32601 and "2025-11-25" in refused.value.message
        return
    if support == "required" and not declared:
        with pytest.raises(MissingRequiredClientCapability) as caught:
            runs_as_task(support, caps, modern=stateless)
        assert caught.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        return
    assert runs_as_task(support, caps, modern=stateless) is (
        support is not None and declared and stateless
    )


# The session's gates -------------------------------------------------------------------


def _server(tasks: bool = True) -> ServerSession:
    caps = dict(SERVER_CAPS)
    if tasks:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    return ServerSession(capabilities=caps)


def _answer(session: ServerSession) -> dict[str, Any]:
    (line,) = [x for x in session.data_to_send().split(b"\n") if x]
    return dict(json.loads(line))


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_need_the_extension_in_the_request(method: str) -> None:
    session = _server()
    params = {"taskId": "t1", "inputResponses": {}, "_meta": meta(capabilities={})}
    session.receive_data(raw_request(1, method, params))
    assert not [e for e in drain(session) if isinstance(e, RequestReceived)]
    error = _answer(session)["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    # declared: the request reaches the application
    session.receive_data(raw_request(2, method, {**params, "_meta": meta(capabilities=TASKS_CAPS)}))
    (event,) = drain(session)
    assert isinstance(event, RequestReceived) and event.method == method


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {}),
        ("tasks/get", {"taskId": 7}),
        ("tasks/update", {"taskId": "t"}),
        ("tasks/update", {"taskId": "t", "inputResponses": []}),
        ("tasks/cancel", {"taskId": None}),
    ],
)
def test_malformed_tasks_params_are_invalid_params(method: str, params: dict[str, Any]) -> None:
    session = _server()
    session.receive_data(raw_request(1, method, {**params, "_meta": meta(capabilities=TASKS_CAPS)}))
    assert not [e for e in drain(session) if isinstance(e, RequestReceived)]
    assert _answer(session)["error"]["code"] == -32602


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/list"])
def test_without_the_extension_tasks_methods_do_not_exist(method: str) -> None:
    session = _server(tasks=False)
    session.receive_data(
        raw_request(1, method, {"taskId": "t", "_meta": meta(capabilities=TASKS_CAPS)})
    )
    assert _answer(session)["error"]["code"] == -32601
    if method != "tasks/get":  # removed in v2 even where the extension is offered
        offered = _server()
        offered.receive_data(
            raw_request(1, method, {"taskId": "t", "_meta": meta(capabilities=TASKS_CAPS)})
        )
        assert _answer(offered)["error"]["code"] == -32601


def test_listen_task_ids_need_the_extension_and_get_status_pushes() -> None:
    session = _server()
    listen = {"notifications": {"taskIds": ["t1"]}, "_meta": meta(capabilities={})}
    session.receive_data(raw_request(1, "subscriptions/listen", listen))
    assert _answer(session)["error"]["code"] == -32021
    listen["_meta"] = meta(capabilities=TASKS_CAPS)
    session.receive_data(raw_request(2, "subscriptions/listen", listen))
    ack = _answer(session)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": ["t1"]}
    record = _record(TaskStatus.COMPLETED)
    assert not session.send_task_status(record.detailed())  # another task: nobody listens
    record.task_id = "t1"
    assert session.send_task_status(record.detailed())
    pushed = _answer(session)
    assert pushed["method"] == "notifications/tasks"
    assert pushed["params"]["taskId"] == "t1" and pushed["params"]["status"] == "completed"


def test_mcp_name_is_the_task_id_on_http() -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tasks/get",
        "params": {"taskId": "abc", "_meta": meta(capabilities=TASKS_CAPS)},
    }
    headers = request_headers(message)
    assert headers["Mcp-Name"] == "abc" and headers["Mcp-Method"] == "tasks/get"
    assert validate_request_headers(headers, message) is None
    wrong = validate_request_headers({**headers, "Mcp-Name": "other"}, message)
    assert wrong is not None and wrong.code == -32020


@pytest.mark.parametrize("declared", [True, False])
def test_one_request_may_declare_the_extension_its_session_does_not(declared: bool) -> None:
    link = discovered(Link(stateless_client(), _server()))
    params: dict[str, Any] = {"name": "job", "arguments": {}}
    sent = link.client.send_request("tools/call", declaring_tasks(params) if declared else params)
    (event,) = link.c2s()
    assert isinstance(event, RequestReceived)
    wire_caps = event.params["_meta"][META_CLIENT_CAPABILITIES]
    # the session's own capabilities are all still declared, the extension only if asked
    assert {k: v for k, v in wire_caps.items() if k != "extensions"} == {
        k: v for k, v in CLIENT_CAPS.items() if k != "roots"
    } | {"roots": {}}
    assert declares_tasks(wire_caps) is declared
    assert request_declares_tasks(declaring_tasks(params)) and not request_declares_tasks(params)
    created = {"resultType": "task", "taskId": "t1", "status": "working", "ttlMs": 1000}
    created |= {"createdAt": iso_time(NOW), "lastUpdatedAt": iso_time(NOW)}
    link.server.respond(event.request_id, created)
    (answer,) = link.s2c()
    # a task answers only a request that declared the extension
    if declared:
        assert isinstance(answer, ResponseReceived) and answer.request_id == sent
        assert answer.result["taskId"] == "t1"
    else:
        assert isinstance(answer, RequestFailed) and "did not declare" in answer.error.message


def test_the_owner_key_of_a_task() -> None:
    """A task's owner: the verified token's subject, else its handshake session's key
    (random, never an id() that a later session may reuse), else "anonymous"."""
    session, other = ServerSession(), ServerSession()
    assert session.key != other.key and len(session.key) == 32
    legacy = SimpleNamespace(stateless=False, session=session, auth=None)
    assert task_owner(legacy) == f"session:{session.key}"  # type: ignore[arg-type]
    token = AccessToken(token="t", subject="alice")
    for stateless in (False, True):
        signed = SimpleNamespace(stateless=stateless, session=session, auth=token)
        assert task_owner(signed) == "subject:alice"  # type: ignore[arg-type]
    anonymous = SimpleNamespace(stateless=True, session=session, auth=None)
    assert task_owner(anonymous) == ANONYMOUS_OWNER  # type: ignore[arg-type]


def test_a_task_is_found_only_for_its_owner() -> None:
    """Another owner's task answers exactly as an unknown one (-32602, same words)."""
    table = TaskTable()
    mine = TaskRecord.new(NOW, ttl_ms=None, owner="subject:alice")
    table.add(mine)
    assert table.get(mine.task_id, NOW, "subject:alice") is mine
    assert table.get(mine.task_id, NOW) is mine  # the server's own lookup
    for stranger in ("subject:bob", ANONYMOUS_OWNER, "session:x"):
        with pytest.raises(InvalidParams) as theirs:
            table.get(mine.task_id, NOW, stranger)
        with pytest.raises(InvalidParams) as unknown:
            table.get("00000000-0000-4000-8000-000000000000", NOW, stranger)
        assert theirs.value.code == unknown.value.code == -32602
        assert theirs.value.message.replace(mine.task_id, "?") == unknown.value.message.replace(
            "00000000-0000-4000-8000-000000000000", "?"
        )
    assert table.owned("subject:alice", NOW) == [mine]
    assert table.owned("subject:bob", NOW) == []


def test_listen_acknowledges_only_the_task_ids_the_caller_may_see() -> None:
    """A server running tasks: another principal's task id (or an unknown one) is left
    out of the acknowledgement, so no push about it ever reaches the caller."""
    from sansio_mcp.runtime import Server
    from sansio_mcp_apps.example_server import add_task_tools

    server = Server("owners", "1")
    add_task_tools(server)
    alices = TaskRecord.new(NOW, ttl_ms=None, owner="subject:alice")
    anonymous = TaskRecord.new(NOW, ttl_ms=None)
    for record in (alices, anonymous):
        server.tasks.store.add(record)
    asked = [alices.task_id, anonymous.task_id, "unknown"]
    listen = {"notifications": {"taskIds": asked}, "_meta": meta(capabilities=TASKS_CAPS)}
    seen = {}
    for who, auth in (
        ("bob", AccessToken(token="b", subject="bob")),
        ("alice", AccessToken(token="a", subject="alice")),
        ("nobody", None),
    ):
        session = server.create_session()
        session.auth = auth
        session.receive_data(raw_request(1, "subscriptions/listen", listen))
        ack = _answer(session)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        seen[who] = ack["params"]["notifications"].get("taskIds")
        alices.status_message = who
        assert session.send_task_status(alices.detailed()) is (who == "alice")
    assert seen == {"bob": [], "alice": [alices.task_id], "nobody": [anonymous.task_id]}
