"""The A2A bridge behind nginx (plain round-robin): 2 and 3 ``sansio-mcp a2a-bridge``
processes on one Redis store in front of a real a2a-sdk agent, their MCP tools called by
the official Python SDK client (``mcp`` 2.3, 2026-07-28) through nginx.  A task handle
minted on one replica is answered, read and its conversation continued on the others:
through nginx (each call at the next replica) and at each replica directly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import mcp
import pytest
from nginx_service import nginx_in_front
from peers import cli_command
from redis_service import RedisService
from replica_service import example_replicas, write_key_file

from .rounds import stateless_round
from .test_round_robin_sdk import Answers, run_sdk

pytest.importorskip("a2a")

from tests.a2a_bridge.conftest import running_agent

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

STATELESS = "2026-07-28"


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with running_agent() as (url, _):
        yield url


def structured(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result
    return dict(result.structured_content)


@pytest.mark.parametrize("count", [2, 3])
def test_a_handle_minted_on_one_bridge_replica_is_used_on_the_others(
    count: int,
    agent_url: str,
    tmp_path: Path,
    redis_service: RedisService,
    keys: tuple[bytes, bytes],
) -> None:
    config = tmp_path / "agents.json"
    config.write_text(json.dumps({"agents": {"fixture": {"url": agent_url}}}))
    ring = write_key_file(tmp_path / "ring", keys[0])
    bridge = [*cli_command(), "a2a-bridge"]
    extra = ["--config", str(config), "--store", redis_service.url]
    found: dict[str, Any] = {}

    async def body(client: mcp.Client, answers: Answers) -> None:
        # The agent's question comes to the SDK client as an elicitation (an MRTR round);
        # its answer comes back at the next replica, which resolves the task's handle.
        done = structured(await client.call_tool("a2a_send_message", {"text": "ask: colour"}))
        assert answers.asked == ["What value should I use for colour?"]
        assert done["a2aState"] == "TASK_STATE_COMPLETED", done
        found.update(done)
        got = structured(await client.call_tool("a2a_get_task", {"taskHandle": done["taskHandle"]}))
        assert got["a2aState"] == "TASK_STATE_COMPLETED"
        assert got["taskHandle"] == done["taskHandle"]
        more = structured(
            await client.call_tool(
                "a2a_send_message", {"text": "echo: again", "contextHandle": done["contextHandle"]}
            )
        )
        assert more["contextHandle"] == done["contextHandle"]

    with (
        example_replicas(tmp_path, [ring] * count, extra=extra, program=bridge) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        run_sdk(nginx, STATELESS, body)
        # Each request at the next replica: the answer to the agent's question too.
        sends = nginx.upstreams("tools/call", "a2a_send_message", count=3)
        assert len(sends) == 3 and sends[0] != sends[1]
        served = nginx.upstreams()
        assert all(here != there for here, there in pairwise(served)), served
        assert set(served) == {r.upstream for r in replicas}
        # Every replica, addressed directly, resolves the handle another minted.
        for replica in replicas:
            got = stateless_round(replica.url, "a2a_get_task", {"taskHandle": found["taskHandle"]})
            assert got["result"]["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED", got
