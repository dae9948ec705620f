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
from redis_service import RedisService

from .flows import APPROVE, behind_nginx, listening, parked_task, poll, result

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("count", [2, 3])
def test_a_task_made_through_nginx_is_answered_and_cancelled_on_the_other_replicas(
    count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    with behind_nginx(tmp_path, count, redis_service.url, keys[0]) as (replicas, nginx):
        url = f"{nginx.base}/mcp"
        task_id, owner, key = parked_task(nginx, replicas, "x")
        # Round-robin takes the next request to the next replica.
        assert result(url, "tasks/get", {"taskId": task_id})["status"] == "input_required"
        assert nginx.upstreams("tasks/get", count=1)[-1] != owner.upstream
        others = [r for r in replicas if r is not owner]
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
        parked_id, parked_owner, _ = parked_task(nginx, replicas, "z")
        result(url, "tasks/cancel", {"taskId": parked_id})
        # The next request went to the next replica: cancelled away from the owner.
        assert nginx.upstreams("tasks/cancel", count=1)[-1] != parked_owner.upstream
        for replica in replicas:
            poll(replica.url, parked_id, lambda t: t["status"] == "cancelled")


@pytest.mark.parametrize("count", [2, 3])
def test_a_listen_through_nginx_hears_a_task_another_replica_runs(
    count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    with behind_nginx(tmp_path, count, redis_service.url, keys[0]) as (replicas, nginx):
        task_id, owner, key = parked_task(nginx, replicas, "y")
        with listening(f"{nginx.base}/mcp", {"taskIds": [task_id]}) as listen:
            assert listen.upstream not in (None, owner.upstream)
            acknowledged = listen.next_message()
            assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
            answer = {"taskId": task_id, "inputResponses": {key: APPROVE}}
            result(owner.url, "tasks/update", answer)
            assert listen.statuses_until(task_id, "completed")[-2:] == ["working", "completed"]
