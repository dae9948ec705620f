"""The TypeScript SDK v2 client (``@modelcontextprotocol/client``) at 2026-07-28
through nginx in front of 2 and 3 replicas of ``sansio-mcp example-server``, plain
round-robin: tools/list, tools/call and multi-round MRTR calls, each round at the next
replica; and the negative control without a shared key file."""

from __future__ import annotations

import json
import subprocess
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from nginx_service import Nginx, nginx_in_front
from peers import NPM, REPO, node_for
from replica_service import example_replicas, write_key_file

from sansio_mcp_apps.example_server import TOOL_NAMES

pytestmark = pytest.mark.interop

TS_CLIENT = Path(__file__).with_name("ts_round_robin_client.mjs")
QUESTIONS = ["one?", "two?", "three?"]


def run_ts_client(nginx: Nginx, mode: str) -> dict[str, Any]:
    node = node_for(NPM / "client" / "package.json")
    done = subprocess.run(
        [node, str(TS_CLIENT), f"{nginx.base}/mcp", mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("mode", ["pin", "auto"])
def test_typescript_sdk_client_round_robin_with_a_shared_key_file(
    count: int, mode: str, tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])
    with (
        example_replicas(tmp_path, [ring] * count) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        report = run_ts_client(nginx, mode)
        assert report["protocolVersion"] == "2026-07-28"
        assert set(report["tools"]) == set(TOOL_NAMES)
        assert report["add"]["structuredContent"] == {"sum": 5}
        assert report["elicit"]["structuredContent"] == {
            "action": "accept",
            "answer": "ts: colour?",
        }
        assert report["survey"]["structuredContent"] == {
            "answers": {q: f"ts: {q}" for q in QUESTIONS},
            "completed": True,
        }
        assert report["asked"] == ["colour?", *QUESTIONS]
        if mode == "auto":  # discovered, through the balancer
            assert nginx.upstreams("server/discover")
        elicit_rounds = nginx.upstreams("tools/call", "elicit")
        assert len(elicit_rounds) == 2 and elicit_rounds[0] != elicit_rounds[1]
        rounds = nginx.upstreams("tools/call", "survey", count=len(QUESTIONS) + 1)
        assert len(rounds) == len(QUESTIONS) + 1
        assert all(here != there for here, there in pairwise(rounds)), rounds
        assert set(nginx.upstreams()) == {r.upstream for r in replicas}


def test_typescript_sdk_client_round_robin_without_a_shared_key_fails_the_second_round(
    tmp_path: Path,
) -> None:
    with (
        example_replicas(tmp_path, [None, None]) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        report = run_ts_client(nginx, "pin")
        assert report["add"]["structuredContent"] == {"sum": 5}  # stateless: fine anywhere
        for call in ("elicit", "survey"):
            error = report[call]["error"]
            assert error["code"] == -32602, report
            assert "requestState failed its integrity check" in error["message"]
