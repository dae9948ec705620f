"""Our Trio client against the reference TypeScript server, server-everything, over stdio.

The parametrized tests run at each handshake revision server-everything (TS SDK
1.x) accepts; it has no 2026-07-28, so ``mode="auto"`` must fall back.

What the server offers depends on the client's capabilities:
``get-roots-list``, ``trigger-sampling-request``, ``trigger-elicitation-request``
and ``trigger-url-elicitation`` are registered after ``notifications/initialized``
only when the client advertised roots, sampling, elicitation and URL-mode
elicitation (see dist/tools/index.js ``registerConditionalTools``).  Our client
drops capabilities a revision does not define from its ``initialize``, so
elicitation is declared from 2025-06-18; these tests declare URL mode only from
2025-11-25; the library trims it from older revisions (tested at the end).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import trio

from sansio_mcp import InvalidParams, LocalProtocolError, URLElicitationRequired
from trio_adapters import Client, ClientHandlers, open_stdio_client

from .conftest import REVISIONS

pytestmark = pytest.mark.interop

#: Seconds for one whole test: node start-up, the calls, the shutdown.
BUDGET = 20

ALWAYS_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
SAMPLING_REPLY = "a canned answer from the test model"
ROOT = {"uri": "file:///work/interop-project", "name": "interop-project"}


def _texts(result: dict[str, Any]) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


def _text(result: dict[str, Any]) -> str:
    return "\n".join(_texts(result))


def _elicitation_modes(protocol_version: str) -> tuple[str, ...]:
    # URL mode exists from 2025-11-25.  Declaring it at an older revision is not
    # trimmed by the library (see test_url_elicitation_not_advertised_before_2025_11_25).
    return ("form", "url") if protocol_version >= "2025-11-25" else ("form",)


class Recorder:
    """ClientHandlers that record what the server asked and saw."""

    def __init__(self) -> None:
        self.sampling: list[dict[str, Any]] = []
        self.elicitation: list[dict[str, Any]] = []
        self.roots_calls = 0
        self.roots: list[dict[str, Any]] = [ROOT]
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self._changed = trio.Event()

    def handlers(self, protocol_version: str) -> ClientHandlers:
        return ClientHandlers(
            sampling=self._sample,
            elicitation=self._elicit,
            elicitation_modes=_elicitation_modes(protocol_version),
            roots=self._list_roots,
            on_notification=self.notify,
        )

    async def _sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.sampling.append(params)
        await trio.sleep(0)  # an async handler works too
        return {
            "role": "assistant",
            "content": {"type": "text", "text": SAMPLING_REPLY},
            "model": "interop-model",
            "stopReason": "endTurn",
        }

    def _elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicitation.append(params)
        if params.get("mode") == "url":
            return {"action": "accept"}
        return {
            "action": "accept",
            "content": {"name": "Ada Lovelace", "check": True, "integer": 7},
        }

    def _list_roots(self) -> list[dict[str, Any]]:
        self.roots_calls += 1
        return list(self.roots)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))
        self._changed.set()
        self._changed = trio.Event()

    def logs(self) -> list[dict[str, Any]]:
        return [p for m, p in self.notifications if m == "notifications/message"]

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> None:
        """Wait until ``predicate()`` holds (re-checked on each notification, and every 50 ms
        for state that handlers, not notifications, change)."""
        with trio.fail_after(timeout):
            while not predicate():
                with trio.move_on_after(0.05):
                    await self._changed.wait()


def _assert_revision(client: Client, protocol_version: str) -> None:
    assert client.protocol_version == protocol_version
    assert client.session.protocol_version == protocol_version
    assert client.server_info["name"] == "mcp-servers/everything"
    assert client.server_info["version"]
    caps = client.server_capabilities
    for key in ("tools", "prompts", "resources", "logging"):
        assert key in caps, caps
    assert caps["resources"].get("subscribe") is True
    assert client.instructions  # read from docs/instructions.md


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_handshake_and_tool_list(
    everything_command: list[str], protocol_version: str
) -> None:
    recorder = Recorder()
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command,
            handlers=recorder.handlers(protocol_version),
            protocol_version=protocol_version,
        ) as client:
            _assert_revision(client, protocol_version)
            await client.ping()

            tools = await client.list_tools()
            # list_tools walks every page; the same list, page by page, must agree.
            first_page = await client.request("tools/list")
            if "nextCursor" not in first_page:
                assert [t["name"] for t in first_page["tools"]] == [t["name"] for t in tools]
            names = [t["name"] for t in tools]
            assert len(names) == len(set(names))
            for tool in tools:
                assert tool["inputSchema"]["type"] == "object", tool
                assert isinstance(tool.get("description"), str)

            assert ALWAYS_TOOLS <= set(names)
            # Registered because we advertised roots and sampling (every revision).
            assert {"get-roots-list", "trigger-sampling-request"} <= set(names)
            # Elicitation is only advertised where the revision defines it.
            assert ("trigger-elicitation-request" in names) == (protocol_version >= "2025-06-18")
            assert ("trigger-url-elicitation" in names) == (protocol_version >= "2025-11-25")
            # Conditional tools arrive after initialization, announced as list changes.
            await recorder.wait_for(
                lambda: any(
                    m == "notifications/tools/list_changed" for m, _ in recorder.notifications
                )
            )
            # ~350 ms after initialization the server asks for our roots and logs it.
            # (Leaving earlier strands that roots/list, and node lingers until SIGTERM.)
            await recorder.wait_for(
                lambda: any("Roots updated" in str(p["data"]) for p in recorder.logs())
            )
            assert recorder.roots_calls == 1


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_call_tools(everything_command: list[str], protocol_version: str) -> None:
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command, protocol_version=protocol_version
        ) as client:
            echoed = await client.call_tool("echo", {"message": "hello, everything ☃"})
            assert not echoed.get("isError")
            assert _texts(echoed) == ["Echo: hello, everything ☃"]

            summed = await client.call_tool("get-sum", {"a": 2, "b": 40.5})
            assert not summed.get("isError")
            assert _texts(summed) == ["The sum of 2 and 40.5 is 42.5."]

            weather = await client.call_tool("get-structured-content", {"location": "Chicago"})
            assert weather["structuredContent"] == {
                "temperature": 36,
                "conditions": "Light rain / drizzle",
                "humidity": 82,
            }
            assert json.loads(_text(weather)) == weather["structuredContent"]

            # Bad input and unknown tools are tool errors in the TS SDK, not protocol errors.
            invalid = await client.call_tool("echo", {})
            assert invalid["isError"] is True
            assert "message" in _text(invalid)
            unknown = await client.call_tool("no-such-tool", {})
            assert unknown["isError"] is True
            assert "no-such-tool" in _text(unknown)

            progress: list[tuple[float, float | None, str | None]] = []
            done = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda p, total, message: progress.append((p, total, message)),
            )
            assert "Steps: 3" in _text(done)
            assert [(p, total) for p, total, _ in progress] == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_resources(everything_command: list[str], protocol_version: str) -> None:
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command, protocol_version=protocol_version
        ) as client:
            resources = await client.list_resources()
            by_uri = {r["uri"]: r for r in resources}
            assert len(by_uri) == len(resources) >= 3
            features = "demo://resource/static/document/features.md"
            assert by_uri[features]["mimeType"] == "text/markdown"

            # A static text resource.
            read = await client.read_resource(features)
            (content,) = read["contents"]
            assert content["uri"] == features
            assert content["mimeType"] == "text/markdown"
            assert len(content["text"]) > 100 and "blob" not in content

            templates = await client.list_resource_templates()
            uri_templates = {t["uriTemplate"] for t in templates}
            assert {
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/blob/{resourceId}",
            } <= uri_templates

            # Text and blob resources, through the templates.
            text = await client.read_resource("demo://resource/dynamic/text/5")
            (content,) = text["contents"]
            assert content["uri"] == "demo://resource/dynamic/text/5"
            assert content["text"].startswith("Resource 5: This is a plaintext resource")
            blob = await client.read_resource("demo://resource/dynamic/blob/4")
            (content,) = blob["contents"]
            assert "text" not in content
            decoded = base64.b64decode(content["blob"], validate=True).decode()
            assert decoded.startswith("Resource 4: This is a base64 blob")

            # Template variable completion.
            completion = await client.complete(
                {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
                "resourceId",
                "12",
            )
            assert completion["values"] == ["12"]

            with pytest.raises(InvalidParams) as excinfo:
                await client.read_resource("demo://resource/no-such-thing")
            assert "not found" in str(excinfo.value)


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_prompts_and_completion(everything_command: list[str], protocol_version: str) -> None:
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command, protocol_version=protocol_version
        ) as client:
            prompts = {p["name"]: p for p in await client.list_prompts()}
            assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(
                prompts
            )
            assert (
                "arguments" not in prompts["simple-prompt"]
                or not prompts["simple-prompt"]["arguments"]
            )
            args = {a["name"]: a for a in prompts["args-prompt"]["arguments"]}
            assert args["city"]["required"] is True
            assert not args["state"].get("required", False)

            simple = await client.get_prompt("simple-prompt")
            assert simple["messages"] == [
                {
                    "role": "user",
                    "content": {
                        "type": "text",
                        "text": "This is a simple prompt without arguments.",
                    },
                }
            ]
            only_city = await client.get_prompt("args-prompt", {"city": "Paris"})
            assert only_city["messages"][0]["content"]["text"] == "What's weather in Paris?"
            both = await client.get_prompt("args-prompt", {"city": "Austin", "state": "TX"})
            assert both["messages"][0]["content"]["text"] == "What's weather in Austin, TX?"

            embedded = await client.get_prompt(
                "resource-prompt", {"resourceType": "Text", "resourceId": "3"}
            )
            resource = embedded["messages"][1]["content"]
            assert resource["type"] == "resource"
            assert resource["resource"]["uri"] == "demo://resource/dynamic/text/3"

            with pytest.raises(InvalidParams):
                await client.get_prompt("args-prompt", {})  # city is required

            # Completion: advertised by the server, answered at every revision.
            assert "completions" in client.server_capabilities
            ref = {"type": "ref/prompt", "name": "completable-prompt"}
            department = await client.complete(ref, "department", "S")
            assert department["values"] == ["Sales", "Support"]
            name = await client.complete(ref, "name", "", context={"department": "Engineering"})
            assert name["values"] == ["Alice", "Bob", "Charlie"]
            none = await client.complete(ref, "name", "", context={"department": "Nowhere"})
            assert none["values"] == []


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_server_to_client_requests(
    everything_command: list[str], protocol_version: str
) -> None:
    recorder = Recorder()
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command,
            handlers=recorder.handlers(protocol_version),
            protocol_version=protocol_version,
        ) as client:
            names = {t["name"] for t in await client.list_tools()}

            # Sampling: the server asks our "model"; its answer comes back in the tool result.
            sampled = await client.call_tool(
                "trigger-sampling-request", {"prompt": "what is 6 x 7?", "maxTokens": 64}
            )
            assert not sampled.get("isError")
            (params,) = recorder.sampling
            assert params["maxTokens"] == 64
            assert params["systemPrompt"] == "You are a helpful test server."
            assert params["temperature"] == 0.7
            (message,) = params["messages"]
            assert message["role"] == "user"
            assert message["content"] == {
                "type": "text",
                "text": "Resource trigger-sampling-request context: what is 6 x 7?",
            }
            text = _text(sampled)
            assert SAMPLING_REPLY in text and "interop-model" in text and "endTurn" in text

            # Roots: the server fetches them by itself after initialization (syncRoots)
            # and the tool shows what we answered.
            listed = await client.call_tool("get-roots-list", {})
            assert recorder.roots_calls >= 1
            text = _text(listed)
            assert "Current MCP Roots (1 total)" in text
            assert ROOT["name"] in text and ROOT["uri"] in text

            if protocol_version < "2025-06-18":
                assert "trigger-elicitation-request" not in names
                assert not recorder.elicitation
                return

            # Elicitation (form mode).
            elicited = await client.call_tool("trigger-elicitation-request", {})
            (params,) = recorder.elicitation
            assert params.get("mode", "form") == "form"
            assert isinstance(params["message"], str) and params["message"]
            schema = params["requestedSchema"]
            assert schema["type"] == "object"
            assert schema["required"] == ["name"]
            assert schema["properties"]["name"]["type"] == "string"
            text = _text(elicited)
            assert "User provided the requested information" in text
            assert "- Name: Ada Lovelace" in text
            assert "- Agreed to terms: true" in text
            assert "- Favorite Integer: 7" in text

            if protocol_version < "2025-11-25":
                assert "trigger-url-elicitation" not in names
                return

            # URL-mode elicitation (2025-11-25), request path ...
            url = "https://example.com/interop/authorize"
            done = await client.call_tool(
                "trigger-url-elicitation", {"url": url, "elicitationId": "interop-1"}
            )
            assert recorder.elicitation[-1] == {
                "mode": "url",
                "url": url,
                "message": "Please open the link to complete this action.",
                "elicitationId": "interop-1",
            }
            assert "User completed the URL elicitation flow" in _text(done)
            assert "interop-1" in _text(done)
            # ... and error path: -32042 arrives as a typed error carrying the elicitations.
            with pytest.raises(URLElicitationRequired) as excinfo:
                await client.call_tool(
                    "trigger-url-elicitation", {"url": url + "/2", "errorPath": True}
                )
            (required,) = excinfo.value.data["elicitations"]
            assert required["mode"] == "url" and required["url"].startswith("https://")


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_roots_list_changed(everything_command: list[str], protocol_version: str) -> None:
    recorder = Recorder()

    def roots_updates() -> list[dict[str, Any]]:
        return [p for p in recorder.logs() if "Roots updated" in str(p.get("data"))]

    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command,
            handlers=recorder.handlers(protocol_version),
            protocol_version=protocol_version,
        ) as client:
            # The server asks for roots ~350 ms after initialization and logs it.
            await recorder.wait_for(lambda: len(roots_updates()) >= 1)
            assert recorder.roots_calls == 1
            assert "1 root(s)" in roots_updates()[0]["data"]

            recorder.roots = [ROOT, {"uri": "file:///work/second", "name": "second"}]
            await client.send_roots_list_changed()
            await recorder.wait_for(lambda: len(roots_updates()) >= 2)
            assert recorder.roots_calls == 2
            assert "2 root(s)" in roots_updates()[1]["data"]

            listed = _text(await client.call_tool("get-roots-list", {}))
            assert "Current MCP Roots (2 total)" in listed
            assert "file:///work/second" in listed


@pytest.mark.parametrize("protocol_version", REVISIONS)
async def test_logging_and_subscriptions(
    everything_command: list[str], protocol_version: str
) -> None:
    recorder = Recorder()
    quiet = "demo://resource/static/document/architecture.md"
    loud = "demo://resource/static/document/features.md"

    def logs_about(uri: str) -> list[dict[str, Any]]:
        return [p for p in recorder.logs() if uri in str(p.get("data"))]

    def updates() -> list[str]:
        return [
            p["uri"] for m, p in recorder.notifications if m == "notifications/resources/updated"
        ]

    with trio.fail_after(BUDGET):
        # Only on_notification: no roots, so no unrelated "Roots updated" log.
        async with open_stdio_client(
            everything_command,
            handlers=ClientHandlers(on_notification=recorder.notify),
            protocol_version=protocol_version,
        ) as client:
            # The server logs each subscribe at "info": above "warning" it is filtered out ...
            await client.set_logging_level("warning")
            await client.subscribe(quiet)
            # ... and at "info" it comes through.
            await client.set_logging_level("info")
            await client.subscribe(loud)
            await recorder.wait_for(lambda: logs_about(loud))
            (log,) = logs_about(loud)
            assert log["level"] == "info"
            assert "Received Subscribe Resource request" in log["data"]
            # The "quiet" log would have been sent (and received) before the "loud" one.
            assert logs_about(quiet) == []

            # Simulated updates: one batch at once, then every 5 s; we stop them right away.
            started = await client.call_tool("toggle-subscriber-updates", {})
            assert "Started simulated resource updated notifications" in _text(started)
            await recorder.wait_for(lambda: {quiet, loud} <= set(updates()))
            stopped = await client.call_tool("toggle-subscriber-updates", {})
            assert "Stopped simulated resource updates" in _text(stopped)

            await client.unsubscribe(loud)
            await recorder.wait_for(
                lambda: any("Unsubscribe" in str(p["data"]) for p in recorder.logs())
            )
            assert set(updates()) <= {quiet, loud}


async def test_auto_mode_falls_back_to_the_handshake(everything_command: list[str]) -> None:
    """``mode="auto"`` (the default) probes server/discover; server-everything (TS SDK 1.x)
    does not know it, so the client falls back to initialize at the newest handshake revision."""
    recorder = Recorder()
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command, handlers=recorder.handlers("2025-11-25")
        ) as client:
            _assert_revision(client, "2025-11-25")
            assert client.session.is_stateless is False
            assert _texts(await client.call_tool("echo", {"message": "after the probe"})) == [
                "Echo: after the probe"
            ]
            await client.call_tool("trigger-sampling-request", {"prompt": "still there?"})
            assert len(recorder.sampling) == 1
            await recorder.wait_for(lambda: recorder.roots_calls >= 1)


async def test_unsupported_revision_is_refused_locally(everything_command: list[str]) -> None:
    """A revision we do not know is refused locally (the child is still stopped)."""
    with trio.fail_after(BUDGET), pytest.raises(LocalProtocolError) as excinfo:
        async with open_stdio_client(everything_command, protocol_version="2099-01-01"):
            pass  # pragma: no cover
    assert "2099-01-01" in str(excinfo.value)


async def test_url_elicitation_not_advertised_before_2025_11_25(
    everything_command: list[str],
) -> None:
    handlers = ClientHandlers(
        elicitation=lambda params: {"action": "decline"}, elicitation_modes=("form", "url")
    )
    with trio.fail_after(BUDGET):
        async with open_stdio_client(
            everything_command, handlers=handlers, protocol_version="2025-06-18"
        ) as client:
            names = {t["name"] for t in await client.list_tools()}
            assert "trigger-elicitation-request" in names
            assert "trigger-url-elicitation" not in names
