"""Raw 2026-07-28 task and listen requests (httpx, synchronous) to nginx or to one
replica, for the flows neither SDK client speaks: the tasks extension
(``io.modelcontextprotocol/tasks``) is in neither ``mcp`` 2.3's client nor the
TypeScript SDK v2 client, so ``tasks/get``/``tasks/update``/``tasks/cancel`` and a
``subscriptions/listen`` filtered by task ids go out as plain JSON-RPC POSTs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from nginx_service import Nginx, nginx_in_front
from replica_service import Replica, example_replicas, write_key_file

from sansio_mcp._tasks import TASKS_EXTENSION
from tests.auth.test_task_owners import _message
from tests.transports.helpers import POST_HEADERS, stateless_headers, stateless_request

CAPABILITIES = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
APPROVE = {"action": "accept", "content": {"approve": True}}
#: Seconds one HTTP exchange (or a wait on a listen stream) may take.
TIMEOUT = 30.0


def _post(method: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    message = stateless_request(method, params, capabilities=CAPABILITIES)
    headers = {**POST_HEADERS, **stateless_headers(message)}
    if method.startswith("tasks/"):
        headers["Mcp-Name"] = params["taskId"]
    return message, headers


def ask(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One 2026-07-28 request POSTed to ``url``: its JSON-RPC answer."""
    message, headers = _post(method, params)
    response = httpx.post(url, json=message, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 200, (response.status_code, response.text)
    return _message(response.content)


def result(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = ask(url, method, params)
    assert "result" in answer, answer
    return dict(answer["result"])


def poll(
    url: str, task_id: str, until: Callable[[dict[str, Any]], bool], *, within: float = TIMEOUT
) -> dict[str, Any]:
    """``tasks/get`` at ``url`` until ``until`` holds of the task (polling, bounded)."""
    deadline = time.monotonic() + within
    while True:
        task = result(url, "tasks/get", {"taskId": task_id})
        if until(task):
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.05)


class Listen:
    """An open ``subscriptions/listen`` (2026-07-28): its SSE messages, one at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        #: The replica holding it, as nginx names it (``X-Upstream``), when through nginx.
        self.upstream = response.headers.get("x-upstream")
        self._lines = response.iter_lines()

    def next_message(self) -> dict[str, Any]:
        """The next JSON-RPC message on the stream; raises when the stream breaks."""
        data: list[str] = []
        for line in self._lines:
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                return dict(json.loads("\n".join(data)))
        raise EOFError("the listen stream ended")

    def statuses_until(self, task_id: str, final: str) -> list[str]:
        """The task's statuses heard, up to ``final``."""
        heard = []
        while not heard or heard[-1] != final:
            message = self.next_message()
            if message.get("method") == "notifications/tasks":
                assert message["params"]["taskId"] == task_id, message
                heard.append(message["params"]["status"])
        return heard


@contextmanager
def listening(url: str, notifications: dict[str, Any]) -> Iterator[Listen]:
    """``subscriptions/listen`` POSTed to ``url``, held open for the block."""
    message, headers = _post("subscriptions/listen", {"notifications": notifications})
    timeout = httpx.Timeout(TIMEOUT)
    with httpx.stream("POST", url, json=message, headers=headers, timeout=timeout) as response:
        assert response.status_code == 200, response.status_code
        yield Listen(response)


@contextmanager
def behind_nginx(
    directory: Path,
    count: int,
    store: str,
    key: bytes,
    *,
    program: Sequence[str] | None = None,
    location_extra: str = "",
    request_buffering: bool = False,
) -> Iterator[tuple[list[Replica], Nginx]]:
    """``count`` example-server replicas (or ``program``'s, taking its options) on one
    Redis store and one key file, and nginx in front of them (with ``location_extra``
    and ``request_buffering``, as :func:`nginx_in_front` takes them)."""
    ring = write_key_file(directory / "ring", key)
    extra = ["--store", store]
    with (
        example_replicas(directory, [ring] * count, extra=extra, program=program) as replicas,
        nginx_in_front(
            [r.port for r in replicas],
            directory / "nginx",
            location_extra=location_extra,
            request_buffering=request_buffering,
        ) as nginx,
    ):
        yield replicas, nginx


def parked_task(nginx: Nginx, replicas: list[Replica], job: str) -> tuple[str, Replica, str]:
    """``approve_job`` made through nginx: the task's id, the replica running it, and
    the key of its question once it waits for the answer (``input_required``)."""
    call = {"name": "approve_job", "arguments": {"job": job}}
    before = len(nginx.upstreams("tools/call"))
    task_id = result(f"{nginx.base}/mcp", "tools/call", call)["taskId"]
    owner = by_upstream(replicas, nginx.upstreams("tools/call", count=before + 1)[-1])
    parked = poll(owner.url, task_id, lambda t: t["status"] == "input_required")
    [key] = parked["inputRequests"]
    return task_id, owner, key


def by_upstream(replicas: list[Replica], upstream: str) -> Replica:
    """The replica nginx names ``upstream``."""
    [found] = [r for r in replicas if r.upstream == upstream]
    return found
