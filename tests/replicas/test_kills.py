"""Replicas killed (SIGKILL) behind nginx, real processes on one real Redis store:

- the replica holding a client's 2026-07-28 ``subscriptions/listen``: the stream breaks,
  the client listens again through nginx, lands on a live replica and hears a tool-list
  change announced on another replica, and the status of a task another replica runs;
- a replica in the middle of a tool call: the client's call fails, and a counter kept
  outside the replicas shows the tool ran once, never twice, because nginx does not pass
  a POST it has sent to another upstream (``proxy_next_upstream``'s default, since
  nginx 1.9.13, leaves out ``non_idempotent``).  Calls after the kill work.  The
  control: with ``non_idempotent`` added, the call runs again on the next replica.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis_service import RedisService

from .flows import APPROVE, TIMEOUT, behind_nginx, by_upstream, listening, parked_task, result
from .rounds import stateless_round

pytestmark = pytest.mark.interop

COUNTING_SERVER = [sys.executable, str(Path(__file__).with_name("counting_server.py"))]


def last_upstream(header: str | None) -> str:
    """The replica that answered: the last of ``$upstream_addr``'s tries."""
    assert header is not None
    return header.split(", ")[-1]


def test_the_replica_holding_a_listen_is_killed_and_listening_again_works(
    tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    program = COUNTING_SERVER
    with behind_nginx(tmp_path, 3, redis_service.url, keys[0], program=program) as (
        replicas,
        nginx,
    ):
        url = f"{nginx.base}/mcp"
        task_id, owner, key = parked_task(nginx, replicas, "k")
        wanted = {"taskIds": [task_id], "toolsListChanged": True}
        with listening(url, wanted) as listen:
            holder = by_upstream(replicas, last_upstream(listen.upstream))
            assert holder is not owner
            assert listen.next_message()["method"] == "notifications/subscriptions/acknowledged"
            os.kill(holder.process.pid, signal.SIGKILL)
            with pytest.raises((EOFError, httpx.HTTPError)):
                listen.next_message()
        assert holder.process.wait(timeout=TIMEOUT) == -signal.SIGKILL
        with listening(url, wanted) as again:
            landed = by_upstream(replicas, last_upstream(again.upstream))
            assert landed not in (holder, owner)
            assert again.next_message()["method"] == "notifications/subscriptions/acknowledged"
            assert result(owner.url, "tools/call", {"name": "announce"})["content"]
            assert again.next_message()["method"] == "notifications/tools/list_changed"
            answer = {"taskId": task_id, "inputResponses": {key: APPROVE}}
            result(owner.url, "tasks/update", answer)
            assert again.statuses_until(task_id, "completed")[-2:] == ["working", "completed"]


def runs(counter: Path, count: int, pending: Future[Any]) -> list[str]:
    """The pids that ran ``count_then_wait``, once there are ``count`` of them."""
    deadline = time.monotonic() + TIMEOUT
    while len(found := counter.read_text().split() if counter.exists() else []) < count:
        assert time.monotonic() < deadline and not pending.done(), found
        time.sleep(0.02)
    return found


@pytest.mark.parametrize("count", [2, 3])
def test_a_replica_killed_mid_call_ran_the_tool_once(
    count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    counter = tmp_path / "counter"
    with (
        behind_nginx(tmp_path, count, redis_service.url, keys[0], program=COUNTING_SERVER) as (
            replicas,
            nginx,
        ),
        ThreadPoolExecutor(1) as pool,
    ):
        url = f"{nginx.base}/mcp"
        arguments = {"path": str(counter), "seconds": TIMEOUT}
        pending = pool.submit(stateless_round, url, "count_then_wait", arguments)
        [pid] = runs(counter, 1, pending)
        [running] = [r for r in replicas if r.process.pid == int(pid)]
        os.kill(running.process.pid, signal.SIGKILL)
        # The call fails with its replica (nginx answers 502: the replica closed early).
        with pytest.raises(AssertionError, match=r"^\(502, "):
            pending.result(timeout=TIMEOUT)
        assert counter.read_text().split() == [pid]
        [tried] = nginx.upstreams("tools/call", "count_then_wait", count=1)
        assert tried == running.upstream  # one upstream tried, no other
        # Calls after it land on live replicas (a refused connect is passed on).
        for n in range(count):
            added = stateless_round(url, "add", {"a": n, "b": 1})
            assert added["result"]["structuredContent"] == {"sum": n + 1}
        assert counter.read_text().split() == [pid]


def test_the_control_with_non_idempotent_nginx_runs_a_killed_call_again(
    tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    """What nginx's default spares: told to pass non-idempotent requests on
    (``proxy_next_upstream error timeout non_idempotent``) and to read a request's body
    whole first (``proxy_request_buffering on``: streamed, a body already sent cannot be
    sent again), it sends the call of a replica that dies to the next one, and the tool
    runs a second time."""
    counter = tmp_path / "counter"
    passing_on = "proxy_next_upstream error timeout non_idempotent;"
    with (
        behind_nginx(
            tmp_path,
            2,
            redis_service.url,
            keys[0],
            program=COUNTING_SERVER,
            location_extra=passing_on,
            request_buffering=True,  # so that nginx holds the whole request to send again
        ) as (replicas, nginx),
        ThreadPoolExecutor(1) as pool,
    ):
        arguments = {"path": str(counter), "seconds": TIMEOUT}
        pending = pool.submit(stateless_round, f"{nginx.base}/mcp", "count_then_wait", arguments)
        for n in (1, 2):
            pid = runs(counter, n, pending)[-1]
            os.kill(int(pid), signal.SIGKILL)
        first, second = counter.read_text().split()
        assert {int(first), int(second)} == {r.process.pid for r in replicas}
        with pytest.raises(AssertionError, match=r"^\(502, "):
            pending.result(timeout=TIMEOUT)
