"""``sansio-mcp demo``: our client against the bundled example server over
stdio, showing each feature at work.  No network."""

from __future__ import annotations

import json
import sys
from typing import Any

from sansio_mcp import MCPError
from sansio_mcp.runtime import ClientHandlers, TransportBackend
from sansio_mcp_apps.example_server import COUNTER_URI

__all__ = ["run_demo"]


def _say(title: str, detail: Any = None) -> None:
    print(f"\n== {title}")
    if detail is not None:
        text = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
        for line in text.splitlines():
            print(f"   {line[:160]}")


def _text(result: dict[str, Any]) -> str:
    return " ".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")


async def run_demo(backend: TransportBackend) -> int:
    """Run the tour; returns the process exit code."""
    notifications: list[tuple[str, dict[str, Any]]] = []

    def sampling(params: dict[str, Any]) -> dict[str, Any]:
        question = params["messages"][-1]["content"].get("text", "")
        return {
            "role": "assistant",
            "content": {"type": "text", "text": f"(a canned model) you asked: {question}"},
            "model": "demo-model",
            "stopReason": "endTurn",
        }

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        answer = "7" if "number" in params.get("message", "") else "blue"
        return {"action": "accept", "content": {"answer": answer}}

    handlers = ClientHandlers(
        sampling=sampling,
        elicitation=elicitation,
        roots=[{"uri": "file:///home/demo/project", "name": "project"}],
        on_notification=lambda method, params: notifications.append((method, params)),
    )
    command = [sys.executable, "-m", "sansio_mcp_cli", "example-server", "--page-size", "3"]
    command += ["--backend", backend.name]
    print(
        f"sansio-mcp demo ({backend.name}): starting the example server as a subprocess over stdio"
    )
    print("   " + " ".join(command))
    async with backend.connect(command, None, None, handlers=handlers) as client:
        _say(
            "handshake",
            f"protocol {client.protocol_version} with {client.server_info.get('name')} "
            f"{client.server_info.get('version')}; capabilities: "
            + ", ".join(sorted(client.server_capabilities)),
        )
        tools = await client.list_tools()
        _say("tools (walked across pages of 3)", ", ".join(t["name"] for t in tools))
        _say("echo", _text(await client.call_tool("echo", {"message": "hello, MCP"})))
        added = await client.call_tool("add", {"a": 2, "b": 40})
        _say(
            "add (text and structured content)",
            {"text": _text(added), "structured": added.get("structuredContent")},
        )
        steps: list[str] = []
        slow = await client.call_tool(
            "slow",
            {"seconds": 0.3, "steps": 3},
            on_progress=lambda p, total, message: steps.append(f"{p}/{total} {message}"),
        )
        _say("slow, with progress", "\n".join([*steps, _text(slow)]))
        async with backend.move_on_after(0.2):
            await client.call_tool("slow", {"seconds": 10, "steps": 10})
        _say("cancellation", "a 10 s call was cancelled after 0.2 s (notifications/cancelled sent)")
        try:
            await client.call_tool("slow", {"seconds": 10, "steps": 10}, timeout=0.2)
        except MCPError as exc:
            _say("timeout", f"{type(exc).__name__}: {exc}")
        _say(
            "sample (the server asks our model)",
            _text(await client.call_tool("sample", {"prompt": "what is 6 x 7?"})),
        )
        _say(
            "elicit (the server asks our user)",
            _text(await client.call_tool("elicit", {"question": "favourite colour?"})),
        )
        _say(
            "list_roots (the server asks for our roots)",
            _text(await client.call_tool("list_roots")),
        )
        failed = await client.call_tool("fail", {"message": "this tool always fails"})
        _say(
            "fail (a tool error is a result, not a protocol error)",
            {"isError": failed.get("isError"), "text": _text(failed)},
        )
        resources = await client.list_resources()
        _say("resources", [r["uri"] for r in resources])
        readme = await client.read_resource("example://readme")
        _say("read a text resource", readme["contents"][0]["text"].strip())
        logo = await client.read_resource("example://logo.png")
        _say(
            "read a binary resource",
            f"{len(logo['contents'][0]['blob'])} base64 characters of image/png",
        )
        templates = await client.list_resource_templates()
        _say("resource templates", [t["uriTemplate"] for t in templates])
        colour = await client.read_resource("example://colours/green")
        _say("read through a template", colour["contents"][0]["text"])
        completion = await client.complete(
            {"type": "ref/resource", "uri": templates[0]["uriTemplate"]}, "colour", "b"
        )
        _say("complete a template variable 'b…'", completion["values"])
        await client.set_logging_level("info")
        logs_before = len(notifications)
        async with client.listen(resource_uris=[COUNTER_URI]) as updates:
            await client.call_tool("increment", {"by": 5})
            async with backend.fail_after(5):
                method, params = await updates.__anext__()
        logs = [
            p.get("data") for m, p in notifications[logs_before:] if m == "notifications/message"
        ]
        _say(
            "listen + increment",
            f"{method} for {params.get('uri')}; log messages: {logs}",
        )
        answers = await client.call_tool(
            "survey", {"questions": ["favourite colour?", "favourite number?"]}
        )
        _say("survey (one elicitation per question)", answers.get("structuredContent"))
        prompts = await client.list_prompts()
        _say("prompts", [p["name"] for p in prompts])
        review = await client.get_prompt("review", {"code": "print('hi')", "language": "python"})
        _say("get a prompt with arguments", review["messages"][0]["content"]["text"])
        greeting = await client.get_prompt("greeting")
        _say("get a prompt without arguments", greeting["messages"][0]["content"]["text"])
        try:
            await client.call_tool("no-such-tool")
        except MCPError as exc:
            _say("unknown tool -> typed error", f"{type(exc).__name__}: {exc}")
        await client.ping()
        _say("ping", "answered")
    print("\nThe server was shut down cleanly. Demo complete.")
    return 0
