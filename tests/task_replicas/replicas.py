"""Helpers of the replica tests: raw 2026-07-28 requests to one replica, and replicas
built on a shared task store."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sansio_mcp import _json
from sansio_mcp._tasks import TASKS_EXTENSION
from sansio_mcp.auth import HTTPCall
from sansio_mcp.runtime import Server, Stores
from sansio_mcp.runtime._oauth import fetch
from sansio_mcp.runtime._task_store import SharedTaskStore
from sansio_mcp.runtime._tasks import TaskRunner
from sansio_mcp_apps.example_server import add_task_tools
from tests.auth.test_http import Backend
from tests.auth.test_task_owners import _message
from tests.transports.helpers import POST_HEADERS, stateless_headers, stateless_request

CAPABILITIES = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
APPROVE = {"action": "accept", "content": {"approve": True}}


def replica(stores: Stores, *, shared: SharedTaskStore | None = None, lease: float = 1.0) -> Server:
    """A server with the example's task tools whose tasks live in the shared store
    (``shared``: one given explicitly, as the in-memory one, else the bundle's)."""
    server = Server("replica", "1", stores=stores, task_lease=lease)
    if shared is not None:
        server.tasks = TaskRunner(stores=stores, shared=shared, lease=lease)
        server.tasks.hub = server.hub
    add_task_tools(server, max_seconds=60)
    return server


class Caller:
    """2026-07-28 requests (declaring the tasks extension) to the replica at ``port``
    (with ``token`` as a bearer token when given)."""

    def __init__(self, backend: Backend, port: int, token: str | None = None) -> None:
        self.backend = backend
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.next_id = 0
        self.token = token

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC answer (``result`` or ``error``)."""
        self.next_id += 1
        message = stateless_request(
            method, params, request_id=self.next_id, capabilities=CAPABILITIES
        )
        headers = {**POST_HEADERS, **stateless_headers(message)}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if method.startswith("tasks/"):
            headers["Mcp-Name"] = params["taskId"]
        body = _json.dumps(message).encode()
        response = await fetch(self.backend.backend, HTTPCall("POST", self.url, headers, body))
        assert response.status == 200, (response.status, response.body)
        return _message(response.body)

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self.ask(method, params)
        assert "result" in answer, answer
        return dict(answer["result"])

    async def poll(
        self, task_id: str, until: Callable[[dict[str, Any]], bool], *, within: float = 15.0
    ) -> dict[str, Any]:
        """``tasks/get`` until ``until`` holds of the task (within ``within`` seconds)."""
        deadline = time.monotonic() + within
        while True:
            task = await self.result("tasks/get", {"taskId": task_id})
            if until(task):
                return task
            assert time.monotonic() < deadline, task
            await self.backend.backend.sleep(0.05)
