"""A task belongs to whoever created it (issue 32, point 1), over real HTTP on both
backends: the verified token's subject where auth is on, on 2026-07-28 requests and on
2025-11-25 handshake sessions alike; another principal's task id answers exactly as an
unknown one (-32602), so ids cannot be probed; an unprotected server's stateless tasks
are the anonymous callers', and a handshake session's are its own."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from sansio_mcp import _json
from sansio_mcp._tasks import TASKS_EXTENSION
from sansio_mcp.auth import AccessToken, HTTPCall, ResourceServer
from sansio_mcp.runtime import Server
from sansio_mcp.runtime._oauth import fetch
from sansio_mcp_apps.example_server import add_task_tools
from sansio_mcp_testing.schemas import OfficialSchema, find_schema
from tests.auth.test_http import Backend
from tests.transports.helpers import POST_HEADERS, stateless_headers, stateless_request

TASKS = {"extensions": {TASKS_EXTENSION: {}}}
UNKNOWN = "00000000-0000-4000-8000-000000000000"


class People:
    tokens: ClassVar[dict[str, AccessToken]] = {
        "alice": AccessToken("alice", frozenset({"mcp"}), "app", subject="alice"),
        "alice-again": AccessToken("alice-again", frozenset({"mcp"}), "app", subject="alice"),
        "bob": AccessToken("bob", frozenset({"mcp"}), "app", subject="bob"),
    }

    def verify(self, token: str, now: float) -> AccessToken | None:
        return self.tokens.get(token)


def build_server() -> Server:
    """``long_job`` (a task when asked) that lasts long enough to be looked at."""
    server = Server("owners", "1")
    add_task_tools(server, max_seconds=60)
    return server


def _message(body: bytes) -> dict[str, Any]:
    """The JSON-RPC answer in a JSON or SSE response body."""
    text = body.decode()
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    answers = [json.loads(d) for d in data if d and ("result" in d or "error" in d)]
    return dict(answers[-1])


class Caller:
    """Raw HTTP requests to one server, as one principal (``token`` None: no token)."""

    def __init__(self, backend: Backend, url: str, token: str | None) -> None:
        self.backend, self.url, self.token = backend, url, token
        self.session: str | None = None
        self.next_id = 0

    async def post(
        self, message: dict[str, Any], extra: dict[str, str], *, stateless: bool = False
    ) -> dict[str, Any]:
        headers = {**POST_HEADERS, **extra}
        if self.token is not None:
            headers["authorization"] = f"Bearer {self.token}"
        if self.session is not None and not stateless:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = "2025-11-25"
        body = _json.dumps(message).encode()
        response = await fetch(self.backend.backend, HTTPCall("POST", self.url, headers, body))
        assert response.status in (200, 202), (response.status, response.body)
        if message.get("method") == "initialize":
            self.session = response.headers["mcp-session-id"]
        return _message(response.body) if "id" in message else {}

    async def stateless(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        message = stateless_request(method, params, request_id=self.next_id, capabilities=TASKS)
        headers = stateless_headers(message)
        if method.startswith("tasks/"):
            headers["Mcp-Name"] = params["taskId"]
        return await self.post(message, headers, stateless=True)

    async def handshake(self) -> None:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "owners", "version": "1"},
        }
        await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, {})
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {})

    async def legacy(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return await self.post(message, {})


def _unknown_error(answer: dict[str, Any], task_id: str) -> tuple[int, str]:
    error = answer["error"]
    return error["code"], error["message"].replace(task_id, "<id>")


async def _refused_as_unknown(caller: Caller, task_id: str, *, legacy: bool) -> None:
    """Every task request about ``task_id`` answers as one about an unknown id."""
    ask = caller.legacy if legacy else caller.stateless
    methods = (
        ["tasks/get", "tasks/result", "tasks/cancel"]
        if legacy
        else ["tasks/get", "tasks/update", "tasks/cancel"]
    )
    for method in methods:
        extra = {} if legacy or method != "tasks/update" else {"inputResponses": {}}
        theirs = await ask(method, {"taskId": task_id, **extra})
        unknown = await ask(method, {"taskId": UNKNOWN, **extra})
        assert _unknown_error(theirs, task_id) == _unknown_error(unknown, UNKNOWN), method
        assert theirs["error"]["code"] == -32602


def test_a_task_is_its_principals_on_both_eras(backend: Backend) -> None:
    server = build_server()
    server.auth = ResourceServer("", ["http://as.example"], People(), required_scopes=["mcp"])
    path = find_schema("2025-11-25")
    legacy_schema = OfficialSchema("2025-11-25", path) if path is not None else None

    async def main() -> None:
        async with backend.serve_http(server) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            alice, bob = Caller(backend, url, "alice"), Caller(backend, url, "bob")
            call = {"name": "long_job", "arguments": {"seconds": 30, "steps": 1}}
            created = (await alice.stateless("tools/call", call))["result"]
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            await _refused_as_unknown(bob, task_id, legacy=False)
            # Alice, with a refreshed token, or on a 2025-11-25 session of her own.
            again = Caller(backend, url, "alice-again")
            assert (await again.stateless("tasks/get", {"taskId": task_id}))["result"][
                "taskId"
            ] == (task_id)
            await bob.handshake()
            await _refused_as_unknown(bob, task_id, legacy=True)
            listed = (await bob.legacy("tasks/list", {}))["result"]
            assert listed["tasks"] == []
            await alice.handshake()
            mine = (await alice.legacy("tasks/list", {}))["result"]
            if legacy_schema is not None:
                assert not legacy_schema.errors("ListTasksResult", mine)
            assert [t["taskId"] for t in mine["tasks"]] == [task_id]
            # A 2025-11-25 task of bob's is bob's, whichever of his sessions asks.
            legacy_call = {**call, "task": {}}
            bobs = (await bob.legacy("tools/call", legacy_call))["result"]["task"]["taskId"]
            await _refused_as_unknown(alice, bobs, legacy=True)
            await _refused_as_unknown(alice, bobs, legacy=False)
            cancelled = (await bob.legacy("tasks/cancel", {"taskId": bobs}))["result"]
            assert cancelled["status"] == "cancelled"
            assert (await alice.stateless("tasks/cancel", {"taskId": task_id}))[
                "result"
            ] is not None

    backend.run(main)


def test_without_auth_a_handshake_sessions_tasks_are_its_own(backend: Backend) -> None:
    """No principal: a 2025-11-25 task is its session's (never another session's, even
    one that follows it), a 2026-07-28 task is the anonymous callers'."""

    async def main() -> None:
        async with backend.serve_http(build_server()) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            first, second = Caller(backend, url, None), Caller(backend, url, None)
            await first.handshake()
            call = {"name": "long_job", "arguments": {"seconds": 30, "steps": 1}, "task": {}}
            made = (await first.legacy("tools/call", call))["result"]["task"]["taskId"]
            await second.handshake()
            await _refused_as_unknown(second, made, legacy=True)
            assert (await second.legacy("tasks/list", {}))["result"]["tasks"] == []
            # Not visible on the stateless path either (it is the session's, not anonymous).
            stranger = Caller(backend, url, None)
            await _refused_as_unknown(stranger, made, legacy=False)
            await first.legacy("tasks/cancel", {"taskId": made})
            # Anonymous stateless tasks: any anonymous caller holding the (random) id.
            plain = {"name": "long_job", "arguments": {"seconds": 30, "steps": 1}}
            anonymous = (await stranger.stateless("tools/call", plain))["result"]["taskId"]
            other = Caller(backend, url, None)
            got = (await other.stateless("tasks/get", {"taskId": anonymous}))["result"]
            assert got["taskId"] == anonymous
            await _refused_as_unknown(first, anonymous, legacy=True)
            await other.stateless("tasks/cancel", {"taskId": anonymous})

    backend.run(main)
