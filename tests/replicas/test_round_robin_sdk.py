"""The official Python SDK client (``mcp`` 2.3, 2026-07-28) through nginx in front of 2
and 3 replicas of ``sansio-mcp example-server``, plain round-robin, no affinity:
discovery, tools/list, tools/call and calls that take several MRTR rounds, each round
at the next replica.  With one key file they all succeed; without one (each replica's
own random key, the default) the second round fails, which is what the key file is for.

The SDK is asyncio-based: these are plain tests that run it with ``anyio.run``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import MCPError
from mcp import types as sdk
from mcp.client.streamable_http import streamable_http_client
from nginx_service import Nginx, nginx_in_front
from replica_service import Replica, example_replicas, write_key_file

from sansio_mcp_apps.example_server import TOOL_NAMES

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

STATELESS = "2026-07-28"
#: Seconds for one SDK session, start to end.
BUDGET = 60
QUESTIONS = ["colour?", "number?", "season?"]


class Answers:
    """The SDK client's callbacks: ``sdk: QUESTION`` for each elicitation, and a model."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicitation(self, context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        self.asked.append(params.message)
        return sdk.ElicitResult(action="accept", content={"answer": f"sdk: {params.message}"})

    async def sampling(
        self, context: Any, params: sdk.CreateMessageRequestParams
    ) -> sdk.CreateMessageResult:
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text="forty-two"),
            model="replica-test-model",
            stop_reason="endTurn",
        )


def run_sdk(
    nginx: Nginx, mode: str, body: Callable[[mcp.Client, Answers], Awaitable[None]]
) -> None:
    answers = Answers()

    async def session() -> None:
        with anyio.fail_after(BUDGET):
            transport = streamable_http_client(f"{nginx.base}/mcp")
            async with mcp.Client(
                transport,
                mode=mode,
                elicitation_callback=answers.elicitation,
                sampling_callback=answers.sampling,
            ) as client:
                assert client.protocol_version == ("2025-11-25" if mode == "legacy" else STATELESS)
                await body(client, answers)

    anyio.run(session, backend="asyncio")


def assert_round_robin(nginx: Nginx, replicas: list[Replica], rounds: list[str]) -> None:
    """Every replica served, and each round of a call went to another replica than the
    round before it (nginx keeps no affinity)."""
    assert set(nginx.upstreams()) == {r.upstream for r in replicas}
    assert all(here != there for here, there in pairwise(rounds)), rounds
    assert len(set(rounds)) == min(len(rounds), len(replicas))


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("mode", ["auto", STATELESS])
def test_python_sdk_client_round_robin_with_a_shared_key_file(
    count: int, mode: str, tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])

    async def body(client: mcp.Client, answers: Answers) -> None:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOL_NAMES)
        added = await client.call_tool("add", {"a": 20, "b": 22})
        assert added.structured_content == {"sum": 42}
        elicited = await client.call_tool("elicit", {"question": "colour?"})
        assert elicited.structured_content == {"action": "accept", "answer": "sdk: colour?"}
        sampled = await client.call_tool("sample", {"prompt": "6 x 7?"})
        assert "".join(getattr(c, "text", "") for c in sampled.content) == "forty-two"
        survey = await client.call_tool("survey", {"questions": QUESTIONS})
        assert survey.structured_content == {
            "answers": {q: f"sdk: {q}" for q in QUESTIONS},
            "completed": True,
        }
        assert answers.asked == ["colour?", *QUESTIONS]

    with (
        example_replicas(tmp_path, [ring] * count) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        run_sdk(nginx, mode, body)
        if mode == "auto":  # discovered, through the balancer
            assert nginx.upstreams("server/discover")
        assert len(nginx.upstreams("tools/call", "elicit")) == 2
        survey_rounds = nginx.upstreams("tools/call", "survey", count=len(QUESTIONS) + 1)
        assert len(survey_rounds) == len(QUESTIONS) + 1
        assert_round_robin(nginx, replicas, survey_rounds)


def test_python_sdk_client_round_robin_without_a_shared_key_fails_the_second_round(
    tmp_path: Path,
) -> None:
    """The negative control: each replica seals with its own random key (no key file)."""

    async def body(client: mcp.Client, answers: Answers) -> None:
        added = await client.call_tool("add", {"a": 1, "b": 2})  # stateless: fine anywhere
        assert added.structured_content == {"sum": 3}
        with pytest.raises(MCPError) as failed:
            await client.call_tool("survey", {"questions": QUESTIONS})
        assert failed.value.error.code == -32602
        assert failed.value.error.message.startswith("requestState failed its integrity check")
        assert answers.asked == QUESTIONS[:1]  # the first round was answered, then refused

    with (
        example_replicas(tmp_path, [None, None]) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        run_sdk(nginx, STATELESS, body)
        rounds = nginx.upstreams("tools/call", "survey", count=2)
        assert len(rounds) == 2 and rounds[0] != rounds[1]


def test_python_sdk_client_round_robin_during_a_rotation(
    tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    """Mid-rotation, replicas on [old, new] and [new, old] (one stage apart) serve a
    client's rounds alternately: every round opens what the other sealed."""
    old, new = keys
    rings = [write_key_file(tmp_path / "a", old, new), write_key_file(tmp_path / "b", new, old)]

    async def body(client: mcp.Client, answers: Answers) -> None:
        survey = await client.call_tool("survey", {"questions": QUESTIONS})
        assert survey.structured_content is not None
        assert survey.structured_content["completed"] is True

    with (
        example_replicas(tmp_path, rings) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        run_sdk(nginx, STATELESS, body)
        assert_round_robin(
            nginx, replicas, nginx.upstreams("tools/call", "survey", count=len(QUESTIONS) + 1)
        )
