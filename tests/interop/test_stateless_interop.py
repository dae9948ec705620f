"""Interop on the stateless 2026-07-28 revision (and its fallbacks), against real peers.

Every peer runs as a real process; every exchange below is real JSON-RPC.

Interop matrix (client -> server, transport, revisions; "ours" = sansio-mcp);
every cell passes::

    client                   server                         wire   revisions        test
    -----------------------  -----------------------------  -----  ---------------  ----------------
    mcp SDK 2.3 Client       ours: example-server           stdio  2026-07-28 pin,  sdk_client_stdio
                                                                   auto->2026,
                                                                   legacy->2025-11
    mcp SDK 2.3 Client       ours: serve_http(example)      HTTP   same three       sdk_client_http
    ours: open_stdio_client  mcp SDK MCPServer, MRTR tools  stdio  stateless, auto     sdk_mrtr_*
    ours: open_stdio_client  TS SDK v2 serveStdio           stdio  stateless, auto,    ts_v2*
                                                                   legacy->2025-11
    ours: open_stdio_client  server-everything (TS SDK v1)  stdio  auto->handshake  auto_falls_back
    ours: sansio-mcp call    ours: example-server           stdio  2026, 2025-11,   cli_*
                                                                   auto

What each cell checks: tools/list; a structured result (``add``); an error
result (``fail``); and the input a tool needs from the client -- elicitation,
sampling, roots -- which on 2026-07-28 travels as MRTR ``input_required``
rounds and on a handshake revision as server-to-client requests.  Where the
wire is observable the number of rounds is asserted too: outgoing
``tools/call`` requests for the SDK client (counted on its write stream), and
rounds answered by our client (counted at ``ClientSession.provide_input``).

The SDK is asyncio/anyio based and pytest-trio's trio_mode claims every
``async def`` test, so the SDK-client tests are plain functions calling
``anyio.run``.  Every test body is bounded by ``BUDGET`` seconds and every
process it starts is stopped (the package conftest fails a test that leaks
a child process).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio
from mcp import Client as SDKClient
from mcp import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from sdk_peer import SDKCallbacks, sdk_text

from sansio_mcp import HANDSHAKE_REVISIONS, MissingRequiredClientCapability
from sansio_mcp._errors import InputRoundsExceeded
from sansio_mcp_apps.example_server import TOOL_NAMES
from trio_adapters import Client, ClientHandlers, open_stdio_client

from .conftest import EXAMPLE_SERVER, REPO, http_server

pytestmark = [
    pytest.mark.interop,
    # The SDK flags sampling, roots and logging as deprecated as of 2026-07-28
    # (SEP-2577); they are still part of the revision and are exercised here.
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

HERE = Path(__file__).resolve().parent
SDK_MRTR_SERVER = [sys.executable, str(HERE / "sdk_mrtr_server.py")]
TS_STATELESS_SERVER = HERE / "ts_stateless_server.mjs"

#: Seconds for one whole test, start-up and shutdown included.
BUDGET = 30
STATELESS = "2026-07-28"
NEWEST_HANDSHAKE = "2025-11-25"
EXAMPLE_TOOLS = set(TOOL_NAMES)
QUESTIONS = ["favourite colour?", "favourite number?", "favourite season?"]
ANSWERS = {"favourite colour?": "teal", "favourite number?": "7", "favourite season?": "autumn"}
ROOT = {"uri": "file:///work/interop-project", "name": "project"}


# Helpers -------------------------------------------------------------------------------


def run_sdk(body: Callable[[], Awaitable[None]]) -> None:
    """Run an SDK-side (asyncio) test body, bounded in time."""

    async def bounded() -> None:
        with anyio.fail_after(BUDGET):
            await body()

    anyio.run(bounded, backend="asyncio")


def texts(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result.get("content", []) if c.get("type") == "text")


class _RecordingWriter:
    """A write stream that notes every outgoing JSON-RPC request, then passes it on."""

    def __init__(self, inner: Any, sent: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._sent = sent

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        method = getattr(message, "method", None)
        if method is not None and getattr(message, "id", None) is not None:
            params = getattr(message, "params", None)
            if hasattr(params, "model_dump"):
                params = params.model_dump(by_alias=True, exclude_none=True)
            self._sent.append({"id": message.id, "method": method, "params": params or {}})
        await self._inner.send(item)

    async def __aenter__(self) -> _RecordingWriter:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@asynccontextmanager
async def recording(transport: Any, sent: list[dict[str, Any]]) -> AsyncIterator[Any]:
    """Wrap an SDK transport so the requests the SDK client sends are recorded."""
    async with transport as (read, write):
        yield read, _RecordingWriter(write, sent)


def tool_calls(sent: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [m for m in sent if m["method"] == "tools/call" and m["params"].get("name") == name]


async def exercise_example_server(
    client: SDKClient, callbacks: SDKCallbacks, sent: list[dict[str, Any]], stateless: bool
) -> None:
    """The assertions shared by the SDK-client tests (stdio and HTTP)."""
    assert client.protocol_version == (STATELESS if stateless else NEWEST_HANDSHAKE)

    tools = await client.list_tools()
    assert {t.name for t in tools.tools} == EXAMPLE_TOOLS

    added = await client.call_tool("add", {"a": 20, "b": 22})
    assert added.is_error is False
    assert added.structured_content == {"sum": 42}
    assert sdk_text(added) == "42"

    # One elicitation: on 2026-07-28 a single MRTR round (a first call answered
    # input_required, then one retry carrying the answer); a handshake session
    # asks with a server-to-client request inside the one call.
    answer = await client.call_tool("elicit", {"question": "favourite colour?"})
    assert answer.structured_content == {"action": "accept", "answer": "teal"}
    assert callbacks.elicited == ["favourite colour?"]
    calls = tool_calls(sent, "elicit")
    assert len(calls) == (2 if stateless else 1)
    if stateless:
        first, retry = calls
        assert "inputResponses" not in first["params"]
        (response,) = retry["params"]["inputResponses"].values()
        assert response == {"action": "accept", "content": {"answer": "teal"}}
        assert retry["id"] != first["id"]  # a retry is a new request

    sampled = await client.call_tool("sample", {"prompt": "6 x 7?"})
    assert sdk_text(sampled) == "forty-two"
    assert callbacks.sampled == ["6 x 7?"]
    assert len(tool_calls(sent, "sample")) == (2 if stateless else 1)

    roots = await client.call_tool("list_roots", {})
    assert roots.structured_content == {"roots": [ROOT]}
    assert callbacks.roots_asked == 1
    assert len(tool_calls(sent, "list_roots")) == (2 if stateless else 1)

    # Several questions: one MRTR round per question, asked in order, with the
    # answers so far carried by the server's requestState.
    callbacks.elicited.clear()
    survey = await client.call_tool("survey", {"questions": QUESTIONS})
    assert survey.is_error is False
    assert survey.structured_content == {"answers": ANSWERS, "completed": True}
    assert callbacks.elicited == QUESTIONS
    calls = tool_calls(sent, "survey")
    if stateless:
        assert len(calls) == len(QUESTIONS) + 1
        assert len({c["id"] for c in calls}) == len(calls)
        for retry in calls[1:]:
            assert len(retry["params"]["inputResponses"]) == 1
            assert retry["params"]["arguments"] == {"questions": QUESTIONS}
        assert all("requestState" in retry["params"] for retry in calls[2:])
    else:
        assert len(calls) == 1

    failed = await client.call_tool("fail", {"message": "nope"})
    assert failed.is_error is True
    assert sdk_text(failed) == "nope"


# 1. The SDK client against our example server over stdio -------------------------------


@pytest.mark.parametrize("mode", [STATELESS, "auto", "legacy"])
def test_sdk_client_stdio(mode: str, tmp_path: Path) -> None:
    """The SDK's ``mcp.Client`` drives ``python -m sansio_mcp_cli example-server``."""
    callbacks = SDKCallbacks(ANSWERS.__getitem__, ROOT)
    sent: list[dict[str, Any]] = []
    params = StdioServerParameters(
        command=EXAMPLE_SERVER[0], args=EXAMPLE_SERVER[1:], cwd=str(REPO)
    )

    async def body() -> None:
        with open(tmp_path / "server.stderr", "w") as errlog:
            transport = recording(stdio_client(params, errlog=errlog), sent)
            async with SDKClient(transport, mode=mode, **callbacks.client_options()) as client:
                if mode == "auto":  # discovered, not assumed
                    assert client.server_info is not None
                    assert client.server_info.name == "sansio-mcp-example"
                    assert [m["method"] for m in sent[:1]] == ["server/discover"]
                if mode == "legacy":
                    assert [m["method"] for m in sent[:1]] == ["initialize"]
                await exercise_example_server(client, callbacks, sent, stateless=mode != "legacy")
            # The plain StdioServerParameters form (the SDK builds the same transport).
            async with SDKClient(params, mode=mode) as client:
                assert client.protocol_version == (
                    NEWEST_HANDSHAKE if mode == "legacy" else STATELESS
                )
                added = await client.call_tool("add", {"a": 1, "b": 2})
                assert added.structured_content == {"sum": 3}

    run_sdk(body)


# 2. The SDK client against our Streamable HTTP server ----------------------------------


@pytest.fixture
def http_url() -> Iterator[str]:
    """``serve_http(build_server())`` in a child process; its /mcp URL."""
    with http_server() as url:
        yield url


@pytest.mark.parametrize("mode", [STATELESS, "auto", "legacy"])
def test_sdk_client_http(mode: str, http_url: str) -> None:
    """The SDK's ``mcp.Client`` over Streamable HTTP, ``serve_http``: both eras, one endpoint."""
    callbacks = SDKCallbacks(ANSWERS.__getitem__, ROOT)
    sent: list[dict[str, Any]] = []

    async def body() -> None:
        transport = recording(streamable_http_client(http_url), sent)
        async with SDKClient(transport, mode=mode, **callbacks.client_options()) as client:
            await exercise_example_server(client, callbacks, sent, stateless=mode != "legacy")
        # The plain URL form (the SDK builds the same transport itself).
        async with SDKClient(http_url, mode=mode) as client:
            assert client.protocol_version == (NEWEST_HANDSHAKE if mode == "legacy" else STATELESS)
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added.structured_content == {"sum": 3}

    run_sdk(body)


# 3. Our Trio client against an SDK MCPServer whose tools use MRTR ----------------------


class TrioAnswers:
    """Our client's handlers, recording each question and each answered round."""

    def __init__(self, *, decline: bool = False) -> None:
        self.decline = decline
        self.elicited: list[str] = []
        self.sampled: list[dict[str, Any]] = []
        self.rounds: list[list[str]] = []

    def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        message = params["message"]
        self.elicited.append(message)
        if self.decline:
            return {"action": "decline"}
        answer = {"name?": "Ada", "city?": "Paris"}.get(message, f"answer {len(self.elicited)}")
        if message.endswith("favourite colour?"):
            answer = "teal"
        return {"action": "accept", "content": {"answer": answer}}

    async def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self.sampled.append(params)
        await trio.sleep(0)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "trio-test-model",
            "stopReason": "endTurn",
        }

    def handlers(self) -> ClientHandlers:
        return ClientHandlers(elicitation=self.elicitation, sampling=self.sampling, roots=[ROOT])

    def watch_rounds(self, client: Client) -> None:
        """Record the keys of each MRTR round our client answers."""
        session = client.session
        provide = session.provide_input

        def spy(request_id: Any, responses: dict[str, Any]) -> Any:
            self.rounds.append(sorted(responses))
            return provide(request_id, responses)

        session.provide_input = spy  # type: ignore[method-assign]


SDK_MRTR_TOOLS = {"greet", "profile", "chain", "ask_model", "roots", "countdown"}


@pytest.mark.parametrize("mode", ["modern", "auto"])
async def test_trio_client_sdk_mrtr_server(mode: str) -> None:
    """Resolver-based and hand-written MRTR tools of the SDK, answered by our handlers."""
    answers = TrioAnswers()
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            SDK_MRTR_SERVER, mode=mode, handlers=answers.handlers(), cwd=REPO
        ) as client:
            assert client.protocol_version == STATELESS  # auto discovered it
            assert client.server_info["name"] == "sdk-mrtr-peer"
            answers.watch_rounds(client)
            assert {t["name"] for t in await client.list_tools()} == SDK_MRTR_TOOLS

            greeted = await client.call_tool("greet", {})
            assert texts(greeted) == "hello Ada"
            assert answers.elicited == ["name?"]
            assert len(answers.rounds) == 1

            # Two independent questions: the SDK batches them into one round.
            answers.elicited.clear()
            answers.rounds.clear()
            profile = await client.call_tool("profile", {})
            assert texts(profile) == "Ada from Paris"
            assert sorted(answers.elicited) == ["city?", "name?"]
            assert len(answers.rounds) == 1 and len(answers.rounds[0]) == 2

            # A question that depends on an answer: two rounds, in order.
            answers.elicited.clear()
            answers.rounds.clear()
            chain = await client.call_tool("chain", {})
            assert texts(chain) == "Ada likes teal"
            assert answers.elicited == ["name?", "hello Ada, favourite colour?"]
            assert len(answers.rounds) == 2

            sampled = await client.call_tool("ask_model", {"prompt": "6 x 7?"})
            assert texts(sampled) == "model trio-test-model said forty-two"
            (request,) = answers.sampled
            assert request["messages"][0]["content"]["text"] == "6 x 7?"
            assert request["maxTokens"] == 50

            roots = await client.call_tool("roots", {})
            assert texts(roots) == ROOT["uri"]

            # Hand-written MRTR: three rounds, the tally in the server's requestState
            # (which our client must echo exactly for the count to add up).
            answers.elicited.clear()
            answers.rounds.clear()
            counted = await client.call_tool("countdown", {"n": 3})
            assert texts(counted) == "answer 1 answer 2 answer 3"
            assert answers.elicited == [f"question {i} of 3?" for i in (1, 2, 3)]
            assert answers.rounds == [["q0"], ["q1"], ["q2"]]


async def test_trio_client_sdk_mrtr_declines_and_limits() -> None:
    """A declined elicitation reaches the SDK tool; a missing capability is -32021; the
    client's round limit stops a server that keeps asking."""
    declining = TrioAnswers(decline=True)
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            SDK_MRTR_SERVER,
            mode="modern",
            handlers=declining.handlers(),
            cwd=REPO,
            max_input_rounds=1,
        ) as client:
            assert texts(await client.call_tool("greet", {})) == "user chose decline"
            # The SDK tool asks again after every decline.  max_input_rounds counts
            # answered rounds, as the SDKs do: 1 answered round, then the limit.
            declining.elicited.clear()
            with pytest.raises(InputRoundsExceeded, match="after 2 rounds"):
                await client.call_tool("countdown", {"n": 1})
            assert declining.elicited == ["question 1 of 1?"]

        async with open_stdio_client(SDK_MRTR_SERVER, mode="modern", cwd=REPO) as client:
            with pytest.raises(MissingRequiredClientCapability) as caught:
                await client.call_tool("greet", {})
            assert caught.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


# 4. Our Trio client against a TypeScript SDK v2 server ---------------------------------


@pytest.fixture
def ts_stateless_command() -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; the TypeScript SDK interop tests need Node 20+")
    server_pkg = REPO / "node_modules" / "@modelcontextprotocol" / "server" / "package.json"
    if not server_pkg.is_file():
        pytest.skip(f"@modelcontextprotocol/server is not installed: run `npm ci` in {REPO}")
    return [node, str(TS_STATELESS_SERVER)]


@pytest.mark.parametrize("mode", ["modern", "auto"])
async def test_trio_client_ts_v2(mode: str, ts_stateless_command: list[str]) -> None:
    """TS SDK v2 ``serveStdio``: discovery, tools, and MRTR elicitation and sampling."""
    answers = TrioAnswers()
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            ts_stateless_command, mode=mode, handlers=answers.handlers(), cwd=REPO
        ) as client:
            assert client.protocol_version == STATELESS
            assert client.server_info["name"] == "ts-modern-interop"
            assert "tools" in client.server_capabilities
            answers.watch_rounds(client)

            tools = {t["name"]: t for t in await client.list_tools()}
            assert set(tools) == {"echo", "add", "confirm", "two_questions", "ask_model", "fail"}
            assert tools["add"]["outputSchema"]["properties"]["sum"]["type"] == "number"

            echoed = await client.call_tool("echo", {"message": "snow ☃"})
            assert texts(echoed) == "echo: snow ☃"
            assert echoed["resultType"] == "complete"
            added = await client.call_tool("add", {"a": 20, "b": 22})
            assert added["structuredContent"] == {"sum": 42}
            failed = await client.call_tool("fail", {"message": "nope"})
            assert failed["isError"] is True and texts(failed) == "nope"

            confirmed = await client.call_tool("confirm", {"question": "name?"})
            assert texts(confirmed) == "user said Ada"
            assert answers.elicited == ["name?"] and answers.rounds == [["answer"]]

            # Two rounds; the server's requestState must come back verbatim.
            answers.elicited.clear()
            answers.rounds.clear()
            both = await client.call_tool("two_questions", {})
            assert texts(both) == "first=answer 1; second=answer 2"
            assert answers.elicited == ["first?", "second?"]
            assert answers.rounds == [["first"], ["second"]]

            sampled = await client.call_tool("ask_model", {"prompt": "6 x 7?"})
            assert texts(sampled) == "model trio-test-model said forty-two"
            assert answers.sampled[0]["messages"][0]["content"]["text"] == "6 x 7?"


async def test_trio_client_ts_v2_legacy(ts_stateless_command: list[str]) -> None:
    """The same TS SDK v2 server, opened with the handshake: ``serveStdio`` serves 2025 too."""
    with trio.fail_after(BUDGET):
        async with open_stdio_client(ts_stateless_command, mode="legacy", cwd=REPO) as client:
            assert client.protocol_version in HANDSHAKE_REVISIONS
            assert client.protocol_version == NEWEST_HANDSHAKE
            assert {"echo", "add"} <= {t["name"] for t in await client.list_tools()}
            assert texts(await client.call_tool("echo", {"message": "hi"})) == "echo: hi"
            added = await client.call_tool("add", {"a": 1.5, "b": 2})
            assert added["structuredContent"] == {"sum": 3.5}


# 5. Our auto mode against a handshake-only server --------------------------------------


async def test_trio_client_auto_falls_back_on_server_everything(
    everything_command: list[str],
) -> None:
    """server-everything (TS SDK v1) has no server/discover: auto falls back to the handshake."""
    with trio.fail_after(BUDGET):
        async with open_stdio_client(everything_command, mode="auto") as client:
            assert client.protocol_version in HANDSHAKE_REVISIONS
            assert not client.session.is_stateless
            assert client.server_info["name"] == "mcp-servers/everything"
            echoed = await client.call_tool("echo", {"message": "fallback"})
            assert texts(echoed) == "Echo: fallback"


# 6. The CLI answering a multi-round survey --------------------------------------------


def run_cli(*args: str, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """``sansio-mcp`` (as ``python -m sansio_mcp_cli``, the same entry point), bounded."""
    return subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        cwd=str(REPO),
        timeout=BUDGET,
        check=False,
    )


SURVEY_ARGS = json.dumps({"questions": ["a?", "b?"]})


@pytest.mark.parametrize("version", [STATELESS, NEWEST_HANDSHAKE, "auto"])
def test_cli_survey_answers_from_options(version: str) -> None:
    """``call survey --elicit ... --elicit ...``: each --elicit answers one round, in order."""
    done = run_cli(
        "call", "survey", "--protocol-version", version, "--args", SURVEY_ARGS,
        "--elicit", '{"answer": "x"}', "--elicit", '{"answer": "y"}',
        "--", *EXAMPLE_SERVER,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"] == {"answers": {"a?": "x", "b?": "y"}, "completed": True}
    assert texts(result) == "a? x\nb? y"
    assert done.stderr == ""


def test_cli_survey_declines_without_answers() -> None:
    """No --elicit and stdin not a terminal: the CLI declines, says so, and exits cleanly."""
    done = run_cli(
        "call", "survey", "--protocol-version", STATELESS, "--args", SURVEY_ARGS,
        "--", *EXAMPLE_SERVER,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"] == {"answers": {}, "completed": False}
    assert texts(result) == "survey stopped at 'a?': the user chose to decline"
    assert done.stderr == (
        "sansio-mcp call: the server asked 'a?' and no --elicit answer was left: declined\n"
    )


def test_cli_survey_runs_out_of_answers() -> None:
    """One --elicit for two questions: the first is answered, the second declined."""
    done = run_cli(
        "call", "survey", "--protocol-version", STATELESS, "--args", SURVEY_ARGS,
        "--elicit", '{"answer": "x"}', "--", *EXAMPLE_SERVER,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"] == {"answers": {"a?": "x"}, "completed": False}
    assert "the server asked 'b?' and no --elicit answer was left: declined" in done.stderr
