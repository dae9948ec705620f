"""The official SDKs as the gateway's clients, both eras: the Python SDK
(``mcp`` 2.3: ``ClientSession`` over ``streamable_http_client``, and the
2026-07-28 ``mcp.Client``) and the TypeScript SDK v2 client
(``@modelcontextprotocol/client``).  The SDK is asyncio-based: these are plain
tests that run it with ``anyio.run``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import ClientSession, MCPError
from mcp import types as sdk
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .conftest import (
    API_KEY,
    BACKENDS,
    EXAMPLE_TOOLS,
    REPO,
    Setup,
    everything_connector,
    gateway,
    handshake_example_connector,
)

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]
AUTH = {"authorization": f"Bearer {API_KEY}"}
TS_CLIENT = Path(__file__).with_name("ts_client.mjs")


class Elicitation:
    """The SDK client's elicitation callback: answers ``{prefix}{question}``, and
    records each question."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        self.asked.append(params.message)
        return sdk.ElicitResult(action="accept", content={"answer": self.prefix + params.message})

    def survey_answer(self, questions: list[str]) -> dict[str, Any]:
        return {"answers": {q: self.prefix + q for q in questions}, "completed": True}


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_python_sdk_handshake_client(setup: Setup) -> None:
    async def body() -> None:
        async with create_mcp_http_client(headers=AUTH) as http:
            async with streamable_http_client(setup.url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    assert init.capabilities.tools is not None
                    assert init.capabilities.resources is None
                    names = {t.name for t in (await session.list_tools()).tools}
                    assert {f"example.{t}" for t in EXAMPLE_TOOLS} <= names
                    added = await session.call_tool("example.add", {"a": 2, "b": 3})
                    assert added.structured_content == {"sum": 5}
                    echoed = await session.call_tool("everything.echo", {"message": "x"})
                    assert _text(echoed) == "Echo: x"
                    with pytest.raises(MCPError) as info:
                        await session.call_tool("example.elicit", {"question": "colour?"})
                    assert info.value.error.code == -32021
                    with pytest.raises(MCPError) as info:
                        await session.call_tool("nowhere.echo", {})
                    assert info.value.error.code == -32602
                    assert "nowhere" in info.value.error.message

    anyio.run(body, backend="asyncio")


def test_python_sdk_handshake_client_answers_by_server_requests(setup: Setup) -> None:
    """A handshake-era client with an elicitation callback: the upstream's MRTR rounds
    reach it as elicitation/create requests on its POST's stream, no session needed."""
    elicitation = Elicitation("old: ")

    async def body() -> None:
        async with create_mcp_http_client(headers=AUTH) as http:
            async with streamable_http_client(setup.url, http_client=http) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicitation) as session:
                    await session.initialize()
                    questions = ["one?", "two?"]
                    survey = await session.call_tool("example.survey", {"questions": questions})
                    assert survey.structured_content == elicitation.survey_answer(questions)
                    assert elicitation.asked == questions

    anyio.run(body, backend="asyncio")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_python_sdk_clients_at_a_virtual_mcp(setup: Setup, mode: str) -> None:
    """At /mcp/ex the SDK's clients, of both eras, see the example server alone."""

    async def body() -> None:
        async with create_mcp_http_client(headers=AUTH) as http:
            transport = streamable_http_client(setup.url + "/ex", http_client=http)
            async with mcp.Client(transport, mode=mode) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert names == {f"example.{t}" for t in EXAMPLE_TOOLS}
                added = await client.call_tool("example.add", {"a": 2, "b": 3})
                assert added.structured_content == {"sum": 5}
                with pytest.raises(MCPError) as info:
                    await client.call_tool("everything.echo", {"message": "x"})
                assert info.value.error.code == -32602
                assert "unknown connector 'everything'" in info.value.error.message

    anyio.run(body, backend="asyncio")


def test_python_sdk_stateless_client(setup: Setup) -> None:
    elicitation = Elicitation("sdk: ")

    async def body() -> None:
        async with create_mcp_http_client(headers=AUTH) as http:
            transport = streamable_http_client(setup.url, http_client=http)
            async with mcp.Client(
                transport, mode="2026-07-28", elicitation_callback=elicitation
            ) as client:
                assert client.protocol_version == "2026-07-28"
                names = {t.name for t in (await client.list_tools()).tools}
                assert {f"example.{t}" for t in EXAMPLE_TOOLS} <= names
                added = await client.call_tool("example.add", {"a": 2, "b": 3})
                assert added.structured_content == {"sum": 5}
                questions = ["one?", "two?"]
                survey = await client.call_tool("example.survey", {"questions": questions})
                assert survey.structured_content == elicitation.survey_answer(questions)
                assert elicitation.asked == questions
                async with client.listen(tools_list_changed=True) as subscription:
                    assert subscription.honored.tools_list_changed is True

    anyio.run(body, backend="asyncio")


def _ts_client(url: str, mode: str, script: Path = TS_CLIENT) -> dict[str, Any]:
    """``script``'s report (ts_client.mjs's by default) of the gateway at ``url``
    (``mode`` before the API key on its command line, if given; skips without node)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    done = subprocess.run(
        [node, str(script), url, *([mode] if mode else []), API_KEY],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_typescript_sdk_client(setup: Setup, mode: str) -> None:
    report = _ts_client(setup.url, mode)
    assert {f"example.{t}" for t in EXAMPLE_TOOLS} <= set(report["tools"])
    assert report["add"]["structuredContent"] == {"sum": 5}
    assert report["unknown"]["error"]["code"] == -32602
    # Both eras get the question: by MRTR, or by a server-to-client request.
    assert report["elicit"]["structuredContent"] == {"action": "accept", "answer": "ts: colour?"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_sdk_stateless_clients_answer_handshake_upstreams(backend: str, tmp_path: Path) -> None:
    """Questions across eras: handshake-era upstreams (the example server at a
    handshake revision, server-everything) ask mid-call; the Python SDK's 2026-07-28
    client answers by MRTR, two rounds for a survey of two, and sampling too; the
    TypeScript SDK's answers the example server's elicitation."""
    config = {
        "connectors": {
            "old": handshake_example_connector(),
            "everything": everything_connector(),
            # (Named so for ts_client.mjs, which calls example.add and example.elicit.)
            "example": handshake_example_connector(),
        },
        "api_keys": [API_KEY],
    }
    elicitation = Elicitation("sdk: ")
    prompts: list[str] = []

    async def sampling(context: Any, params: sdk.CreateMessageRequestParams) -> Any:
        prompts.append(params.messages[0].content.text)  # type: ignore[union-attr]
        return sdk.CreateMessageResult(
            role="assistant", content=sdk.TextContent(type="text", text="sunny"), model="m"
        )

    async def body(url: str) -> None:
        async with create_mcp_http_client(headers=AUTH) as http:
            transport = streamable_http_client(url, http_client=http)
            async with mcp.Client(
                transport,
                mode="2026-07-28",
                elicitation_callback=elicitation,
                sampling_callback=sampling,
            ) as client:
                assert client.protocol_version == "2026-07-28"
                questions = ["one?", "two?"]
                survey = await client.call_tool("old.survey", {"questions": questions})
                assert survey.structured_content == elicitation.survey_answer(questions)
                assert elicitation.asked == questions
                sampled = await client.call_tool(
                    "everything.trigger-sampling-request", {"prompt": "weather?"}
                )
                assert "sunny" in _text(sampled) and not sampled.is_error
                assert prompts and "weather?" in prompts[0]

    with gateway(config, backend, tmp_path) as url:
        anyio.run(body, url, backend="asyncio")
        report = _ts_client(url, "modern")
    assert report["protocolVersion"] == "2026-07-28"
    assert report["add"]["structuredContent"] == {"sum": 5}
    assert report["elicit"]["structuredContent"] == {"action": "accept", "answer": "ts: colour?"}
