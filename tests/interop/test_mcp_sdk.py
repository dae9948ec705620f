"""Interop with the official Python SDK (``mcp`` 2.3), both directions, over stdio.

a. The SDK client (``mcp.stdio_client`` + ``mcp.ClientSession``) against our
   example server (``python -m sansio_mcp_cli example-server``).  The SDK is
   asyncio/anyio based and pytest-trio's trio_mode claims every ``async def``
   test, so these are plain tests that call ``anyio.run(..., backend="asyncio")``.

   Forcing the requested revision: ``ClientSession.initialize()`` always offers
   ``mcp.client.session.LATEST_HANDSHAKE_VERSION`` (a module global, 2025-11-25)
   and has no parameter for it, so each test monkeypatches that global.  The
   SDK then sends that version, builds its own capabilities, validates the
   result and adopts whatever version the server answered, exactly as usual.

   ``test_sdk_client_stateless`` does the same on 2026-07-28 with the SDK's
   high-level ``mcp.Client`` (MRTR answered by its callbacks, ``listen()``).

b. Our Trio client against an SDK ``MCPServer`` (``tests/interop/sdk_server.py``),
   at every handshake revision, at 2026-07-28 and with ``mode="auto"``.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp.client.session
import pytest
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp import types as sdk
from sdk_peer import sdk_text, wait_until

from sansio_mcp import MethodNotFound, MissingRequiredClientCapability
from sansio_mcp_apps.example_server import TOOL_NAMES
from trio_adapters import ClientHandlers, open_stdio_client

from .conftest import EXAMPLE_SERVER, REPO, REVISIONS, SDK_SERVER

pytestmark = [
    pytest.mark.interop,
    # The SDK flags logging, sampling and resources/subscribe as deprecated as of
    # 2026-07-28; at the handshake revisions tested here they are current.
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

#: Seconds for one whole test, start-up and shutdown included.
BUDGET = 30
PAGE_SIZE = 3
EXAMPLE_TOOLS = set(TOOL_NAMES)
SURVEY_ANSWERS = {"favourite colour?": "teal", "favourite number?": "7"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# a. The SDK client against our example server -----------------------------------------


def run_sdk(test: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run an SDK-side test body on asyncio, bounded in time."""

    async def bounded() -> None:
        with anyio.fail_after(BUDGET):
            await test(*args)

    anyio.run(bounded, backend="asyncio")


@pytest.fixture
def force_revision(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make the SDK's ``initialize()`` request the given revision (see the module doc)."""

    def force(protocol_version: str) -> None:
        assert hasattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION"), "the SDK moved its constant"
        monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", protocol_version)

    return force


@pytest.fixture
def errlog(tmp_path: Path) -> TextIO:
    """Where the example server's stderr goes (a file the SDK can hand to the child)."""
    with open(tmp_path / "server.stderr", "w") as f:
        yield f


@asynccontextmanager
async def sdk_client(errlog: TextIO, **callbacks: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=EXAMPLE_SERVER[0],
        args=[*EXAMPLE_SERVER[1:], "--page-size", str(PAGE_SIZE)],
        cwd=str(REPO),  # `python -m` then imports the checkout under test
    )
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            yield session


async def all_pages(
    list_page: Callable[[str | None], Awaitable[Any]], attr: str
) -> tuple[list[Any], int]:
    """Every item of a paginated SDK list call, and how many pages it took."""
    items: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        result = await list_page(cursor)
        pages += 1
        items.extend(getattr(result, attr))
        cursor = result.next_cursor
        if cursor is None:
            return items, pages
        assert pages < 20, "pagination does not end"


def by_params(list_call: Callable[..., Awaitable[Any]]) -> Callable[[str | None], Awaitable[Any]]:
    """Adapt a ``ClientSession.list_*`` method (``params=``) to :func:`all_pages`."""

    def page(cursor: str | None) -> Awaitable[Any]:
        params = sdk.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        return list_call(params=params)

    return page


@pytest.mark.parametrize("protocol_version", REVISIONS)
def test_sdk_client_tools(force_revision: Any, errlog: TextIO, protocol_version: str) -> None:
    force_revision(protocol_version)

    async def body() -> None:
        async with sdk_client(errlog) as session:
            init = await session.initialize()
            assert init.protocol_version == protocol_version
            assert session.protocol_version == protocol_version
            assert init.server_info.name == "sansio-mcp-example"
            assert init.server_info.version == "0.1.0"
            # Implementation.title exists from 2025-06-18; our server leaves it out before.
            expected_title = (
                "sansio-mcp example server" if protocol_version >= "2025-06-18" else None
            )
            assert init.server_info.title == expected_title
            assert init.instructions == "An example server: every MCP feature, no network."
            caps = init.capabilities
            assert caps.tools is not None and caps.tools.list_changed is True
            assert caps.resources is not None and caps.resources.subscribe is True
            assert caps.prompts is not None and caps.logging is not None
            # The completions capability exists from 2025-03-26.
            assert (caps.completions is not None) == (protocol_version >= "2025-03-26")

            await session.send_ping()
            tools, pages = await all_pages(by_params(session.list_tools), "tools")
            assert {t.name for t in tools} == EXAMPLE_TOOLS
            assert pages == -(-len(EXAMPLE_TOOLS) // PAGE_SIZE)
            add_tool = next(t for t in tools if t.name == "add")
            assert add_tool.output_schema is not None
            assert add_tool.input_schema["required"] == ["a", "b"]

            echoed = await session.call_tool("echo", {"message": "hello from the SDK ☃"})
            assert not echoed.is_error
            assert sdk_text(echoed) == "hello from the SDK ☃"

            # The SDK validates structuredContent against add's outputSchema here.
            added = await session.call_tool("add", {"a": 2, "b": 40})
            assert not added.is_error
            assert added.structured_content == {"sum": 42}
            assert float(sdk_text(added)) == 42

            failed = await session.call_tool("fail", {"message": "deliberate failure"})
            assert failed.is_error is True
            assert sdk_text(failed) == "deliberate failure"

            # A value of the wrong type is the tool's error (SEP-1303) ...
            invalid = await session.call_tool("add", {"a": "two", "b": 1})
            assert invalid.is_error is True
            assert "invalid arguments" in sdk_text(invalid)
            # ... a missing argument is invalid params, naming it.
            with pytest.raises(MCPError) as missing:
                await session.call_tool("add", {"a": 2})
            assert missing.value.error.code == sdk.INVALID_PARAMS
            assert "'b'" in missing.value.error.message

            with pytest.raises(MCPError) as excinfo:
                await session.call_tool("no-such-tool", {})
            assert excinfo.value.error.code == sdk.INVALID_PARAMS

            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))

            slow = await session.call_tool(
                "slow", {"seconds": 0.15, "steps": 3}, progress_callback=on_progress
            )
            assert sdk_text(slow) == "done after 0.15 seconds in 3 steps"
            await wait_until(lambda: len(progress) == 3)
            assert [(p, t) for p, t, _ in progress] == [(1, 3), (2, 3), (3, 3)]
            # ProgressNotification.message exists from 2025-03-26.
            if protocol_version >= "2025-03-26":
                assert [m for _, _, m in progress] == [f"step {i} of 3" for i in (1, 2, 3)]
            else:
                assert [m for _, _, m in progress] == [None, None, None]

    run_sdk(body)


@pytest.mark.parametrize("protocol_version", REVISIONS)
def test_sdk_client_answers_server_requests(
    force_revision: Any, errlog: TextIO, protocol_version: str
) -> None:
    force_revision(protocol_version)
    sampled: list[sdk.CreateMessageRequestParams] = []
    elicited: list[sdk.ElicitRequestParams] = []
    roots_asked: list[int] = []

    async def sampling(
        context: Any, params: sdk.CreateMessageRequestParams
    ) -> sdk.CreateMessageResult:
        sampled.append(params)
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text="forty-two"),
            model="sdk-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        elicited.append(params)
        return sdk.ElicitResult(
            action="accept", content={"answer": SURVEY_ANSWERS.get(params.message, "teal")}
        )

    async def list_roots(context: Any) -> sdk.ListRootsResult:
        roots_asked.append(1)
        return sdk.ListRootsResult(
            roots=[
                sdk.Root(uri="file:///work/sdk-project", name="sdk-project"),
                sdk.Root(uri="file:///work/other"),
            ]
        )

    async def body() -> None:
        async with sdk_client(
            errlog,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            list_roots_callback=list_roots,
        ) as session:
            await session.initialize()
            await all_pages(by_params(session.list_tools), "tools")

            answer = await session.call_tool("sample", {"prompt": "what is 6 x 7?"})
            assert not answer.is_error
            assert sdk_text(answer) == "forty-two"
            (params,) = sampled
            assert params.max_tokens == 200
            (message,) = params.messages
            assert message.role == "user"
            assert isinstance(message.content, sdk.TextContent)
            assert message.content.text == "what is 6 x 7?"

            roots = await session.call_tool("list_roots", {})
            assert not roots.is_error
            assert roots_asked == [1]
            assert (
                sdk_text(roots)
                == "sdk-project: file:///work/sdk-project\nfile:///work/other: file:///work/other"
            )
            assert roots.structured_content == {
                "roots": [
                    {"uri": "file:///work/sdk-project", "name": "sdk-project"},
                    {"uri": "file:///work/other"},
                ]
            }

            answer = await session.call_tool("elicit", {"question": "favourite colour?"})
            if protocol_version < "2025-06-18":
                # elicitation/create does not exist before 2025-06-18: our server will not
                # send it (whatever the SDK advertised) and the tool reports the refusal.
                assert answer.is_error is True
                assert "elicitation/create" in sdk_text(answer)
                assert elicited == []
                return
            assert not answer.is_error
            assert sdk_text(answer) == "teal"
            assert answer.structured_content == {"action": "accept", "answer": "teal"}
            (params,) = elicited
            assert params.message == "favourite colour?"
            schema = params.requested_schema
            assert schema["type"] == "object" and schema["required"] == ["answer"]
            assert schema["properties"]["answer"]["type"] == "string"

            # Several elicitations inside one tool call.
            survey = await session.call_tool("survey", {"questions": list(SURVEY_ANSWERS)})
            assert not survey.is_error
            assert [e.message for e in elicited[1:]] == list(SURVEY_ANSWERS)
            assert survey.structured_content == {"answers": SURVEY_ANSWERS, "completed": True}
            assert sdk_text(survey) == "favourite colour? teal\nfavourite number? 7"

    run_sdk(body)


@pytest.mark.parametrize("protocol_version", REVISIONS)
def test_sdk_client_resources_prompts_completion(
    force_revision: Any, errlog: TextIO, protocol_version: str
) -> None:
    force_revision(protocol_version)

    async def body() -> None:
        async with sdk_client(errlog) as session:
            await session.initialize()
            resources, _ = await all_pages(by_params(session.list_resources), "resources")
            by_uri = {str(r.uri): r for r in resources}
            assert set(by_uri) == {"example://readme", "example://logo.png", "example://counter"}
            assert by_uri["example://logo.png"].mime_type == "image/png"
            templates, _ = await all_pages(
                by_params(session.list_resource_templates), "resource_templates"
            )
            assert [t.uri_template for t in templates] == ["example://colours/{colour}"]

            readme = await session.read_resource("example://readme")
            (content,) = readme.contents
            assert isinstance(content, sdk.TextResourceContents)
            assert content.mime_type == "text/markdown"
            assert content.text.startswith("# sansio-mcp example")

            logo = await session.read_resource("example://logo.png")
            (content,) = logo.contents
            assert isinstance(content, sdk.BlobResourceContents)
            assert content.mime_type == "image/png"
            assert base64.b64decode(content.blob).startswith(PNG_SIGNATURE)

            colour = await session.read_resource("example://colours/teal")
            (content,) = colour.contents
            assert isinstance(content, sdk.TextResourceContents)
            assert content.text == "teal is a fine colour"

            with pytest.raises(MCPError):
                await session.read_resource("example://nothing-here")

            prompts, _ = await all_pages(by_params(session.list_prompts), "prompts")
            by_name = {p.name: p for p in prompts}
            assert set(by_name) == {"greeting", "review"}
            assert not by_name["greeting"].arguments
            assert [(a.name, a.required) for a in by_name["review"].arguments or []] == [
                ("code", True),
                ("language", False),
            ]
            greeting = await session.get_prompt("greeting")
            (message,) = greeting.messages
            assert isinstance(message.content, sdk.TextContent)
            assert message.content.text == "Say hello to the user in one short sentence."
            review = await session.get_prompt(
                "review", {"code": "fn main() {}", "language": "rust"}
            )
            (message,) = review.messages
            assert isinstance(message.content, sdk.TextContent)
            assert message.content.text == "Please review this rust code:\n\nfn main() {}"
            with pytest.raises(MCPError):
                await session.get_prompt("review", {})  # code is required

            by_template = await session.complete(
                sdk.ResourceTemplateReference(
                    type="ref/resource", uri="example://colours/{colour}"
                ),
                {"name": "colour", "value": "b"},
            )
            assert by_template.completion.values == ["blue", "black"]
            assert by_template.completion.total == 2
            by_prompt = await session.complete(
                sdk.PromptReference(type="ref/prompt", name="review"),
                {"name": "language", "value": "py"},
                context_arguments={"code": "x = 1"},
            )
            assert by_prompt.completion.values == ["python"]

    run_sdk(body)


@pytest.mark.parametrize("protocol_version", REVISIONS)
def test_sdk_client_logging_and_subscription(
    force_revision: Any, errlog: TextIO, protocol_version: str
) -> None:
    force_revision(protocol_version)
    logs: list[sdk.LoggingMessageNotificationParams] = []
    updates: list[str] = []

    async def on_log(params: sdk.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_message(message: Any) -> None:
        if isinstance(message, sdk.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    def counters() -> list[Any]:
        return [log.data.get("counter") for log in logs if isinstance(log.data, dict)]

    async def increment(session: ClientSession) -> str:
        result = await session.call_tool("increment", {"by": 1})
        assert not result.is_error
        return sdk_text(result)

    async def body() -> None:
        async with sdk_client(
            errlog, logging_callback=on_log, message_handler=on_message
        ) as session:
            await session.initialize()
            await session.set_logging_level("info")
            await session.subscribe_resource("example://counter")
            assert await increment(session) == "1"
            await wait_until(lambda: counters() == [1] and updates == ["example://counter"])
            (log,) = logs
            assert log.level == "info" and log.logger == "example"

            # Above the threshold: no log, but the subscription still reports the update.
            await session.set_logging_level("error")
            assert await increment(session) == "2"
            # Unsubscribed: no update either.
            await session.unsubscribe_resource("example://counter")
            assert await increment(session) == "3"

            # Back on: whatever 2 and 3 sent would have arrived before this.
            await session.set_logging_level("debug")
            await session.subscribe_resource("example://counter")
            assert await increment(session) == "4"
            await wait_until(lambda: 4 in counters() and len(updates) >= 3)
            assert counters() == [1, 4]
            assert updates == ["example://counter"] * 3

            counter = await session.read_resource("example://counter")
            (content,) = counter.contents
            assert isinstance(content, sdk.TextResourceContents)
            assert content.text.replace(" ", "") == '{"value":4}'

    run_sdk(body)


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
def test_sdk_client_stateless(errlog: TextIO, mode: str) -> None:
    """The SDK's high-level ``mcp.Client`` on 2026-07-28: discovered (``auto``) or pinned.

    No handshake; server-to-client requests become MRTR ``input_required`` rounds
    that ``mcp.Client`` answers with the same callbacks.
    """
    sampled: list[sdk.CreateMessageRequestParams] = []
    elicited: list[str] = []
    roots_asked: list[int] = []
    logs: list[sdk.LoggingMessageNotificationParams] = []

    async def sampling(context: Any, params: sdk.CreateMessageRequestParams) -> Any:
        sampled.append(params)
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text="forty-two"),
            model="sdk-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        elicited.append(params.message)
        answer = SURVEY_ANSWERS.get(params.message, "teal")
        return sdk.ElicitResult(action="accept", content={"answer": answer})

    async def list_roots(context: Any) -> sdk.ListRootsResult:
        roots_asked.append(1)
        return sdk.ListRootsResult(roots=[sdk.Root(uri="file:///work/sdk-project", name="p")])

    async def on_log(params: sdk.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    server = StdioServerParameters(
        command=EXAMPLE_SERVER[0],
        args=[*EXAMPLE_SERVER[1:], "--page-size", str(PAGE_SIZE)],
        cwd=str(REPO),
    )

    async def body() -> None:
        async with mcp.Client(
            stdio_client(server, errlog=errlog),  # a Transport: any async CM of a stream pair
            mode=mode,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            list_roots_callback=list_roots,
            logging_callback=on_log,
            log_level="info",
        ) as client:
            assert client.protocol_version == "2026-07-28"
            if mode == "auto":  # discovered: server/discover told it who we are
                assert client.server_info is not None
                assert client.server_info.name == "sansio-mcp-example"
                assert client.server_capabilities.tools is not None

            tools, pages = await all_pages(lambda c: client.list_tools(cursor=c), "tools")
            assert {t.name for t in tools} == EXAMPLE_TOOLS
            assert pages == -(-len(EXAMPLE_TOOLS) // PAGE_SIZE)

            echoed = await client.call_tool("echo", {"message": "stateless ☃"})
            assert sdk_text(echoed) == "stateless ☃"
            added = await client.call_tool("add", {"a": 20, "b": 22})
            assert added.structured_content == {"sum": 42}
            failed = await client.call_tool("fail", {"message": "nope"})
            assert failed.is_error is True and sdk_text(failed) == "nope"

            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))

            slow = await client.call_tool(
                "slow", {"seconds": 0.1, "steps": 2}, progress_callback=on_progress
            )
            assert sdk_text(slow) == "done after 0.1 seconds in 2 steps"
            await wait_until(lambda: len(progress) == 2)
            assert progress == [(1, 2, "step 1 of 2"), (2, 2, "step 2 of 2")]

            # MRTR: each input the tool needs is one input_required round.
            assert sdk_text(await client.call_tool("sample", {"prompt": "6 x 7?"})) == "forty-two"
            assert [p.messages[0].content.text for p in sampled] == ["6 x 7?"]  # type: ignore[union-attr]
            roots = await client.call_tool("list_roots", {})
            assert sdk_text(roots) == "p: file:///work/sdk-project" and roots_asked == [1]
            answer = await client.call_tool("elicit", {"question": "favourite colour?"})
            assert answer.structured_content == {"action": "accept", "answer": "teal"}
            survey = await client.call_tool("survey", {"questions": list(SURVEY_ANSWERS)})
            assert survey.structured_content == {"answers": SURVEY_ANSWERS, "completed": True}
            assert elicited == ["favourite colour?", *SURVEY_ANSWERS]

            logo = await client.read_resource("example://logo.png")
            (content,) = logo.contents
            assert isinstance(content, sdk.BlobResourceContents)
            assert base64.b64decode(content.blob).startswith(PNG_SIGNATURE)
            review = await client.get_prompt("review", {"code": "x = 1"})
            assert review.messages[0].content.text.endswith("x = 1")  # type: ignore[union-attr]
            completed = await client.complete(
                sdk.PromptReference(type="ref/prompt", name="review"),
                {"name": "language", "value": "ru"},
            )
            assert completed.completion.values == ["rust"]

            # Logging is opted into per request (log_level above); updates come via listen.
            async with client.listen(resource_subscriptions=["example://counter"]) as events:
                bumped = await client.call_tool("increment", {"by": 5})
                assert sdk_text(bumped) == "5"
                with anyio.fail_after(5):
                    event = await events.__anext__()
                assert str(event.uri) == "example://counter"  # type: ignore[union-attr]
            await wait_until(lambda: any(log.data == {"counter": 5} for log in logs))

    run_sdk(body)


# b. Our Trio client against an SDK MCPServer -------------------------------------------


def _texts(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result.get("content", []) if c.get("type") == "text")


@pytest.mark.parametrize("protocol_version", [*REVISIONS, "2026-07-28", "auto"])
async def test_trio_client_against_sdk_server(protocol_version: str) -> None:
    """Every revision the SDK server speaks; ``auto`` must discover 2026-07-28."""
    stateless = protocol_version in ("2026-07-28", "auto")
    sampled: list[dict[str, Any]] = []
    elicited: list[dict[str, Any]] = []
    roots_asked: list[int] = []

    def sampling(params: dict[str, Any]) -> dict[str, Any]:
        sampled.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "canned"},
            "model": "trio-model",
            "stopReason": "endTurn",
        }

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        elicited.append(params)
        return {"action": "accept", "content": {"answer": "blue"}}

    def roots() -> list[dict[str, Any]]:
        roots_asked.append(1)
        return [{"uri": "file:///work/trio-project", "name": "trio-project"}]

    handlers = ClientHandlers(sampling=sampling, elicitation=elicitation, roots=roots)
    version_option = {} if protocol_version == "auto" else {"protocol_version": protocol_version}
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            [sys.executable, str(SDK_SERVER)], handlers=handlers, cwd=REPO, **version_option
        ) as client:
            assert client.protocol_version == ("2026-07-28" if stateless else protocol_version)
            assert client.session.is_stateless is stateless
            assert client.server_info == {"name": "sdk-interop-server", "version": "1.2.3"}
            if not stateless:
                assert client.instructions == "An mcp SDK peer for interop tests."
            assert {"tools", "resources", "prompts"} <= set(client.server_capabilities)
            await client.ping()  # server/discover on 2026-07-28

            tools = {t["name"]: t for t in await client.list_tools()}
            assert {"echo", "add", "countdown", "resolve_user", "resolve_model"} <= set(tools)
            assert tools["add"]["outputSchema"]["properties"]["sum"]["type"] == "number"
            assert tools["echo"]["inputSchema"]["required"] == ["message"]
            # Resolver-filled parameters are not tool arguments.
            assert list(tools["resolve_user"]["inputSchema"]["properties"]) == ["question"]

            echoed = await client.call_tool("echo", {"message": "hi ☃"})
            assert echoed["isError"] is False
            assert _texts(echoed) == "echo: hi ☃"
            assert echoed["structuredContent"] == {"result": "echo: hi ☃"}

            added = await client.call_tool("add", {"a": 1, "b": 2.5})
            assert added["structuredContent"] == {"sum": 3.5}

            progress: list[tuple[float, float | None, str | None]] = []
            counted = await client.call_tool(
                "countdown", {"steps": 3}, on_progress=lambda p, t, m: progress.append((p, t, m))
            )
            assert _texts(counted) == "counted 3"
            assert [(p, t) for p, t, _ in progress] == [(1, 3), (2, 3), (3, 3)]

            # Resolvers: standalone server-to-client requests on a handshake session,
            # input_required rounds (MRTR) on 2026-07-28, answered by the same handlers.
            modelled = await client.call_tool("resolve_model", {"prompt": "say something"})
            assert _texts(modelled) == "model trio-model said canned"
            (params,) = sampled
            assert params["maxTokens"] == 50
            assert params["systemPrompt"] == "be brief"
            assert params["messages"] == [
                {"role": "user", "content": {"type": "text", "text": "say something"}}
            ]
            found = await client.call_tool("resolve_roots", {})
            assert _texts(found) == "file:///work/trio-project"
            assert roots_asked == [1]
            if stateless or protocol_version >= "2025-06-18":
                asked = await client.call_tool("resolve_user", {"question": "favourite colour?"})
                assert _texts(asked) == "user said blue"
                (params,) = elicited
                assert params["message"] == "favourite colour?"
                assert params["requestedSchema"]["type"] == "object"
                assert "answer" in params["requestedSchema"]["properties"]
            else:
                # We do not advertise elicitation before 2025-06-18; the SDK checks first.
                with pytest.raises(MissingRequiredClientCapability):
                    await client.call_tool("resolve_user", {"question": "favourite colour?"})
                assert elicited == []
            del sampled[:], elicited[:], roots_asked[:]

            if not stateless:
                # The same through the SDK Context, which only has a back-channel on a
                # handshake session.
                modelled = await client.call_tool("ask_model", {"prompt": "again"})
                assert _texts(modelled) == "model trio-model said canned"
                assert sampled[0]["messages"][0]["content"]["text"] == "again"
                assert _texts(await client.call_tool("roots", {})) == "file:///work/trio-project"
                if protocol_version >= "2025-06-18":
                    asked = await client.call_tool("ask_user", {"question": "colour?"})
                    assert _texts(asked) == "user said blue"
                    assert [e["message"] for e in elicited] == ["colour?"]
                else:
                    # ctx.elicit sends elicitation/create regardless of revision and
                    # capabilities; our client refuses it (-32601) and the SDK relays that.
                    with pytest.raises(MethodNotFound) as excinfo:
                        await client.call_tool("ask_user", {"question": "colour?"})
                    assert "elicitation/create" in str(excinfo.value)
                    assert elicited == []

            resources = {r["uri"]: r for r in await client.list_resources()}
            assert {"sdk://greeting", "sdk://blob"} <= set(resources)
            greeting = await client.read_resource("sdk://greeting")
            assert greeting["contents"] == [
                {"uri": "sdk://greeting", "mimeType": "text/plain", "text": "hello from the SDK"}
            ]
            blob = await client.read_resource("sdk://blob")
            (content,) = blob["contents"]
            assert base64.b64decode(content["blob"]) == bytes(range(8))
            templates = await client.list_resource_templates()
            assert [t["uriTemplate"] for t in templates] == ["sdk://items/{item}"]
            item = await client.read_resource("sdk://items/7")
            assert item["contents"][0]["text"] == "item 7"

            prompts = {p["name"]: p for p in await client.list_prompts()}
            assert [a["name"] for a in prompts["review"]["arguments"]] == ["code", "language"]
            review = await client.get_prompt("review", {"code": "x = 1"})
            assert review["messages"] == [
                {
                    "role": "user",
                    "content": {"type": "text", "text": "Review this python code: x = 1"},
                }
            ]

            completion = await client.complete(
                {"type": "ref/prompt", "name": "review"}, "language", "p"
            )
            assert completion["values"] == ["python", "perl"]

            if stateless:
                # subscriptions/listen: only the URIs asked for come through.
                async with client.listen(resource_uris=["sdk://greeting"]) as events:
                    for uri in ("sdk://blob", "sdk://greeting"):
                        assert _texts(await client.call_tool("touch", {"uri": uri})) == (
                            f"touched {uri}"
                        )
                    with trio.fail_after(5):
                        method, params = await events.__anext__()
                assert method == "notifications/resources/updated"
                assert params["uri"] == "sdk://greeting"
