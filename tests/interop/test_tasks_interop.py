"""The tasks extension against the official Python SDK (``mcp`` 2.3), both ways it can
meet our server (``examples/tasks_server.py``, over stdio and Streamable HTTP).

The SDK has no tasks client of its own, but it has the extension interface the
tasks extension is meant to plug into (``ClientExtension`` with a ``ResultClaim`` for
``resultType: "task"``; its ``Request.name_param`` puts the task id in ``Mcp-Name``).
So:

* an SDK ``Client`` that does not declare the extension gets plain results from a
  task-capable tool and -32021 (with the required capability) from a task-required one;
* an SDK ``Client`` built with a small tasks ``ClientExtension`` written against the
  SDK's public types (below) gets ``CreateTaskResult``s, follows them with
  ``tasks/get``, answers the task's input request with ``tasks/update`` and gets the
  results; the SDK validated every exchange on the way (and, over HTTP, sent the
  ``Mcp-Name`` header our server checks).

The TypeScript SDK v2 client (``@modelcontextprotocol/client`` 2.4) has no tasks client
and refuses a ``resultType: "task"`` answer; ``ts_tasks_client.mjs`` checks what it can
meet: plain results, -32021, and -32602 for an unknown task id on ``tasks/get``.

The SDK is asyncio/anyio based and pytest-trio's trio_mode claims every ``async def``
test, so the tests are plain functions calling ``anyio.run``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client as SDKClient
from mcp import StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError as SDKError
from mcp_types import (
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    Request,
    RequestParams,
    Result,
)
from pydantic import ConfigDict, Field, TypeAdapter

from sansio_mcp._tasks import TASKS_EXTENSION

from .conftest import REPO, http_server

pytestmark = [pytest.mark.interop]

STATELESS = "2026-07-28"
BUDGET = 30
SERVER = [sys.executable, str(REPO / "examples" / "tasks_server.py"), "--serve"]


# A tasks client on the SDK's extension interface -------------------------------------


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CreateTaskResult(Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class DetailedTask(Result):
    model_config = ConfigDict(extra="allow")
    task_id: str = Field(alias="taskId")
    status: str
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Answered(Result):
    model_config = ConfigDict(extra="allow")


async def approve(context: Any, params: Any) -> ElicitResult:
    """The SDK client's elicitation callback (it also makes the client declare elicitation)."""
    return ElicitResult(action="accept", content={"approve": True})


class Tasks(ClientExtension):
    """Follows a task to its result; a task's elicitations go to ``approve``."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.asked: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        self.seen.append(created.status)
        pause = (created.poll_interval_ms or 100) / 1000
        while True:
            task = await ctx.session.send_request(
                GetTask(params=TaskParams(taskId=created.task_id)), DetailedTask
            )
            if task.status != self.seen[-1]:
                self.seen.append(task.status)
            if task.status == "completed":
                assert task.result is not None
                return CallToolResult.model_validate(task.result)
            if task.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {task.status}: {task.error}")
            if task.status == "input_required" and task.input_requests:
                self.asked.extend(task.input_requests)
                answers = {}
                for key, asked in task.input_requests.items():
                    assert asked["method"] == "elicitation/create"
                    params = TypeAdapter(ElicitRequestParams).validate_python(asked["params"])
                    answer = await approve(None, params)
                    answers[key] = answer.model_dump(by_alias=True, exclude_none=True)
                params = UpdateParams(taskId=created.task_id, inputResponses=answers)
                await ctx.session.send_request(UpdateTask(params=params), Answered)
                continue
            await anyio.sleep(pause)


def text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def run_sdk(body: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(BUDGET):
            await body()

    anyio.run(bounded)


@pytest.fixture
def http_url() -> Iterator[str]:
    """``examples/tasks_server.py``'s server over Streamable HTTP, in a child process."""
    with http_server(str(REPO / "examples" / "tasks_server.py")) as url:
        yield url


def _targets(http_url: str | None) -> Any:
    if http_url is not None:
        return http_url
    return StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(REPO))


@pytest.mark.parametrize("mode", [STATELESS, "legacy"])
def test_sdk_client_without_the_extension(mode: str) -> None:
    async def body() -> None:
        async with SDKClient(_targets(None), mode=mode) as client:
            quick = await client.call_tool("long_job", {"seconds": 0.1, "steps": 2})
            assert quick.is_error is False
            assert text(quick) == "long job done: 2 steps in 0.1 s"
            with pytest.raises(SDKError) as caught:
                await client.call_tool("approve_job", {"job": "deploy"})
            if mode == STATELESS:
                assert caught.value.error.code == -32021
                assert caught.value.error.data == {
                    "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
                }
            else:
                # 2025-11-25 has its own tasks: a task-required tool called without
                # params.task is -32601 (its tool-level negotiation), and the SDK
                # reads the tools' execution.taskSupport.
                assert caught.value.error.code == -32601
                listed = {t.name: t for t in (await client.list_tools()).tools}
                execution = listed["approve_job"].execution
                assert execution is not None and execution.task_support == "required"

    run_sdk(body)


@pytest.mark.parametrize("wire", ["stdio", "http"])
def test_sdk_client_with_a_tasks_extension(wire: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("http_url") if wire == "http" else None
    tasks = Tasks()

    async def body() -> None:
        async with SDKClient(
            _targets(url), mode=STATELESS, extensions=[tasks], elicitation_callback=approve
        ) as client:
            done = await client.call_tool("long_job", {"seconds": 0.2, "steps": 2})
            assert text(done) == "long job done: 2 steps in 0.2 s"
            assert tasks.seen[-1] == "completed"
            tasks.seen.clear()
            approved = await client.call_tool("approve_job", {"job": "deploy"})
            assert text(approved) == "deploy: done"
            assert "input_required" in tasks.seen and tasks.asked == ["input-1"]

    run_sdk(body)


# The TypeScript SDK v2 client --------------------------------------------------------

TS_CLIENT = Path(__file__).resolve().parent / "ts_tasks_client.mjs"
NODE = REPO / "node_modules" / ".bin" / "node"


def _node_steps(script: Path, url: str) -> dict[str, dict[str, Any]]:
    """Run a TypeScript SDK client script against ``url``; its steps by name."""
    done = subprocess.run(
        [str(NODE), str(script), url],
        capture_output=True,
        text=True,
        timeout=BUDGET,
        cwd=str(REPO),
    )
    assert done.returncode == 0, done.stderr
    return {line["step"]: line for line in map(json.loads, done.stdout.splitlines())}


def test_ts_sdk_client(http_url: str) -> None:
    """The TS SDK v2 client (no tasks-extension client of its own) against the tasks
    server: plain results without the extension, -32021 for a task-required tool and for
    an undeclared tasks/get, -32602 for an unknown task (its Mcp-Name header accepted),
    and its own refusal of a CreateTaskResult when it declares the extension."""
    if (
        not NODE.exists()
        or not (REPO / "node_modules" / "@modelcontextprotocol" / "client").exists()
    ):
        pytest.skip("run `npm ci` for the TypeScript SDK client")
    steps = _node_steps(TS_CLIENT, http_url)
    assert steps["version"]["ok"] == STATELESS
    assert steps["long_job"]["ok"] == "long job done: 2 steps in 0.1 s"
    assert steps["approve_job"]["code"] == -32021
    assert steps["tasks/get undeclared"]["code"] == -32021
    assert steps["tasks/get unknown"]["code"] == -32602
    assert steps["long_job as task"]["code"] == "UNSUPPORTED_RESULT_TYPE"


# The TypeScript SDK v1 client: 2025-11-25's own tasks -----------------------------------

TS_LEGACY_CLIENT = Path(__file__).resolve().parent / "ts_legacy_tasks_client.mjs"


def test_ts_sdk_v1_client_runs_2025_11_25_tasks(http_url: str) -> None:
    """The TS SDK v1 (1.32, ``client.experimental.tasks``) against the tasks server on
    2025-11-25: it reads the tasks capability and each tool's taskSupport, streams a
    task-capable and a task-required tool as tasks (the latter's elicitation answered on
    the way), cancels, gets and lists tasks, and gets -32602 for an unknown one."""
    if not NODE.exists() or not (REPO / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        pytest.skip("run `npm ci` for the TypeScript SDK v1 client")
    steps = _node_steps(TS_LEGACY_CLIENT, http_url)
    assert steps["version"]["ok"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert steps["tools"]["ok"] == {"long_job": "optional", "approve_job": "required"}
    for name, text_ in (
        ("long_job stream", "long job done: 3 steps in 0.3 s"),
        ("approve_job stream", "deploy: done"),
    ):
        seen = steps[name]["ok"]
        # created working, then the statuses its polls happened to see, then the result
        assert seen[0] == ["created", "working"] and seen[-1] == ["result", text_], seen
        assert all(kind == "status" for kind, *_ in seen[1:-1]), seen
    assert steps["cancel"]["ok"] == "cancelled" and steps["get"]["ok"] == "cancelled"
    assert sorted(steps["list"]["ok"]) == ["cancelled", "completed", "completed"]
    assert steps["get unknown"]["code"] == -32602
