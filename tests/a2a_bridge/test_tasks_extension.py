"""Long tasks with the tasks extension (2026-07-28 only): ``a2a_send_message`` answers
with a ``CreateTaskResult``; ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` follow
the A2A task, streamed (the fixture's card declares streaming) or polled with GetTask
(a fixture started with ``--no-streaming``).  On the 2025-11-25 route there are no
tasks: ``tasks/*`` is -32021."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sansio_mcp.runtime import ClientAPI, ClientHandlers, TransportBackend
from sansio_mcp.tasks import ANONYMOUS_OWNER
from sansio_mcp_apps.a2a.runtime import TASKS_EXTENSION, A2ABridge, TaskRef
from tests.parity.test_legacy_tasks import valid
from tests.parity.test_task_revisions import official

from .conftest import config_for, running_agent, serving


@pytest.fixture(scope="module", params=["streaming", "polling"])
def task_agent(request: pytest.FixtureRequest) -> Iterator[str]:
    extra = () if request.param == "streaming" else ("--no-streaming",)
    with running_agent(*extra) as (url, _):
        yield url


def agent_tasks(agent_url: str, first_text: str) -> list[dict[str, Any]]:
    """The agent's tasks that began with ``first_text`` (ListTasks)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    answer = httpx.post(agent_url, json=request, headers={"A2A-Version": "1.0"}, timeout=10)
    return [
        task
        for task in answer.json()["result"]["tasks"]
        if task["history"][0]["parts"][0].get("text") == first_text
    ]


def agent_states(agent_url: str, first_text: str) -> list[str]:
    """The states of the agent's tasks that began with ``first_text``."""
    return [task["status"]["state"] for task in agent_tasks(agent_url, first_text)]


def run(
    backend: TransportBackend,
    agent_url: str,
    body: Any,
    config: dict[str, Any] | None = None,
    **handlers: Any,
) -> Any:
    async def main() -> Any:
        async def use(url: str, bridge: A2ABridge) -> Any:
            async with backend.fail_after(60):
                options = {"mode": "modern", "handlers": ClientHandlers(tasks=True, **handlers)}
                async with backend.connect([], url, None, **options) as client:
                    return await body(client, bridge, url)

        return await serving(backend, config_for(agent_url, **(config or {})), use)

    return backend.run(main)


def test_task_lifecycle(backend: TransportBackend, task_agent: str) -> None:
    asked: list[str] = []

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        if "nope" in params["message"]:
            return {"action": "decline"}
        asked.append(params["message"])
        return {"action": "accept", "content": {"answer": f"v{len(asked)}"}}

    async def body(client: ClientAPI, bridge: A2ABridge, url: str) -> None:
        assert TASKS_EXTENSION in client.server_capabilities["extensions"]

        # A slow task: a CreateTaskResult at once, working while the agent works.
        statuses: list[dict[str, Any]] = []
        task = await client.call_tool("a2a_send_message", {"text": "slow: 600"}, task=True)
        assert task.task_id and not task.done
        result = await task.result(on_status=statuses.append)
        assert result["structuredContent"].get("a2aState") == "TASK_STATE_COMPLETED", result
        assert result["content"][-1]["text"] == "slow 600 ms" or "slept 600 ms" in str(result)
        assert statuses[0]["status"] == "working"
        assert any("working for 600 ms" in (s.get("statusMessage") or "") for s in statuses)
        assert statuses[-1]["status"] == "completed"

        # Two rounds of input, each parking the task on a form (tasks/update answers).
        two = await client.call_tool("a2a_send_message", {"text": "ask2: pair"})
        assert two["content"][-1]["text"] == "pair: v1, v2"
        assert asked == ["What value should I use for pair?", "And a second value for pair?"]

        # Failures the agent reports are completed tasks whose result is a tool error.
        rejected = await client.call_tool("a2a_send_message", {"text": "reject"})
        assert rejected["isError"] is True
        assert rejected["structuredContent"]["a2aState"] == "TASK_STATE_REJECTED"
        # No A2A task, no MCP task: a direct Message, or an A2A error, is a plain result.
        direct = await client.call_tool("a2a_send_message", {"text": "echo: direct"}, task=True)
        assert direct.done and direct.task_id == ""
        message = await direct.result()
        assert message["structuredContent"]["kind"] == "message"
        assert message["content"][0]["text"] == "direct"
        refused = await client.call_tool("a2a_send_message", {"text": "error:-32004"}, task=True)
        assert refused.done and refused.task_id == ""
        assert (await refused.result())["structuredContent"]["a2aErrorCode"] == -32004

        # CANCELED without tasks/cancel (the agent gave up; the user declined its question):
        # the MCP task ends cancelled, the taskHandle and the why in its statusMessage.
        for text, why in (("giveup", "I gave up on this task"), ("ask: nope", "declined")):
            ended = await (
                await client.call_tool("a2a_send_message", {"text": text}, task=True)
            ).wait()
            assert ended["status"] == "cancelled", ended
            assert why in ended["statusMessage"] and "taskHandle tk_" in ended["statusMessage"]
            assert "result" not in ended

        # tasks/cancel: the MCP task is cancelled, and so is the agent's.
        before = await backend.to_thread(agent_states, task_agent, "slow: 8000")
        long = await client.call_tool("a2a_send_message", {"text": "slow: 8000"}, task=True)
        while not (await long.refresh()).get("statusMessage"):
            await client.sleep(0.05)
        await long.cancel()
        assert (await long.refresh())["status"] == "cancelled"
        for _ in range(100):
            states = await backend.to_thread(agent_states, task_agent, "slow: 8000")
            if states == ["TASK_STATE_CANCELED"] * (len(before) + 1):
                break
            await client.sleep(0.05)
        else:
            pytest.fail(f"the agent's task was not cancelled: {states}")

    run(backend, task_agent, body, elicitation=elicitation)


def test_a2a_cancel_task_ends_a_running_task_cancelled(
    backend: TransportBackend, task_agent: str
) -> None:
    """a2a_cancel_task, from another call, on the A2A task an MCP task follows: the MCP
    task ends cancelled (not completed), naming the task's handle."""

    async def body(client: ClientAPI, bridge: A2ABridge, url: str) -> None:
        text = "slow: 7000"
        before = {t["id"] for t in await backend.to_thread(agent_tasks, task_agent, text)}
        long = await client.call_tool("a2a_send_message", {"text": text}, task=True)
        while not (await long.refresh()).get("statusMessage"):
            await client.sleep(0.05)
        tasks = await backend.to_thread(agent_tasks, task_agent, text)
        (new,) = [t for t in tasks if t["id"] not in before]
        # The bridge gives the same live handle to the same task.
        ref = TaskRef("fixture", new["id"], new["contextId"])
        handle = await bridge.tasks.mint(ref, ANONYMOUS_OWNER)
        stopped = await client.call_tool("a2a_cancel_task", {"taskHandle": handle})
        assert stopped["structuredContent"]["a2aState"] == "TASK_STATE_CANCELED"
        final = await long.wait()
        assert final["status"] == "cancelled", final
        assert f"taskHandle {handle}" in final["statusMessage"]

    run(backend, task_agent, body)


def test_lost_task_fails(backend: TransportBackend, task_agent: str) -> None:
    """An A2A task the agent drops while the bridge follows it: the MCP task fails,
    the A2A code in ``error.data``."""

    async def body(client: ClientAPI, bridge: A2ABridge, url: str) -> None:
        task = await client.call_tool("a2a_send_message", {"text": "vanish"}, task=True)
        final = await task.wait()
        assert final["status"] == "failed"
        assert final["error"]["code"] == -32603
        assert final["error"]["data"] == {"agent": "fixture", "a2aErrorCode": -32001}

    run(backend, task_agent, body)


def _post(url: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    response = httpx.post(
        url,
        json=body,
        headers={"accept": "application/json, text/event-stream", **headers},
        timeout=10,
    )
    return response.json()  # type: ignore[no-any-return]


def _answer(body: str) -> dict[str, Any]:
    """The JSON-RPC answer in a JSON or an SSE response body."""
    if body.lstrip().startswith("{"):
        return dict(json.loads(body))
    lines = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    data = [json.loads(line) for line in lines if line]  # a priming event has no data
    return next(m for m in data if "id" in m and "method" not in m)


def test_tasks_on_each_route(backend: TransportBackend, task_agent: str) -> None:
    """The 2026-07-28 route serves the extension (-32021 for a request that did not
    declare it; a CreateTaskResult with an empty content array); the 2025-11-25 route
    serves no tasks: no tasks capability, a2a_send_message not task-capable, params.task
    ignored, every tasks/* -32021 naming the extension.  The official schemas check it."""
    stateless_schema, ext, legacy_schema = (
        official("2026-07-28"),
        official("ext-tasks/draft"),
        official("2025-11-25"),
    )
    declared = {"extensions": {TASKS_EXTENSION: {}}}

    async def body(client: ClientAPI, bridge: A2ABridge, url: str) -> None:
        def stateless(method: str, params: dict[str, Any], capabilities: Any) -> dict[str, Any]:
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            }
            request = {"jsonrpc": "2.0", "id": 1, "method": method}
            request["params"] = {"_meta": meta, **params}
            headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
            headers["mcp-name"] = params.get("taskId") or params.get("name", "")
            return _post(url, request, **headers)

        def stateless_route() -> None:
            undeclared = stateless("tasks/get", {"taskId": "nope"}, {})
            assert undeclared["error"]["code"] == -32021
            assert TASKS_EXTENSION in str(undeclared["error"]["data"])
            unknown = stateless("tasks/get", {"taskId": "nope"}, declared)
            assert unknown["error"]["code"] == -32602  # an unknown task id
            call = {"name": "a2a_send_message", "arguments": {"text": "slow: 600"}}
            created = stateless("tools/call", call, declared)["result"]
            assert created["resultType"] == "task" and created["content"] == []
            valid(ext, "CreateTaskResult", created)
            assert not stateless_schema.errors("CallToolResult", created)  # what SDKs check
            stateless("tasks/cancel", {"taskId": created["taskId"]}, declared)

        def legacy_route() -> None:
            with httpx.Client(timeout=10) as http:
                accept = {"accept": "application/json, text/event-stream"}
                init = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tasks": {"list": {}, "cancel": {}}},
                    "clientInfo": {"name": "t", "version": "1"},
                }
                first = http.post(
                    url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                    headers=accept,
                )
                initialized = valid(legacy_schema, "InitializeResult", first.json()["result"])
                assert "tasks" not in initialized["capabilities"]
                headers = {
                    **accept,
                    "mcp-session-id": first.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-11-25",
                }
                http.post(
                    url,
                    json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers=headers,
                )

                def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
                    asked = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
                    return _answer(http.post(url, json=asked, headers=headers).text)

                listed = valid(legacy_schema, "ListToolsResult", ask("tools/list", {})["result"])
                send = next(t for t in listed["tools"] if t["name"] == "a2a_send_message")
                assert (send.get("execution") or {}).get("taskSupport", "forbidden") == "forbidden"
                call = {"name": "a2a_send_message", "arguments": {"text": "hello"}, "task": {}}
                answered = ask("tools/call", call)["result"]  # the augmentation is ignored
                assert "task" not in answered
                valid(legacy_schema, "CallToolResult", answered)
                for method in ("tasks/get", "tasks/result", "tasks/cancel", "tasks/list"):
                    params = {} if method == "tasks/list" else {"taskId": "x"}
                    error = ask(method, params)["error"]
                    assert error["code"] == -32021, (method, error)
                    assert error["data"] == {"requiredCapabilities": declared}, method

        await backend.to_thread(stateless_route)
        await backend.to_thread(legacy_route)

    run(backend, task_agent, body)


@pytest.mark.parametrize("mode", ["streaming", "polling"])
def test_agent_killed_mid_task(backend: TransportBackend, mode: str) -> None:
    """The agent dies while its task runs: the MCP task fails, naming the agent."""
    with running_agent(*(() if mode == "streaming" else ("--no-streaming",))) as (url, process):

        async def body(client: ClientAPI, bridge: A2ABridge, bridge_url: str) -> None:
            task = await client.call_tool("a2a_send_message", {"text": "slow: 8000"}, task=True)
            while not (await task.refresh()).get("statusMessage"):
                await client.sleep(0.05)
            process.kill()
            final = await task.wait()
            assert final["status"] == "failed"
            assert final["error"]["code"] == -32603
            assert final["error"]["data"] == {"agent": "fixture"}
            assert "can no longer be followed" in final["error"]["message"]

        run(backend, url, body)


def test_an_abandoned_task_stops_being_followed(backend: TransportBackend, task_agent: str) -> None:
    """A task no client asks about for handleTtlMs (its handle would expire) is given up:
    the MCP task fails saying so, the bridge cancels the agent's task and stops
    following it."""

    async def body(client: ClientAPI, bridge: A2ABridge, url: str) -> None:
        text = "working: forever"
        before = {t["id"] for t in await backend.to_thread(agent_tasks, task_agent, text)}
        task = await client.call_tool("a2a_send_message", {"text": text}, task=True)
        assert task.task_id and not task.done
        for _ in range(200):  # no tasks/get meanwhile: only the agent is asked
            tasks = await backend.to_thread(agent_tasks, task_agent, text)
            states = [t["status"]["state"] for t in tasks if t["id"] not in before]
            if states == ["TASK_STATE_CANCELED"]:
                break
            await client.sleep(0.05)
        else:
            pytest.fail(f"the agent's task was not cancelled: {states}")
        assert bridge.server.tasks.running == 0
        final = await task.refresh()
        assert final["status"] == "failed", final
        assert final["error"]["data"]["unpolledTtlMs"] == 500

    run(backend, task_agent, body, config={"handleTtlMs": 500})


def test_malformed_answers_make_no_task(backend: TransportBackend, task_agent: str) -> None:
    """With the extension too, a malformed first answer (streamed or not) is the plain
    agent_failure tool result, and no MCP task is made."""

    async def body(client: ClientAPI, bridge: A2ABridge, url: str) -> None:
        for text in ("malformed:nan", "malformed:deep", "malformed:list"):
            answered = await client.call_tool("a2a_send_message", {"text": text}, task=True)
            assert answered.done and answered.task_id == "", text
            result = await answered.result()
            assert result["structuredContent"]["error"] == "agent_failure", result
            assert "sent a malformed answer" in result["content"][0]["text"]

    run(backend, task_agent, body)
