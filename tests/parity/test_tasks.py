"""Tools run as tasks (the tasks extension) over Streamable HTTP, on both
backends: the runtime's TaskRunner behind a real server, spoken to with raw
2026-07-28 requests whose answers are checked against the ext-tasks schema."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sansio_mcp import ErrorCode, MCPError
from sansio_mcp._http_headers import request_headers
from sansio_mcp._tasks import TASKS_EXTENSION
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION
from sansio_mcp.runtime import CancelTask, ClientAPI, Context, Server, TaskLimits
from sansio_mcp.runtime._client import ClientHandlers
from sansio_mcp.runtime._task_client import TaskCancelled, ToolTask
from sansio_mcp_testing.schemas import OfficialSchema, find_schema, missing_schema_message

from .harness import BACKEND_NAMES, BACKENDS, POST_HEADERS, run, serving, url_for

STATELESS = "2026-07-28"
TASKS = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}

pytestmark = pytest.mark.parametrize("backend", BACKEND_NAMES)


class Schema(OfficialSchema):
    def validate(self, name: str, instance: Any) -> None:
        assert not self.errors(name, instance), self.errors(name, instance)


@pytest.fixture(scope="module")
def ext() -> Schema:
    path = find_schema("ext-tasks/draft")
    if path is None:
        pytest.skip(missing_schema_message("ext-tasks/draft"))
    return Schema("ext-tasks/draft", path)


class Probe:
    """What the tools saw (they run in the server's thread)."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.release = threading.Event()


def task_server(probe: Probe, **options: Any) -> Server:
    server = Server("tasks-test", "1.0", **options)

    @server.tool(task="optional")
    async def wait(ctx: Context, seconds: float) -> str:
        try:
            await ctx.sleep(seconds)
        except BaseException:
            probe.cancelled.set()
            raise
        return f"waited {seconds}"

    @server.tool(task="optional")
    async def ask_two(ctx: Context) -> str:
        await ctx.become_task()
        await ctx.report_progress(1, 2, "asking")
        answers = await ctx.request_many(
            {
                key: {
                    "method": "elicitation/create",
                    "params": {"message": key, "requestedSchema": NAME_SCHEMA},
                }
                for key in ("first", "second")
            }
        )
        again = await ctx.elicit("once more", NAME_SCHEMA, key="first")
        names = [answers["first"], answers["second"], again]
        return " ".join(str((a.get("content") or {}).get("name")) for a in names)

    @server.tool(task="required")
    async def gather_then_work(ctx: Context) -> str:
        answer = await ctx.elicit("name?", NAME_SCHEMA, key="who")
        await ctx.sleep(0.05)
        return f"hello {(answer.get('content') or {}).get('name')}"

    @server.tool(task="optional")
    async def broken(ctx: Context) -> str:
        await ctx.sleep(0.01)
        raise MCPError(ErrorCode.INTERNAL_ERROR, "broken on purpose")

    @server.tool(task="optional")
    async def tool_error(ctx: Context) -> str:
        await ctx.sleep(0.01)
        raise RuntimeError("a tool error")

    @server.tool(task="optional")
    async def deferred(ctx: Context, mode: str) -> str:
        with ctx.defer_task():
            await ctx.sleep(0.1)  # a real wait that creates no task
            if mode == "task":
                await ctx.become_task()
                await ctx.sleep(0.05)
            elif mode == "plain":
                return "answered after a wait, as no task"
        await ctx.sleep(0.05)  # outside the block, the first wait creates it
        return f"{mode}: done as a task"

    @server.tool(task="optional")
    async def called_off(ctx: Context) -> str:
        await ctx.sleep(0.05)
        raise CancelTask("the peer called it off")

    return server


def _message(method: str, params: dict[str, Any], caps: dict[str, Any] | None) -> dict[str, Any]:
    meta = {
        META_PROTOCOL_VERSION: STATELESS,
        META_CLIENT_CAPABILITIES: TASKS if caps is None else caps,
        META_CLIENT_INFO: {"name": "tasks-test", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}


def _send(conn: http.client.HTTPConnection, message: dict[str, Any]) -> http.client.HTTPResponse:
    headers = {**POST_HEADERS, **request_headers(message)}
    conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
    return conn.getresponse()


def post(
    port: int, method: str, params: dict[str, Any], caps: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One 2026-07-28 request; the JSON-RPC response."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        response = _send(conn, _message(method, params, caps))
        body = response.read().decode()
    finally:
        conn.close()
    if "text/event-stream" in (response.getheader("content-type") or ""):
        found = [
            json.loads(line[5:])
            for line in body.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
        return next(m for m in found if m.get("id") == 1)
    return dict(json.loads(body))


def result(port: int, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
    answer = post(port, method, params, **kw)
    assert "result" in answer, answer
    return dict(answer["result"])


def poll(
    port: int, task_id: str, until: Callable[[dict[str, Any]], bool], timeout: float = 10
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = result(port, "tasks/get", {"taskId": task_id})
        if until(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
def port(backend: str, probe: Probe) -> Iterator[int]:
    with serving(
        backend, "http", task_server(probe, task_ttl_ms=3000, task_poll_interval_ms=100)
    ) as bound:
        yield bound


def test_a_task_runs_in_the_background_and_keeps_its_result(port: int, ext: Schema) -> None:
    created = result(port, "tools/call", {"name": "wait", "arguments": {"seconds": 0.2}})
    ext.validate("CreateTaskResult", {k: v for k, v in created.items() if k != "_meta"})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["ttlMs"] == 3000 and isinstance(created["pollIntervalMs"], int)
    task_id = created["taskId"]
    working = result(port, "tasks/get", {"taskId": task_id})
    assert working["status"] == "working" and "result" not in working
    done = poll(port, task_id, lambda t: t["status"] == "completed")
    ext.validate("GetTaskResult", done)
    assert done["result"]["content"][0]["text"] == "waited 0.2"
    assert "io.modelcontextprotocol/related-task" not in (done["result"].get("_meta") or {})
    # kept until ttlMs after its creation, then forgotten (-32602)
    assert result(port, "tasks/get", {"taskId": task_id})["status"] == "completed"
    deadline = time.monotonic() + 10
    while "result" in (gone := post(port, "tasks/get", {"taskId": task_id})):
        assert time.monotonic() < deadline, gone
        time.sleep(0.05)
    assert gone["error"]["code"] == -32602


def test_without_the_extension_the_call_is_answered_at_once(port: int) -> None:
    plain = result(port, "tools/call", {"name": "wait", "arguments": {"seconds": 0}}, caps={})
    assert plain["resultType"] == "complete" and "taskId" not in plain
    refused = post(port, "tools/call", {"name": "gather_then_work", "arguments": {}}, caps={})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"] == {"extensions": {TASKS_EXTENSION: {}}}


def test_input_inside_a_task_goes_through_tasks_update(port: int, ext: Schema) -> None:
    task_id = result(port, "tools/call", {"name": "ask_two", "arguments": {}})["taskId"]
    asked = poll(port, task_id, lambda t: t["status"] == "input_required")
    ext.validate("GetTaskResult", asked)
    assert set(asked["inputRequests"]) == {"first", "second"}
    assert asked["statusMessage"] == "asking"  # progress messages become the status message
    answer = {"action": "accept", "content": {"name": "ada"}}
    ack = result(port, "tasks/update", {"taskId": task_id, "inputResponses": {"first": answer}})
    assert {k for k in ack if k != "_meta"} == {"resultType"}
    partial = result(port, "tasks/get", {"taskId": task_id})
    assert partial["status"] == "input_required" and set(partial["inputRequests"]) == {"second"}
    # unknown and already answered keys are ignored
    result(
        port,
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {"first": {"action": "decline"}, "nope": {}, "second": answer},
        },
    )
    again = poll(port, task_id, lambda t: t["status"] == "input_required")
    (key,) = again["inputRequests"]
    assert key not in ("first", "second")  # a key is never reused within a task
    bob = {"action": "accept", "content": {"name": "bob"}}
    result(port, "tasks/update", {"taskId": task_id, "inputResponses": {key: bob}})
    done = poll(port, task_id, lambda t: t["status"] == "completed")
    assert done["result"]["content"][0]["text"] == "ada ada bob"


def test_cancel_cancels_the_handler_and_is_idempotent(port: int, probe: Probe) -> None:
    task_id = result(port, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})["taskId"]
    ack = result(port, "tasks/cancel", {"taskId": task_id})
    assert ack["resultType"] == "complete" and "status" not in ack
    assert probe.cancelled.wait(5)
    assert result(port, "tasks/get", {"taskId": task_id})["status"] == "cancelled"
    assert result(port, "tasks/cancel", {"taskId": task_id})["resultType"] == "complete"
    assert post(port, "tasks/cancel", {"taskId": "no-such-task"})["error"]["code"] == -32602


def test_errors_complete_or_fail_the_task(port: int) -> None:
    task_id = result(port, "tools/call", {"name": "tool_error", "arguments": {}})["taskId"]
    done = poll(port, task_id, lambda t: t["status"] != "working")
    assert done["status"] == "completed" and done["result"]["isError"] is True
    task_id = result(port, "tools/call", {"name": "broken", "arguments": {}})["taskId"]
    failed = poll(port, task_id, lambda t: t["status"] != "working")
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"] == {"code": -32603, "message": "broken on purpose"}


def test_input_before_the_task_is_gathered_by_mrtr(port: int) -> None:
    first = result(port, "tools/call", {"name": "gather_then_work", "arguments": {}})
    assert first["resultType"] == "input_required" and "taskId" not in first
    answer = {"action": "accept", "content": {"name": "grace"}}
    second = result(
        port,
        "tools/call",
        {
            "name": "gather_then_work",
            "arguments": {},
            "inputResponses": {"who": answer},
            "requestState": first["requestState"],
        },
    )
    assert second["resultType"] == "task" and "requestState" not in second
    done = poll(port, second["taskId"], lambda t: t["status"] == "completed")
    assert done["result"]["content"][0]["text"] == "hello grace"


def test_status_changes_reach_a_listen_stream(port: int) -> None:
    task_id = result(port, "tools/call", {"name": "wait", "arguments": {"seconds": 0.3}})["taskId"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        listen = {"notifications": {"taskIds": [task_id]}}
        response = _send(conn, _message("subscriptions/listen", listen, None))
        seen: list[dict[str, Any]] = []
        while not any(m.get("method") == "notifications/tasks" for m in seen):
            line = response.fp.readline().decode()
            assert line, "the listen stream ended"
            if line.startswith("data:") and line[5:].strip():
                seen.append(json.loads(line[5:]))
    finally:
        conn.close()
    ack = seen[0]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    pushed = next(m for m in seen if m.get("method") == "notifications/tasks")["params"]
    assert pushed["taskId"] == task_id and pushed["status"] == "completed"
    assert pushed["result"]["content"][0]["text"] == "waited 0.3"


def test_a_deferred_wait_creates_no_task(port: int, ext: Schema) -> None:
    began = time.monotonic()
    plain = result(port, "tools/call", {"name": "deferred", "arguments": {"mode": "plain"}})
    assert time.monotonic() - began >= 0.1  # the call waited for the handler's answer
    assert plain["resultType"] == "complete" and "taskId" not in plain
    assert plain["content"][0]["text"] == "answered after a wait, as no task"
    for mode in ("task", "after"):
        began = time.monotonic()
        created = result(port, "tools/call", {"name": "deferred", "arguments": {"mode": mode}})
        assert time.monotonic() - began >= 0.1
        ext.validate("CreateTaskResult", {k: v for k, v in created.items() if k != "_meta"})
        assert created["resultType"] == "task"
        done = poll(port, created["taskId"], lambda t: t["status"] == "completed")
        assert done["result"]["content"][0]["text"] == f"{mode}: done as a task"


def test_a_tool_may_end_its_task_as_cancelled(port: int, ext: Schema) -> None:
    task_id = result(port, "tools/call", {"name": "called_off", "arguments": {}})["taskId"]
    ended = poll(port, task_id, lambda t: t["status"] != "working")
    ext.validate("GetTaskResult", ended)
    assert ended["status"] == "cancelled" and ended["statusMessage"] == "the peer called it off"
    assert "result" not in ended and "error" not in ended
    # no task: an ordinary tool error
    plain = result(port, "tools/call", {"name": "called_off", "arguments": {}}, caps={})
    assert plain["isError"] is True and "the peer called it off" in plain["content"][0]["text"]


# The client API ------------------------------------------------------------------------


def _client_run(backend: str, port: int, body: Callable[..., Any], **handlers: Any) -> Any:
    async def main() -> Any:
        api = BACKENDS[backend]
        async with api.connect(
            [], url_for("http", port), "http", mode="modern", handlers=ClientHandlers(**handlers)
        ) as client:
            return await body(client)

    return run(backend, main)


def _elicit_name(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": f"<{params['message']}>"}}


def test_call_tool_follows_a_task_and_answers_its_input(backend: str, port: int) -> None:
    statuses: list[str] = []

    async def body(client: ClientAPI) -> dict[str, Any]:
        return await client.call_tool(
            "ask_two", {}, on_status=lambda t: statuses.append(t["status"])
        )

    outcome = _client_run(backend, port, body, elicitation=_elicit_name, tasks=True)
    assert outcome["content"][0]["text"] == "<first> <second> <once more>"
    # The CreateTaskResult is the task as created, so always working, however fast the
    # tool reaches its first input request.
    assert statuses[0] == "working" and statuses[-1] == "completed"
    assert "input_required" in statuses


def test_call_tool_answers_mrtr_rounds_then_follows_the_task(backend: str, port: int) -> None:
    async def body(client: ClientAPI) -> dict[str, Any]:
        return await client.call_tool("gather_then_work", {})

    outcome = _client_run(backend, port, body, elicitation=_elicit_name, tasks=True)
    assert outcome["content"][0]["text"] == "hello <name?>"


def test_task_handle_polls_and_cancels(backend: str, port: int, probe: Probe) -> None:
    async def body(client: ClientAPI) -> tuple[str, str, str]:
        handle = await client.call_tool("wait", {"seconds": 30}, task=True)
        assert isinstance(handle, ToolTask) and handle.poll_interval == 0.1
        first = (await handle.refresh())["status"]
        await handle.cancel()
        with pytest.raises(TaskCancelled):
            await handle.result()
        quick = await client.call_tool("wait", {"seconds": 0.05}, task=True)
        text = (await quick.result())["content"][0]["text"]
        return first, handle.status, text

    first, final, text = _client_run(backend, port, body, tasks=True)
    assert (first, final, text) == ("working", "cancelled", "waited 0.05")
    assert probe.cancelled.wait(5)


def test_task_failures_raise_and_required_tools_need_the_extension(backend: str, port: int) -> None:
    async def with_tasks(client: ClientAPI) -> None:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("broken", {})
        assert caught.value.code == -32603 and caught.value.message == "broken on purpose"

    _client_run(backend, port, with_tasks, tasks=True)

    async def without(client: ClientAPI) -> dict[str, Any]:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("gather_then_work", {})
        assert caught.value.code == -32021
        handle = await client.call_tool("wait", {"seconds": 0}, task=True)
        assert handle.done and handle.task_id == ""  # answered at once: no task
        return await handle.result()

    assert _client_run(backend, port, without)["content"][0]["text"] == "waited 0"

    async def called_off(client: ClientAPI) -> None:
        with pytest.raises(TaskCancelled):
            await client.call_tool("called_off", {})

    _client_run(backend, port, called_off, tasks=True)


def test_listen_follows_a_task(backend: str, port: int) -> None:
    async def body(client: ClientAPI) -> list[dict[str, Any]]:
        handle = await client.call_tool("wait", {"seconds": 0.2}, task=True)
        pushed: list[dict[str, Any]] = []
        async with client.listen(task_ids=[handle.task_id]) as subscription:
            assert subscription.acknowledged_filter == {"taskIds": [handle.task_id]}
            async for method, params in subscription:
                assert method == "notifications/tasks"
                pushed.append(params)
                if params["status"] == "completed":
                    break
        return pushed

    pushed = _client_run(backend, port, body, tasks=True)
    assert pushed[-1]["result"]["content"][0]["text"] == "waited 0.2"


def test_cancelled_and_stopped_tasks_leave_nothing_running(backend: str, probe: Probe) -> None:
    server = task_server(probe, task_ttl_ms=60_000, task_poll_interval_ms=100)
    with serving(backend, "http", server) as bound:
        cancelled = result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})
        result(bound, "tasks/cancel", {"taskId": cancelled["taskId"]})
        # Not running once the cancel is answered, though its tool may still unwind.
        assert server.tasks.running == 0
        assert probe.cancelled.wait(5)
        probe.cancelled.clear()
        orphan = result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})
        assert server.tasks.running == 1
    # The server stopped under a running task: the task failed (so it can expire).
    assert probe.cancelled.is_set() and server.tasks.running == 0
    record = server.tasks.store.get(orphan["taskId"], time.time())
    assert record.status.value == "failed" and record.error is not None
    assert server.tasks.store.get(cancelled["taskId"], time.time()).status.value == "cancelled"


# Bounds: caps on live tasks, parked and unpolled tasks given up (TaskLimits) ---------


def test_live_tasks_are_capped_per_client_and_per_process(backend: str, probe: Probe) -> None:
    """Beyond a cap, a task-capable call is refused with -32603 naming the limit; once a
    task ends, its slot is free again.  2025-11-25 sessions are the owners here (the
    owner key the runner has today); stateless calls without a token count only
    towards the process cap."""
    limits = TaskLimits(max_live=3, max_live_per_owner=2)
    server = task_server(probe, task_ttl_ms=60_000, task_poll_interval_ms=100, task_limits=limits)

    async def main(port: int) -> None:
        api = BACKENDS[backend]
        url = url_for("http", port)
        async with (
            api.connect([], url, "http", mode="legacy") as first,
            api.connect([], url, "http", mode="legacy") as second,
        ):
            mine = [await first.call_tool("wait", {"seconds": 30}, task=True) for _ in range(2)]
            with pytest.raises(MCPError) as per_client:
                await first.call_tool("wait", {"seconds": 30}, task=True)
            assert per_client.value.code == -32603
            assert per_client.value.data == {"limit": "max_live_per_owner", "max": 2}
            assert "this client has 2" in per_client.value.message
            theirs = await second.call_tool("wait", {"seconds": 30}, task=True)
            with pytest.raises(MCPError) as per_process:
                await second.call_tool("wait", {"seconds": 30}, task=True)
            assert per_process.value.data == {"limit": "max_live", "max": 3}
            await mine[0].cancel()
            while server.tasks.running > 2:
                await api.sleep(0.01)
            again = await second.call_tool("wait", {"seconds": 30}, task=True)
            assert again.task_id and not again.done
            for task in (mine[1], theirs, again):
                await task.cancel()

    with serving(backend, "http", server) as bound:
        run(backend, lambda: main(bound))
        deadline = time.monotonic() + 5
        while server.tasks.running and time.monotonic() < deadline:
            time.sleep(0.01)
        # A stateless call without a token has no owner: only the process cap counts.
        created = [
            result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})
            for _ in range(3)
        ]
        refused = post(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})
        assert refused["error"]["data"] == {"limit": "max_live", "max": 3}
        for task in created:
            result(bound, "tasks/cancel", {"taskId": task["taskId"]})


def test_a_task_parked_on_input_expires(backend: str, probe: Probe) -> None:
    """A task whose input requests go unanswered for ``input_ttl_ms`` fails with an
    error saying so, its tool is cancelled and its slot freed."""
    server = task_server(
        probe,
        task_ttl_ms=60_000,
        task_poll_interval_ms=100,
        task_limits=TaskLimits(input_ttl_ms=300),
    )
    with serving(backend, "http", server) as bound:
        task_id = result(bound, "tools/call", {"name": "ask_two", "arguments": {}})["taskId"]
        parked = poll(bound, task_id, lambda t: t["status"] != "working")
        assert parked["status"] == "input_required"
        failed = poll(bound, task_id, lambda t: t["status"] != "input_required")
        assert failed["status"] == "failed", failed
        assert failed["error"]["code"] == -32603
        assert failed["error"]["data"] == {"taskId": task_id, "inputTtlMs": 300}
        assert "waited for input longer than 300 ms" in failed["error"]["message"]
        assert server.tasks.running == 0
        # The failed task is kept for its ttlMs like any other, and cannot be answered.
        late = {"first": {"action": "accept", "content": {"name": "late"}}}
        result(bound, "tasks/update", {"taskId": task_id, "inputResponses": late})
        assert result(bound, "tasks/get", {"taskId": task_id})["status"] == "failed"


def test_a_task_no_client_asks_about_is_given_up(backend: str, probe: Probe) -> None:
    """With ``unpolled_ttl_ms``, a task nobody polls fails and its tool is cancelled;
    one that is polled keeps running."""
    limits = TaskLimits(unpolled_ttl_ms=400)
    server = task_server(probe, task_ttl_ms=60_000, task_poll_interval_ms=100, task_limits=limits)
    with serving(backend, "http", server) as bound:
        kept = result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 1.2}})
        orphan = result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})
        done = poll(bound, kept["taskId"], lambda t: t["status"] != "working")
        assert done["status"] == "completed"  # polled every 20 ms: never given up
        assert probe.cancelled.wait(5)
        given_up = result(bound, "tasks/get", {"taskId": orphan["taskId"]})
        assert given_up["status"] == "failed"
        assert given_up["error"]["data"] == {"taskId": orphan["taskId"], "unpolledTtlMs": 400}
        assert server.tasks.running == 0


def test_a_2025_11_25_task_waiting_on_its_client_expires(backend: str, probe: Probe) -> None:
    """On a 2025-11-25 session the input request goes to the client; a client that never
    answers leaves the task input_required until ``input_ttl_ms``: then it fails and its
    tool is cancelled."""
    limits = TaskLimits(input_ttl_ms=300)
    server = task_server(probe, task_ttl_ms=60_000, task_poll_interval_ms=100, task_limits=limits)

    async def never(params: dict[str, Any]) -> dict[str, Any]:
        await BACKENDS[backend].sleep(60)
        return {"action": "decline"}

    async def main(port: int) -> dict[str, Any]:
        api = BACKENDS[backend]
        handlers = ClientHandlers(elicitation=never)
        async with api.connect(
            [], url_for("http", port), "http", mode="legacy", handlers=handlers
        ) as client:
            task = await client.call_tool("ask_two", {}, task=True)
            while (await task.refresh())["status"] in ("working", "input_required"):
                await api.sleep(0.05)
            return task.last

    with serving(backend, "http", server) as bound:
        final = run(backend, lambda: main(bound))
    assert final["status"] == "failed", final
    assert server.tasks.running == 0


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_task_that_never_ends_expires_ttl_after_its_creation(
    backend: str, probe: Probe, era: str
) -> None:
    """ttl/ttlMs count from creation: a task still running when its ttl is over is
    stopped (its tool cancelled) and forgotten (-32602 as an unknown id)."""
    server = task_server(probe, task_ttl_ms=300, task_poll_interval_ms=100)

    async def legacy(port: int) -> tuple[str, MCPError]:
        api = BACKENDS[backend]
        async with api.connect([], url_for("http", port), "http", mode="legacy") as client:
            task = await client.call_tool("wait", {"seconds": 30}, task=True)
            assert task.task_id and task.last["ttl"] == 300
            while True:
                try:
                    await task.refresh()
                except MCPError as gone:
                    return task.task_id, gone
                await api.sleep(0.05)

    with serving(backend, "http", server) as bound:
        if era == "2025-11-25":
            task_id, gone = run(backend, lambda: legacy(bound))
            assert gone.code == -32602 and task_id in gone.message
        else:
            created = result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 30}})
            assert created["ttlMs"] == 300
            deadline = time.monotonic() + 10
            while "result" in (answer := post(bound, "tasks/get", {"taskId": created["taskId"]})):
                assert time.monotonic() < deadline, answer
                time.sleep(0.02)
            assert answer["error"]["code"] == -32602
        assert probe.cancelled.wait(5)
        assert server.tasks.running == 0 and len(server.tasks.store) == 0  # type: ignore[arg-type]


def test_an_injected_id_source_names_the_tasks(backend: str, probe: Probe) -> None:
    counter = iter(range(1, 100))
    server = task_server(probe, new_task_id=lambda: f"task-{next(counter)}")
    with serving(backend, "http", server) as bound:
        ids = [
            result(bound, "tools/call", {"name": "wait", "arguments": {"seconds": 0.01}})["taskId"]
            for _ in range(2)
        ]
        assert ids == ["task-1", "task-2"]
        done = poll(bound, "task-2", lambda t: t["status"] == "completed")
        assert done["result"]["content"][0]["text"] == "waited 0.01"
