"""``--store redis://...`` end to end: replicas of ``sansio-mcp example-server`` on a
real redis-server behind nginx serve a client's MRTR rounds in turn; a Redis that does
not answer at start stops every serving command with a clear error (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nginx_service import nginx_in_front
from peers import free_port, run_cli
from replica_service import example_replicas, serving_command, write_key_file

from .rounds import elicit_across, stateless_round

DONE = {"action": "accept", "answer": "teal"}


def test_replicas_on_a_redis_store_behind_nginx(
    redis_url: str, tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])
    store = ["--store", redis_url]
    with (
        example_replicas(tmp_path, [ring, ring], extra=store) as (a, b),
        nginx_in_front([a.port, b.port], tmp_path / "nginx") as nginx,
    ):
        url = f"{nginx.base}/mcp"
        added = stateless_round(url, "add", {"a": 1, "b": 2})
        assert added["result"]["structuredContent"] == {"sum": 3}
        assert elicit_across(url, url)["result"]["structuredContent"] == DONE
        assert elicit_across(a.url, b.url)["result"]["structuredContent"] == DONE
        rounds = nginx.upstreams("tools/call", "elicit")
        assert rounds[0] != rounds[1]


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("command", ["example-server", "gateway", "a2a-bridge"])
def test_an_unreachable_redis_at_start_is_named_and_exits_1(
    command: str, backend: str, tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])
    args = [*serving_command(command, tmp_path), "--backend", backend]
    store = f"redis://127.0.0.1:{free_port()}/0"
    done = run_cli(*args, "--store", store, "--state-key-file", str(ring), timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"sansio-mcp {command}: the store {store} is unavailable: ")
    assert "cannot connect" in done.stderr and "Traceback" not in done.stderr
