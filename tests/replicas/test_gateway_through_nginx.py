"""The gateway behind nginx (plain round-robin): 2 and 3 ``sansio-mcp gateway``
processes on one Redis store, each over its own handshake-era upstream (the example
server at a handshake revision, over stdio: it asks mid-call by requests of its own),
with the official Python SDK client and the TypeScript SDK v2 client through nginx.

- At 2026-07-28 the gateway parks the upstream's call and hands the question to the
  client by MRTR; each retry lands on the next replica, which forwards it to the one
  holding the call.
- At 2025-11-25 (``relay_questions_to_handshake_clients``) the question goes out on
  the call's own stream from one replica, and the client's answer, POSTed through nginx,
  lands on the next replica, which passes it to the one asking.  The gateway serves
  handshake-era clients without a session, so this works through round-robin.
- A replica killed while it holds a parked call: the retry fails, naming it."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import mcp
import pytest
from nginx_service import Nginx, nginx_in_front
from peers import cli_command
from redis_service import RedisService
from replica_service import Replica, example_replicas, write_key_file

from tests.gateway.conftest import handshake_example_connector
from tests.gateway.test_sdk_clients import _ts_client

from .flows import by_upstream
from .rounds import stateless_round
from .test_round_robin_sdk import QUESTIONS, Answers, run_sdk

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]


@contextmanager
def gateways(
    directory: Path, count: int, store: str, key: bytes, *, connector: str = "old"
) -> Iterator[tuple[list[Replica], Nginx]]:
    """``count`` gateway replicas whose one connector, ``connector``, is the example
    server at a handshake revision; nginx in front."""
    config = directory / "gateway.json"
    connectors = {connector: handshake_example_connector()}
    config.write_text(
        json.dumps({"connectors": connectors, "relay_questions_to_handshake_clients": True})
    )
    ring = write_key_file(directory / "ring", key)
    extra = ["--config", str(config), "--store", store]
    program = [*cli_command(), "gateway"]
    with (
        example_replicas(directory, [ring] * count, extra=extra, program=program) as replicas,
        nginx_in_front([r.port for r in replicas], directory / "nginx") as nginx,
    ):
        yield replicas, nginx


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_an_upstreams_questions_are_answered_across_gateway_replicas(
    mode: str, count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    async def body(client: mcp.Client, answers: Answers) -> None:
        survey = await client.call_tool("old.survey", {"questions": QUESTIONS})
        assert survey.structured_content == {
            "answers": {q: f"sdk: {q}" for q in QUESTIONS},
            "completed": True,
        }
        assert answers.asked == QUESTIONS

    with gateways(tmp_path, count, redis_service.url, keys[0]) as (replicas, nginx):
        run_sdk(nginx, mode, body)
        if mode == "legacy":
            # No Mcp-Method header on this era: the POSTs answered 202 are the
            # initialized notification, then the client's answers, each at the next
            # replica, so some at another replica than the one holding the call.
            [_initialized, *answered] = nginx.upstreams(status=202, count=1 + len(QUESTIONS))
            assert len(answered) == len(QUESTIONS)
            assert len(set(answered)) >= 2, answered
        else:
            calls = nginx.upstreams("tools/call", "old.survey", count=len(QUESTIONS) + 1)
            assert len(calls) == len(QUESTIONS) + 1
            assert all(here != there for here, there in pairwise(calls)), calls
        assert set(nginx.upstreams()) == {r.upstream for r in replicas}


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_the_typescript_sdk_client_through_gateway_replicas(
    mode: str, count: int, tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    """``ts_client.mjs`` (tests/gateway) calls ``example.add`` and ``example.elicit``,
    whose question it answers by MRTR (2026-07-28) or on the call's stream (2025-11-25)."""
    store = redis_service.url
    with gateways(tmp_path, count, store, keys[0], connector="example") as (replicas, nginx):
        report = _ts_client(f"{nginx.base}/mcp", mode)
        assert report["add"].get("structuredContent") == {"sum": 5}, report
        elicited = {"action": "accept", "answer": "ts: colour?"}
        assert report["elicit"].get("structuredContent") == elicited, report
        if mode == "modern":
            rounds = nginx.upstreams("tools/call", "example.elicit", count=2)
            assert len(rounds) == 2 and rounds[0] != rounds[1]
        assert set(nginx.upstreams()) == {r.upstream for r in replicas}


def test_a_gateway_replica_killed_while_it_holds_a_parked_call(
    tmp_path: Path, redis_service: RedisService, keys: tuple[bytes, bytes]
) -> None:
    """The parked call dies with its replica (SIGKILL): the client's retry, landing on a
    live replica, fails with -32603 naming the dead one; calling again works."""
    with gateways(tmp_path, 2, redis_service.url, keys[0]) as (replicas, nginx):
        url = f"{nginx.base}/mcp"
        asked = stateless_round(url, "old.survey", {"questions": ["one?"]})["result"]
        assert asked["resultType"] == "input_required", asked
        holder = by_upstream(replicas, nginx.upstreams("tools/call", "old.survey", count=1)[-1])
        os.kill(holder.process.pid, signal.SIGKILL)
        assert holder.process.wait(timeout=60) == -signal.SIGKILL
        [key] = asked["inputRequests"]
        answer = {key: {"action": "accept", "content": {"answer": "late"}}}
        retried = stateless_round(
            url,
            "old.survey",
            {"questions": ["one?"]},
            state=asked["requestState"],
            responses=answer,
        )
        assert retried["error"]["code"] == -32603, retried
        assert retried["error"]["message"] == (
            f"the gateway replica holding this parked call ({holder.replica_id}) did not take "
            "the retry within 5 s"
        )
        again = stateless_round(url, "old.survey", {"questions": ["one?"]})["result"]
        assert again["resultType"] == "input_required"
