"""What each handshake revision answers about tasks (issue 32, points 2, 4 and 6), over
Streamable HTTP on both backends, checked against the official schemas: a server without
the ``tasks`` capability runs a ``tools/call`` carrying ``params.task`` as usual; on
2025-11-25 a tool error fails the task, with a ``statusMessage``, and ``tasks/result`` still
returns the ``CallToolResult``; a task-only tool is -32601 on every handshake revision."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest

from sansio_mcp import ErrorCode, MCPError, ToolResult
from sansio_mcp.runtime import Context, Server
from sansio_mcp.tasks import task_only_refusal
from sansio_mcp_testing.schemas import OfficialSchema, find_schema, missing_schema_message

from .harness import POST_HEADERS, serving
from .test_legacy_tasks import valid


def official(revision: str) -> OfficialSchema:
    """The official schema of ``revision`` (or ``ext-tasks/draft``); skips when missing."""
    path = find_schema(revision)
    if path is None:
        pytest.skip(missing_schema_message(revision))
    return OfficialSchema(revision, path)


class Session:
    """A raw handshake session over HTTP."""

    def __init__(self, port: int, revision: str) -> None:
        self.port, self.revision = port, revision
        self.headers = dict(POST_HEADERS)
        self.next_id = 0
        init = {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "revisions", "version": "1"},
        }
        answer, headers = self._post({"id": 0, "method": "initialize", "params": init})
        self.initialized = answer["result"]
        self.headers["mcp-session-id"] = headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = revision
        self._post({"method": "notifications/initialized"})

    def _post(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            body = json.dumps({"jsonrpc": "2.0", **message}).encode()
            conn.request("POST", "/mcp", body=body, headers=self.headers)
            response = conn.getresponse()
            text = response.read().decode()
            headers = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
        if "id" not in message:
            return {}, headers
        if text.lstrip().startswith("{"):
            return dict(json.loads(text)), headers
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        found = [json.loads(d) for d in data if d]
        return next(m for m in found if m.get("id") == message["id"]), headers

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return self._post({"id": self.next_id, "method": method, "params": params})[0]


def _plain_server() -> Server:
    """No task-capable tool: no ``tasks`` capability."""
    server = Server("plain", "1")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def _task_server() -> Server:
    server = Server("tasks", "1", task_poll_interval_ms=50)

    @server.tool(task="optional")
    async def refuse(ctx: Context, why: str) -> ToolResult:
        await ctx.sleep(0.01)
        return ToolResult.text(f"refused: {why}", is_error=True)

    @server.tool(task="optional")
    async def broken(ctx: Context) -> str:
        await ctx.sleep(0.01)
        raise MCPError(ErrorCode.INTERNAL_ERROR, "broken on purpose")

    @server.tool(task="required")
    async def only_a_task(ctx: Context) -> str:
        await ctx.sleep(0.01)
        return "done"

    return server


def test_params_task_is_ignored_where_no_tasks_capability_was_declared(backend: str) -> None:
    schema = official("2025-11-25")
    with serving(backend, "http", _plain_server()) as port:
        session = Session(port, "2025-11-25")
        assert "tasks" not in valid(schema, "InitializeResult", session.initialized)["capabilities"]
        call = {"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": 1000}}
        valid(schema, "CallToolRequestParams", call)
        answer = session.ask("tools/call", call)
        assert "result" in answer, answer
        assert valid(schema, "CallToolResult", answer["result"])["content"][0]["text"] == "hi"


def _ended(schema: OfficialSchema, session: Session, call: dict[str, Any]) -> dict[str, Any]:
    """Start ``call`` as a 2025-11-25 task; its Task once it is over."""
    created = valid(schema, "CreateTaskResult", session.ask("tools/call", call)["result"])
    task_id = created["task"]["taskId"]
    deadline = time.monotonic() + 10
    while (got := session.ask("tasks/get", {"taskId": task_id})["result"])["status"] == "working":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return dict(valid(schema, "GetTaskResult", got))


def test_a_tool_error_fails_a_2025_11_25_task(backend: str) -> None:
    schema = official("2025-11-25")
    with serving(backend, "http", _task_server()) as port:
        session = Session(port, "2025-11-25")
        call = {"name": "refuse", "arguments": {"why": "no budget"}, "task": {}}
        got = _ended(schema, session, call)
        task_id = got["taskId"]
        assert got["status"] == "failed" and got["statusMessage"] == "refused: no budget"
        payload = valid(
            schema, "CallToolResult", session.ask("tasks/result", {"taskId": task_id})["result"]
        )
        assert payload["isError"] is True
        assert payload["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        # A protocol error fails it too, saying so; tasks/result raises the error.
        broken = _ended(schema, session, {"name": "broken", "arguments": {}, "task": {}})
        assert broken["status"] == "failed" and broken["statusMessage"] == "broken on purpose"
        error = session.ask("tasks/result", {"taskId": broken["taskId"]})["error"]
        assert error == {"code": -32603, "message": "broken on purpose"}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_a_task_only_tool_is_method_not_found_on_every_handshake_revision(
    backend: str, revision: str
) -> None:
    """No handshake client can declare the extension, so -32021 naming it would ask the
    impossible: -32601, saying what can run the tool."""
    with serving(backend, "http", _task_server()) as port:
        session = Session(port, revision)
        error = session.ask("tools/call", {"name": "only_a_task", "arguments": {}})["error"]
        assert error["code"] == -32601, error
        assert error["data"] == {"taskSupport": "required"}  # what a checker can tell it by
        assert task_only_refusal(MCPError.from_dict(error))
