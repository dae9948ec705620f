"""``sansio-mcp demo``: a scripted A2E agent drives the bundled example server
through the bridge, and the exchange is shown message by message.  No network:
the bridge runs as a child process on stdio, the example servers as its children.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

from sansio_mcp_apps.a2e import A2EMessage, ElicitRequest, MCPSamplingRequest, to_obj

from .demo import _say  # both tours print a step alike

__all__ = ["run_bridge_demo"]

_ENVELOPE = {"type", "id", "version", "ts"}


def _show(direction: str, message: A2EMessage) -> None:
    """One line per A2E message: who sent it, its type, the gist of its body."""
    body = {k: v for k, v in to_obj(message).items() if k not in _ENVELOPE}
    for key in ("req_id", "mcp_request_id"):
        if isinstance(body.get(key), str) and len(body[key]) > 8:
            body[key] = body[key][:8] + "…"
    for key in ("tools", "resources", "prompts", "servers", "contents", "messages"):
        if isinstance(body.get(key), list) and len(body[key]) > 2:
            body[key] = f"[{len(body[key])} items]"
    text = json.dumps(body, ensure_ascii=False)
    arrow = "agent -> bridge" if direction == "->" else "bridge -> agent"
    print(f"   {arrow}  {message.type:28} {text[:110]}{'…' if len(text) > 110 else ''}")


def _text(result: dict[str, Any]) -> str:
    content = (result.get("data") or {}).get("content") or []
    return " ".join(c.get("text", "") for c in content if c.get("type") == "text")


async def run_bridge_demo(backend: str = "trio") -> int:
    """Run the tour; returns the process exit code."""
    from sansio_mcp_apps.a2e.adapters.trio_client import A2ERequestError, open_a2e_stdio

    refuse = {"on": False}

    def sample(request: MCPSamplingRequest) -> dict[str, Any]:
        if refuse["on"]:
            return {"error": "this agent does not sample for that server"}
        question = request.messages[-1]["content"].get("text", "") if request.messages else ""
        return {
            "content": {"type": "text", "text": f"(the agent's model) you asked: {question}"},
            "model": "demo-model",
            "stop_reason": "endTurn",
        }

    def elicit(request: ElicitRequest) -> dict[str, Any]:
        return {"action": "accept", "content": {"answer": "blue"}}

    example = [sys.executable, "-m", "sansio_mcp_cli", "example-server", "--page-size", "3"]
    example += ["--backend", backend]
    config = {
        "roots": [{"uri": "file:///home/demo/project", "name": "project"}],
        "elicitation": True,
    }
    print(
        f"sansio-mcp demo ({backend}): a scripted A2E agent starts `sansio-mcp bridge` as a\n"
        "child process (A2E as NDJSON on its stdin/stdout) and drives MCP servers through it."
    )
    async with open_a2e_stdio(
        config=config,
        bridge_args=["--backend", backend],
        on_sample=sample,
        on_elicit=elicit,
        on_message=_show,
    ) as agent:
        _say("ping (A2E core)")
        await agent.ping()

        _say("register the example server over stdio (auto: the newest revision it speaks)")
        info = await agent.register({"server_id": "ex", "name": "example", "cmd": example})
        _say(
            "handshake",
            f"{info['server_name']} {info['server_version']} speaks MCP {info['mcp_version']}: "
            f"{info['tools_count']} tools, {info['resources_count']} resources, "
            f"{info['prompts_count']} prompts; status {info['status']}",
        )

        _say("tool/list: MCP tools appear namespaced, source mcp, schemas carried")
        tools = await agent.list_tools()
        print("   " + ", ".join(t["name"] for t in tools))
        add = next(t for t in tools if t["name"] == "ex__add")
        print(f"   ex__add input_schema: {json.dumps(add['input_schema'])}")

        _say("tool/call ex__echo and ex__add (transparent: plain tool/call/req)")
        echo = await agent.call_tool("ex__echo", {"message": "hello through the bridge"})
        added = await agent.call_tool("ex__add", {"a": 2, "b": 40})
        structured = added["data"].get("structuredContent")
        print(f"   echo: {_text(echo)!r}; add: {_text(added)} {structured}")

        _say("tool/call ex__slow, streaming: MCP progress becomes tool/event")
        slow = await agent.call_tool("ex__slow", {"seconds": 0.3, "steps": 3}, streaming=True)
        print(f"   {_text(slow)} ({len(agent.events)} tool events, {slow['duration_ms']:.0f} ms)")

        _say("sample: the server asks for an LLM completion; the agent's model answers")
        sampled = await agent.call_tool("ex__sample", {"prompt": "what is 6 x 7?"})
        print(f"   {_text(sampled)}")

        _say("list_roots: answered at once from the bridge's configured roots")
        roots = await agent.call_tool("ex__list_roots")
        print(f"   {_text(roots)}")

        _say("elicit: the x-mcp/elicit extension pair (beyond the spec, enabled in the config)")
        elicited = await agent.call_tool("ex__elicit", {"question": "favourite colour?"})
        print(f"   {_text(elicited)}")

        _say("resources across pages (the merged cursor is opaque), templates included")
        resources = await agent.list_resources()
        print("   " + ", ".join(r["uri"] for r in resources))
        readme = await agent.read_resource("example://readme")
        print(f"   readme: {readme.contents[0]['text'].splitlines()[0]}")
        logo = await agent.read_resource("example://logo.png")
        blob = logo.contents[0]
        print(f"   binary resource: {len(blob['blob'])} base64 characters of {blob['mime_type']}")
        colour = await agent.read_resource("example://colours/green")
        print(f"   through a template: {colour.contents[0]['text']}")

        _say("subscribe + increment: the update arrives as mcp/server/push")
        await agent.subscribe("example://counter")
        await agent.call_tool("ex__increment", {"by": 5})
        push = await agent.wait_for_push(lambda p: p.method == "notifications/resources/updated")
        print(f"   {push.method} for {push.params.get('uri')}")

        _say("prompts: list, then render one with arguments")
        prompts = await agent.list_prompts()
        print("   " + ", ".join(p["name"] for p in prompts))
        review = await agent.get_prompt("review", {"code": "print('hi')", "language": "python"})
        print("   " + review.messages[0]["content"]["text"].replace("\n", " "))

        _say("a second server on an older revision: the same URI on two servers")
        classic = await agent.register(
            {"server_id": "classic", "cmd": example, "protocol_version": "2025-06-18"}
        )
        print(f"   classic speaks MCP {classic['mcp_version']}")
        try:
            await agent.read_resource("example://readme")
        except A2ERequestError as exc:
            print(f"   without server_id: {exc.code} ({exc.message})")
        routed = await agent.read_resource("example://readme", server_id="classic")
        print(f"   with server_id=classic: read from {routed.server_id}")
        sampled = await agent.call_tool("classic__sample", {"prompt": "and 7 x 6?"})
        print(f"   sampling/createMessage on 2025-06-18: {_text(sampled)}")
        servers = await agent.list_servers()
        print(
            "   "
            + ", ".join(f"{s['server_id']}: {s['status']} ({s['mcp_version']})" for s in servers)
        )

        _say("failures carry the spec's error codes")
        missing = await agent.call_tool("ex__no_such_tool")
        print(f"   unknown tool: {missing['error_code']}")
        try:
            await agent.read_resource("nowhere://at-all")
        except A2ERequestError as exc:
            print(f"   unknown resource: {exc.code}")
        refuse["on"] = True
        refused = await agent.call_tool("ex__sample", {"prompt": "anything"})
        print(f"   sampling refused by the agent: {refused['error_code']}")
        failed = await agent.call_tool("ex__fail", {"message": "this tool always fails"})
        print(f"   a tool error: success={failed['success']}, {failed['error_code']}")

        _say("unregister both servers (their tools go with them)")
        await agent.unregister("ex")
        await agent.unregister("classic")
        print(f"   tools left: {len(await agent.list_tools())}")
    print("\nThe bridge and its servers were shut down cleanly. Demo complete.")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(trio.run(run_bridge_demo))
