"""Task flows and listen hints through nginx (plain round-robin, no affinity) in front
of 2 and 3 ``sansio-mcp example-server`` processes on one real Redis store: a task made
on one replica is read, answered and cancelled on the others, and a
``subscriptions/listen`` held by one replica hears the status of a task another runs.
Where a step must land on another replica than the task's owner the test says so from
nginx's access log (strict round-robin: each request goes to the next replica) and
addresses the replicas directly as well.

Neither SDK client speaks the 2026-07-28 tasks extension (``mcp`` 2.3's client and
the TypeScript SDK v2 client have no ``tasks/*`` for it), so these steps are raw
JSON-RPC POSTs (``flows.py``); the SDK clients' MRTR flows through nginx are in
``test_round_robin_sdk.py`` and ``test_round_robin_ts.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from nginx_service import nginx_in_front
from redis_service import RedisService

from .flows import APPROVE, by_upstream, listening, poll, redis_replicas, result

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("count", [2, 3])
def test_a_task_made_through_nginx_is_answered_and_cancelled_on_the_other_replicas(
    count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    with (
        redis_replicas(tmp_path, count, redis_service.url, keys[0]) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        url = f"{nginx.base}/mcp"
        call = {"name": "approve_job", "arguments": {"job": "x"}}
        task_id = result(url, "tools/call", call)["taskId"]
        owner = by_upstream(replicas, nginx.upstreams("tools/call")[-1])
        others = [r for r in replicas if r is not owner]
        parked = poll(url, task_id, lambda t: t["status"] == "input_required")
        [key] = parked["inputRequests"]
        # Round-robin took tasks/get to another replica at once.
        assert nginx.upstreams("tasks/get")[0] != owner.upstream
        for other in others:
            assert result(other.url, "tasks/get", {"taskId": task_id})["status"] == "input_required"
        # Answered on a replica that does not run it: the owner completes it.
        answer = {"taskId": task_id, "inputResponses": {key: APPROVE}}
        result(others[-1].url, "tasks/update", answer)
        done = poll(url, task_id, lambda t: t["status"] == "completed")
        assert done["result"]["content"][0]["text"] == "x: done"
        for replica in replicas:
            assert result(replica.url, "tasks/get", {"taskId": task_id})["status"] == "completed"

        # A task waiting for its answer (it waits as long as it is not answered).
        call = {"name": "approve_job", "arguments": {"job": "z"}}
        parked_id = result(url, "tools/call", call)["taskId"]
        parked_owner = nginx.upstreams("tools/call")[-1]
        result(url, "tasks/cancel", {"taskId": parked_id})
        # The next request went to the next replica: cancelled away from the owner.
        assert nginx.upstreams("tasks/cancel")[-1] != parked_owner
        for replica in replicas:
            poll(replica.url, parked_id, lambda t: t["status"] == "cancelled")


@pytest.mark.parametrize("count", [2, 3])
def test_a_listen_through_nginx_hears_a_task_another_replica_runs(
    count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    with (
        redis_replicas(tmp_path, count, redis_service.url, keys[0]) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        url = f"{nginx.base}/mcp"
        call = {"name": "approve_job", "arguments": {"job": "y"}}
        task_id = result(url, "tools/call", call)["taskId"]
        owner = by_upstream(replicas, nginx.upstreams("tools/call")[-1])
        [key] = poll(owner.url, task_id, lambda t: t["status"] == "input_required")["inputRequests"]
        with listening(url, {"taskIds": [task_id]}) as listen:
            assert listen.upstream not in (None, owner.upstream)
            acknowledged = listen.next_message()
            assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
            answer = {"taskId": task_id, "inputResponses": {key: APPROVE}}
            result(owner.url, "tasks/update", answer)
            assert listen.statuses_until(task_id, "completed")[-2:] == ["working", "completed"]
