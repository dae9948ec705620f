"""2025-11-25's own (experimental) tasks, on the task store and runtime the tasks
extension uses: ``params.task`` on ``tools/call`` answered with ``{"task": Task}``,
``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``, the ``tasks``
capability and the tools' ``execution.taskSupport``.  Raw wire exchanges are checked
against the 2025-11-25 schema; the client API runs on both backends over Streamable
HTTP against the bundled example server."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from sansio_mcp import MCPError
from sansio_mcp._tasks import RELATED_TASK
from sansio_mcp.runtime import ClientAPI
from sansio_mcp.runtime._client import ClientHandlers
from sansio_mcp.runtime._task_client import TaskCancelled, ToolTask
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_testing.schemas import OfficialSchema, find_schema, missing_schema_message
from trio_adapters import serve

from .harness import BACKEND_NAMES, BACKENDS, run, serving, url_for

REVISION = "2025-11-25"


@pytest.fixture(scope="module")
def schema() -> OfficialSchema:
    path = find_schema(REVISION)
    if path is None:
        pytest.skip(missing_schema_message(REVISION))
    return OfficialSchema(REVISION, path)


def valid(schema: OfficialSchema, name: str, instance: Any) -> Any:
    assert not schema.errors(name, instance), (name, schema.errors(name, instance))
    return instance


class Wire:
    """A raw 2025-11-25 session with the example server, over an in-memory stream."""

    def __init__(self, stream: trio.testing.StapledStream[Any, Any]) -> None:
        self.stream = stream
        self.buffer = b""
        self.next_id = 100
        #: Messages read while waiting for another (server requests, out of order answers).
        self.seen: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"
        await self.stream.send_all(line)

    async def _read(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.stream.receive_some()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))

    async def wait_for(self, match: Any) -> dict[str, Any]:
        for message in self.seen:
            if match(message):
                self.seen.remove(message)
                return message
        while True:
            message = await self._read()
            if match(message):
                return message
            self.seen.append(message)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        number = self.next_id
        message: dict[str, Any] = {"id": number, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.wait_for(lambda m: m.get("id") == number and "method" not in m)


async def _session(body: Any) -> None:
    client_end, server_end = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, build_server(), server_end, server_end)
        wire = Wire(client_end)
        init = {
            "protocolVersion": REVISION,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "legacy-tasks-test", "version": "1"},
        }
        await wire.send({"id": 1, "method": "initialize", "params": init})
        initialized = await wire.wait_for(lambda m: m.get("id") == 1)
        await wire.send({"method": "notifications/initialized"})
        await body(wire, initialized["result"])
        nursery.cancel_scope.cancel()


def test_the_wire_follows_the_2025_11_25_schema(schema: OfficialSchema) -> None:
    async def body(wire: Wire, initialized: dict[str, Any]) -> None:
        valid(schema, "InitializeResult", initialized)
        assert initialized["capabilities"]["tasks"] == {
            "list": {},
            "cancel": {},
            "requests": {"tools": {"call": {}}},
        }
        assert "extensions" not in initialized["capabilities"]  # the 2026 extension's
        tools = valid(schema, "ListToolsResult", (await wire.call("tools/list"))["result"])
        support = {t["name"]: t["execution"]["taskSupport"] for t in tools["tools"]}
        assert support["long_job"] == "optional" and support["approve_job"] == "required"
        assert support["echo"] == "forbidden"

        # A task: created working at once, polled, its result tied to it.
        call = {"name": "long_job", "arguments": {"seconds": 0.2, "steps": 2}, "task": {}}
        valid(schema, "CallToolRequestParams", call)
        created = valid(schema, "CreateTaskResult", (await wire.call("tools/call", call))["result"])
        task = created["task"]
        assert task["status"] == "working" and isinstance(task["pollInterval"], int)
        got = (await wire.call("tasks/get", {"taskId": task["taskId"]}))["result"]
        assert valid(schema, "GetTaskResult", got)["taskId"] == task["taskId"]
        payload = (await wire.call("tasks/result", {"taskId": task["taskId"]}))["result"]
        valid(schema, "CallToolResult", payload)
        assert payload["content"][0]["text"] == "long job done: 2 steps in 0.2 s"
        assert payload["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
        # The optional status push: each change, as a Task, ending completed.
        pushed = await wire.wait_for(
            lambda m: (
                m.get("method") == "notifications/tasks/status"
                and m["params"]["status"] == "completed"
            )
        )
        assert valid(schema, "TaskStatusNotification", pushed)["params"]["taskId"] == task["taskId"]
        listed = valid(schema, "ListTasksResult", (await wire.call("tasks/list", {}))["result"])
        (only,) = listed["tasks"]
        assert only["taskId"] == task["taskId"] and only["status"] == "completed"
        # A requested ttl shorter than the server's is honoured.
        short = {**call, "arguments": {"seconds": 0}, "task": {"ttl": 1234}}
        assert (await wire.call("tools/call", short))["result"]["task"]["ttl"] == 1234

    trio.run(_session, body)


def test_input_inside_a_task_is_a_request_tied_to_it(schema: OfficialSchema) -> None:
    async def body(wire: Wire, initialized: dict[str, Any]) -> None:
        call = {"name": "approve_job", "arguments": {"job": "deploy"}, "task": {}}
        created = (await wire.call("tools/call", call))["result"]
        task_id = created["task"]["taskId"]
        ask = await wire.wait_for(lambda m: m.get("method") == "elicitation/create")
        valid(schema, "ElicitRequest", ask)
        assert ask["params"]["_meta"][RELATED_TASK] == {"taskId": task_id}
        waiting = (await wire.call("tasks/get", {"taskId": task_id}))["result"]
        assert valid(schema, "GetTaskResult", waiting)["status"] == "input_required"
        await wire.send(
            {"id": ask["id"], "result": {"action": "accept", "content": {"approve": True}}}
        )
        payload = (await wire.call("tasks/result", {"taskId": task_id}))["result"]
        assert payload["content"][0]["text"] == "deploy: done"
        done = (await wire.call("tasks/get", {"taskId": task_id}))["result"]
        assert done["status"] == "completed"

    trio.run(_session, body)


def test_cancel_and_errors(schema: OfficialSchema) -> None:
    async def body(wire: Wire, initialized: dict[str, Any]) -> None:
        call = {"name": "approve_job", "arguments": {"job": "wait"}, "task": {}}
        task_id = (await wire.call("tools/call", call))["result"]["task"]["taskId"]
        await wire.wait_for(lambda m: m.get("method") == "elicitation/create")
        cancelled = (await wire.call("tasks/cancel", {"taskId": task_id}))["result"]
        assert valid(schema, "CancelTaskResult", cancelled)["status"] == "cancelled"
        # cancelling a task that is over, unknown ids, and tasks/result of a cancelled task
        again = await wire.call("tasks/cancel", {"taskId": task_id})
        assert again["error"]["code"] == -32602
        assert (await wire.call("tasks/get", {"taskId": "nope"}))["error"]["code"] == -32602
        assert (await wire.call("tasks/result", {"taskId": task_id}))["error"]["code"] == -32602
        # tool-level negotiation: -32601 both ways
        plain = await wire.call("tools/call", {"name": "approve_job", "arguments": {"job": "x"}})
        assert plain["error"]["code"] == -32601
        forbidden = {"name": "echo", "arguments": {"message": "x"}, "task": {}}
        assert (await wire.call("tools/call", forbidden))["error"]["code"] == -32601
        bad = {"name": "long_job", "arguments": {}, "task": {"ttl": "soon"}}
        assert (await wire.call("tools/call", bad))["error"]["code"] == -32602
        # the 2026 extension's own method does not exist here
        update = await wire.call("tasks/update", {"taskId": task_id, "inputResponses": {}})
        assert update["error"]["code"] == -32021

    trio.run(_session, body)


def test_tasks_belong_to_their_session() -> None:
    """A task id from one session is unknown to another (same server, same store)."""
    server = build_server()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            wires = []
            for number in range(2):
                client_end, server_end = trio.testing.memory_stream_pair()
                nursery.start_soon(serve, server, server_end, server_end)
                wire = Wire(client_end)
                init = {
                    "protocolVersion": REVISION,
                    "capabilities": {},
                    "clientInfo": {"name": f"c{number}", "version": "1"},
                }
                await wire.call("initialize", init)
                await wire.send({"method": "notifications/initialized"})
                wires.append(wire)
            call = {"name": "long_job", "arguments": {"seconds": 0}, "task": {}}
            task_id = (await wires[0].call("tools/call", call))["result"]["task"]["taskId"]
            assert (await wires[0].call("tasks/get", {"taskId": task_id}))["result"]
            other = await wires[1].call("tasks/get", {"taskId": task_id})
            assert other["error"]["code"] == -32602
            assert (await wires[1].call("tasks/list", {}))["result"]["tasks"] == []
            nursery.cancel_scope.cancel()

    trio.run(main)


# The client API, both backends ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_client_follows_a_2025_11_25_task(backend: str) -> None:
    statuses: list[str] = []
    handlers = ClientHandlers(
        elicitation=lambda params: {"action": "accept", "content": {"approve": True}}
    )

    async def main(port: int) -> Any:
        api = BACKENDS[backend]
        url = url_for("http", port)
        async with api.connect([], url, "http", mode="legacy", handlers=handlers) as client:
            assert client.protocol_version == REVISION
            return await body(client)

    async def body(client: ClientAPI) -> tuple[str, str, str]:
        # Before the client knows the tools' taskSupport, a plain call asks for no task.
        with pytest.raises(MCPError) as refused:
            await client.call_tool("approve_job", {"job": "ship"})
        assert refused.value.code == -32601
        # task=True fetches the listing first (the revision says to check taskSupport):
        # a tool that may not run as a task is called plainly.
        echoed = await client.call_tool("echo", {"message": "hi"}, task=True)
        assert echoed.task_id == "" and (await echoed.result())["content"][0]["text"] == "hi"
        handle = await client.call_tool("long_job", {"seconds": 0.2, "steps": 2}, task=True)
        assert isinstance(handle, ToolTask) and handle.core_form and handle.task_id
        assert handle.legacy  # the deprecated alias
        done = await handle.result(on_status=lambda t: statuses.append(t["status"]))
        approved = await client.call_tool("approve_job", {"job": "ship"}, task=True)
        slow = await client.call_tool("long_job", {"seconds": 1, "steps": 1}, task=True)
        await slow.cancel()
        with pytest.raises(TaskCancelled):
            await slow.result()
        # once listed, a task-only tool is called as a task and followed to its result
        followed = await client.call_tool("approve_job", {"job": "again"})
        assert followed["content"][0]["text"] == "again: done"
        assert followed["_meta"][RELATED_TASK]["taskId"]
        return (
            done["content"][0]["text"],
            (await approved.result())["content"][0]["text"],
            slow.status,
        )

    with serving(backend, "http", build_server()) as port:
        outcome = run(backend, main, port)
    assert outcome == ("long job done: 2 steps in 0.2 s", "ship: done", "cancelled")
    assert statuses[0] == "working" and statuses[-1] == "completed"
