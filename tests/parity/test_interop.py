"""The interop checks of the earlier issues, now with the client on both backends:
the reference TypeScript server (server-everything, over stdio) and an ``mcp``
SDK ``MCPServer`` (``tests/interop/sdk_server.py``) in both eras."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest

from sansio_mcp.runtime import ClientHandlers

from .harness import BACKENDS, run, texts

pytestmark = pytest.mark.interop

REPO = Path(__file__).resolve().parents[2]
SDK_SERVER = REPO / "tests" / "interop" / "sdk_server.py"
ROOT = {"uri": "file:///work/parity-interop", "name": "parity-interop"}


class Recorder:
    """Backend-neutral handlers recording what the server asked."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.sampling: list[dict[str, Any]] = []
        self.elicitation: list[dict[str, Any]] = []
        self.roots_calls = 0

    def handlers(self) -> ClientHandlers:
        return ClientHandlers(sampling=self.sample, elicitation=self.elicit, roots=self.roots)

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.sampling.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "canned"},
            "model": self.model,
            "stopReason": "endTurn",
        }

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicitation.append(params)
        return {"action": "accept", "content": {"answer": "blue"}}

    def roots(self) -> list[dict[str, Any]]:
        self.roots_calls += 1
        return [ROOT]


def test_server_everything(backend: str, everything_command: list[str]) -> None:
    """server-everything has no server/discover: ``auto`` falls back to 2025-11-25."""
    api = BACKENDS[backend]
    recorder = Recorder(f"{backend}-model")

    async def body() -> None:
        async with api.connect(
            everything_command, None, None, mode="auto", handlers=recorder.handlers()
        ) as client:
            assert client.protocol_version == "2025-11-25"
            assert not client.session.is_stateless
            assert client.server_info["name"] == "mcp-servers/everything"

            assert texts(await client.call_tool("echo", {"message": "parity ☃"})) == (
                "Echo: parity ☃"
            )
            summed = await client.call_tool("get-sum", {"a": 2, "b": 40.5})
            assert texts(summed) == "The sum of 2 and 40.5 is 42.5."

            features = "demo://resource/static/document/features.md"
            (content,) = (await client.read_resource(features))["contents"]
            assert content["uri"] == features and content["mimeType"] == "text/markdown"
            blob = await client.read_resource("demo://resource/dynamic/blob/4")
            decoded = base64.b64decode(blob["contents"][0]["blob"]).decode()
            assert decoded.startswith("Resource 4: This is a base64 blob")

            simple = await client.get_prompt("simple-prompt")
            assert simple["messages"][0]["content"]["text"] == (
                "This is a simple prompt without arguments."
            )
            weather = await client.get_prompt("args-prompt", {"city": "Paris"})
            assert weather["messages"][0]["content"]["text"] == "What's weather in Paris?"

            sampled = await client.call_tool(
                "trigger-sampling-request", {"prompt": "what is 6 x 7?", "maxTokens": 64}
            )
            assert "canned" in texts(sampled) and f"{backend}-model" in texts(sampled)
            (params,) = recorder.sampling
            assert params["maxTokens"] == 64

            progress: list[tuple[float, float | None]] = []
            await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda p, t, m: progress.append((p, t)),
            )
            assert progress == [(1, 3), (2, 3), (3, 3)]

    run(backend, body)


@pytest.mark.parametrize("protocol_version", ["2025-11-25", "2026-07-28"])
def test_sdk_server(backend: str, protocol_version: str) -> None:
    """An ``mcp`` SDK MCPServer on a handshake revision and on 2026-07-28: tools,
    progress, resolvers (server-to-client requests, or MRTR rounds), resources,
    prompts, completion, and (2026-07-28) subscriptions/listen."""
    api = BACKENDS[backend]
    stateless = protocol_version == "2026-07-28"
    recorder = Recorder(f"{backend}-model")

    async def body() -> None:
        async with api.connect(
            [sys.executable, str(SDK_SERVER)],
            None,
            None,
            protocol_version=protocol_version,
            handlers=recorder.handlers(),
            cwd=REPO,
        ) as client:
            assert client.protocol_version == protocol_version
            assert client.session.is_stateless is stateless
            assert client.server_info == {"name": "sdk-interop-server", "version": "1.2.3"}
            await client.ping()

            tools = {t["name"] for t in await client.list_tools()}
            assert {"echo", "add", "countdown", "resolve_user", "resolve_model"} <= tools
            assert texts(await client.call_tool("echo", {"message": "hi"})) == "echo: hi"
            added = await client.call_tool("add", {"a": 1, "b": 2.5})
            assert added["structuredContent"] == {"sum": 3.5}
            progress: list[tuple[float, float | None]] = []
            counted = await client.call_tool(
                "countdown", {"steps": 3}, on_progress=lambda p, t, m: progress.append((p, t))
            )
            assert texts(counted) == "counted 3"
            assert progress == [(1, 3), (2, 3), (3, 3)]

            modelled = await client.call_tool("resolve_model", {"prompt": "say something"})
            assert texts(modelled) == f"model {backend}-model said canned"
            asked = await client.call_tool("resolve_user", {"question": "colour?"})
            assert texts(asked) == "user said blue"
            found = await client.call_tool("resolve_roots", {})
            assert texts(found) == ROOT["uri"]
            assert [e["message"] for e in recorder.elicitation] == ["colour?"]
            assert recorder.roots_calls == 1

            greeting = await client.read_resource("sdk://greeting")
            assert greeting["contents"][0]["text"] == "hello from the SDK"
            review = await client.get_prompt("review", {"code": "x = 1"})
            assert review["messages"][0]["content"]["text"] == "Review this python code: x = 1"
            completion = await client.complete(
                {"type": "ref/prompt", "name": "review"}, "language", "p"
            )
            assert completion["values"] == ["python", "perl"]

            if stateless:
                async with client.listen(resource_uris=["sdk://greeting"]) as events:
                    for uri in ("sdk://blob", "sdk://greeting"):
                        await client.call_tool("touch", {"uri": uri})
                    async with api.fail_after(5):
                        method, params = await events.__anext__()
                assert (method, params["uri"]) == (
                    "notifications/resources/updated",
                    "sdk://greeting",
                )

    run(backend, body)
