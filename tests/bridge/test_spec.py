"""The bridge held to its spec at the wire: raw A2E frames into `sansio-mcp bridge`
(on both backends), A2E frames out, real MCP server processes behind it
(``tiny_server.py``, purpose-built; the example server for 2026-07-28)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import pytest
import trio

from sansio_mcp_apps.a2e import ToolCallResponse

from .conftest import EXAMPLE, TINY
from .helpers import FakeServer, Harness, tool
from .wire_bridge import Frame, WireBridge, wire_bridge

pytestmark = pytest.mark.usefixtures("no_leaked_children")

SPEC_SERVER = [sys.executable, "-I", str(TINY)]
BACKENDS = pytest.mark.parametrize("backend", ["trio", "asyncio"])


def _text(result: Frame) -> str:
    content = (result.get("data") or {}).get("content") or []
    return "\n".join(c.get("text", "") for c in content if c.get("type") == "text")


async def _spec(bridge: WireBridge, **config: Any) -> Frame:
    reply = await bridge.register({"server_id": "s", "cmd": SPEC_SERVER, **config})
    assert reply["ok"], reply
    return reply


# 1. A server's own error is the server's, not a lost connection -----------------------------


@BACKENDS
async def test_a_servers_own_errors_keep_the_link(backend: str) -> None:
    """-32000 and -32001 from a server are its own errors: answered
    ``mcp_protocol_error`` with the server's error in ``detail``; the link, the
    process, a concurrent call and what the server added at run time all stay."""
    async with wire_bridge(backend) as bridge:
        await _spec(bridge)
        pid = _text(await bridge.call("s__pid"))
        assert (await bridge.call("s__grow"))["success"]
        await bridge.wait_for(lambda f: f.get("method") == "notifications/tools/list_changed")
        with trio.fail_after(10):
            while "s__extra_0" not in await bridge.tool_names():
                await trio.sleep(0.02)
        slow = await bridge.send(
            {"type": "tool/call/req", "tool_name": "s__sleep", "arguments": {"seconds": 1}}
        )
        for code in (-32000, -32001):
            failed = await bridge.call("s__fail", {"code": code, "message": "busy"})
            assert failed["success"] is False
            assert failed["error_code"] == "mcp_protocol_error", failed
            assert failed["retryable"] is False
            assert failed["detail"]["mcp_error"] == {"code": code, "message": "busy"}
        concurrent = await bridge.answer(slow)
        assert concurrent["data"]["success"] is True, concurrent
        assert _text(await bridge.call("s__pid")) == pid  # the same process
        assert "s__extra_0" in await bridge.tool_names()  # its run-time state kept
        assert (await bridge.server("s"))["status"] == "ready"


# 2. Only the bridge chooses the A2E code --------------------------------------------------


@BACKENDS
async def test_a_server_cannot_choose_the_a2e_code(backend: str) -> None:
    async with wire_bridge(backend) as bridge:
        await _spec(bridge)
        for code in (-32000, -32603, 4242):
            data = {"a2e_code": "totally_made_up"}
            failed = await bridge.call("s__fail", {"code": code, "message": "x", "data": data})
            assert failed["error_code"] == "mcp_protocol_error", failed
            assert failed["detail"]["mcp_error"]["data"] == data  # evidence, not the answer
        sampling_refused = {"a2e_code": "mcp_sampling_refused"}
        failed = await bridge.call("s__fail", {"code": -1, "data": sampling_refused})
        assert failed["error_code"] == "mcp_protocol_error"


@BACKENDS
async def test_a_refused_sampling_round_is_the_bridges_own_code(backend: str) -> None:
    """On 2026-07-28 the agent's refusal ends the MRTR round: the bridge knows
    the call failed because the agent refused, and says so itself."""
    async with wire_bridge(backend) as bridge:
        reply = await bridge.register(
            {"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "modern"}
        )
        assert reply["ok"], reply
        call = await bridge.send(
            {"type": "tool/call/req", "tool_name": "ex__sample", "arguments": {"prompt": "?"}}
        )
        asked = await bridge.wait_for(lambda f: f["type"] == "mcp/sample/req")
        await bridge.send(
            {
                "type": "mcp/sample/resp",
                "req_id": asked["id"],
                "server_id": asked["server_id"],
                "mcp_request_id": asked["mcp_request_id"],
                "role": "assistant",
                "content": {},
                "error": "no budget",
            }
        )
        answer = await bridge.answer(call)
        assert answer["data"]["error_code"] == "mcp_sampling_refused", answer


# 3. An unknown resource is not found, on every revision ---------------------------------------


@BACKENDS
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_unknown_resource_is_not_found(backend: str, era: str) -> None:
    """-32002 (up to 2025-11-25) and -32602 naming the URI (2026-07-28) alike."""
    async with wire_bridge(backend) as bridge:
        reply = await bridge.register({"server_id": "ex", "cmd": EXAMPLE, "protocol_version": era})
        assert reply["server"]["mcp_version"] == "2026-07-28" if era == "modern" else True
        read = await bridge.request(
            {"type": "mcp/resource/read/req", "uri": "example://nope", "server_id": "ex"}
        )
        assert read["type"] == "mcp/resource/read/resp"
        assert read["error_code"] == "mcp_resource_not_found", read
        assert read["error"]


async def test_a_32602_about_the_uri_is_not_found_on_a_handshake_server_too() -> None:
    async with wire_bridge("trio") as bridge:
        await _spec(bridge)
        read = await bridge.request(
            {"type": "mcp/resource/read/req", "uri": "tiny://nope", "server_id": "s"}
        )
        assert read["error_code"] == "mcp_resource_not_found", read


# 6. The server's configured timeout is the ordinary tool call's ------------------------------


def test_a_call_without_its_own_timeout_gets_the_servers() -> None:
    """On the host's clock (a real one would take five minutes): a frame without
    ``timeout`` waits the server's 300 s, not the A2E core's 30; one with its own
    may only shorten it, and the answer names the limit the call had."""
    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool("hang")]))
    fake.handlers["tools/call"] = lambda s, e: None
    h.register("m", "srv")  # timeout: the spec's default, 300
    h.send_line(b'{"type":"tool/call/req","id":"plain","tool_name":"m__hang","arguments":{}}\n')
    h.send_line(
        b'{"type":"tool/call/req","id":"own","tool_name":"m__hang","arguments":{},"timeout":45}\n'
    )
    h.send_line(
        b'{"type":"tool/call/req","id":"long","tool_name":"m__hang","arguments":{},"timeout":900}\n'
    )
    h.advance(31)
    assert not h.of_type(ToolCallResponse)
    h.advance(14)
    own = h.reply_to("own")
    assert isinstance(own, ToolCallResponse)
    assert own.data["error_code"] == "timeout" and own.data["detail"]["timeout"] == 45
    h.advance(300 - 45)
    for req_id in ("plain", "long"):
        reply = h.reply_to(req_id)
        assert isinstance(reply, ToolCallResponse)
        assert reply.data["error_code"] == "timeout"
        assert reply.data["detail"]["timeout"] == 300
        assert reply.data["duration_ms"] == 300_000.0


@BACKENDS
async def test_a_calls_own_timeout_shortens_the_servers(backend: str) -> None:
    async with wire_bridge(backend) as bridge:
        await _spec(bridge, timeout=60)
        started = trio.current_time()
        cut = await bridge.call("s__sleep", {"seconds": 5}, timeout=1)
        assert cut["error_code"] == "timeout" and cut["retryable"] is True
        assert cut["detail"]["timeout"] == 1
        assert trio.current_time() - started < 4
        done = await bridge.call("s__sleep", {"seconds": 0.2})  # no timeout of its own
        assert done["success"] is True


# 7. A field the spec requires is required --------------------------------------------------


MISSING = [
    ({"type": "mcp/server/register/req"}, "config"),
    ({"type": "mcp/server/unregister/req"}, "server_id"),
    ({"type": "mcp/resource/read/req", "server_id": "s"}, "uri"),
    ({"type": "mcp/resource/subscribe/req", "server_id": "s"}, "uri"),
    ({"type": "mcp/prompt/get/req", "arguments": {}}, "name"),
    (
        {"type": "mcp/sample/resp", "server_id": "s", "mcp_request_id": "1", "content": {}},
        "req_id",
    ),
    ({"type": "mcp/sample/resp", "req_id": "r", "mcp_request_id": "1", "content": {}}, "server_id"),
    ({"type": "mcp/sample/resp", "req_id": "r", "server_id": "s", "content": {}}, "mcp_request_id"),
    ({"type": "mcp/root/list/resp", "server_id": "", "mcp_request_id": "", "roots": []}, "req_id"),
    ({"type": "mcp/root/list/resp", "req_id": "", "server_id": "", "roots": []}, "mcp_request_id"),
    ({"type": "mcp/root/list/resp", "req_id": "", "mcp_request_id": "", "server_id": ""}, "roots"),
]


async def test_a_missing_required_field_is_a_schema_violation_naming_it() -> None:
    async with wire_bridge("trio") as bridge:
        for frame, field in MISSING:
            reply = await bridge.request(frame)
            assert reply["type"] == "error", (frame, reply)
            assert reply["code"] == "schema_violation", (frame, reply)
            assert reply["detail"]["field"] == field, (frame, reply)
            assert field in reply["message"]
        # Present, even empty, is enough: an unsolicited roots answer sets the roots.
        roots = {"type": "mcp/root/list/resp", "req_id": "", "server_id": "", "mcp_request_id": ""}
        await bridge.send({**roots, "roots": [{"uri": "file:///x"}]})
        assert (await bridge.request({"type": "ping"}))["type"] == "pong"
        assert sum(f["type"] == "error" for f in bridge.seen) == len(MISSING)


# 8. A blob without a MIME type is text/plain, the spec's default ------------------------------


async def test_a_blob_without_a_mime_type_gets_the_specs_default() -> None:
    async with wire_bridge("trio") as bridge:
        await _spec(bridge)
        read = await bridge.request({"type": "mcp/resource/read/req", "uri": "tiny://blob"})
        (content,) = read["contents"]
        assert content["type"] == "blob" and content["blob"]
        assert content["mime_type"] == "text/plain"


# 4. Servers' logs reach the agent, on every revision -----------------------------------------


@BACKENDS
async def test_logs_are_requested_and_forwarded_on_every_revision(backend: str) -> None:
    """A 2026-07-28 server logs only for a request that asks (``_meta`` log level);
    tiny_server, like many, only once a level was set (``logging/setLevel``)."""
    async with wire_bridge(backend) as bridge:
        reply = await bridge.register(
            {"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "modern"}
        )
        assert reply["server"]["mcp_version"] == "2026-07-28"
        assert (await bridge.call("ex__increment"))["success"]
        log = await bridge.wait_for(lambda f: f.get("method") == "notifications/message")
        assert log["type"] == "mcp/server/push" and log["server_id"] == "ex"
        assert log["params"]["data"] == {"counter": 1}
        await _spec(bridge)
        assert _text(await bridge.call("s__log", {"data": "from spec"})) == "logged"
        log = await bridge.wait_for(
            lambda f: f.get("method") == "notifications/message" and f["server_id"] == "s"
        )
        assert log["params"] == {"level": "info", "logger": "tiny", "data": "from spec"}


# 9. Without auto_reconnect, a dead server's tools leave the listing ---------------------------


@BACKENDS
async def test_a_server_given_up_on_leaves_the_tool_list(backend: str) -> None:
    async with wire_bridge(backend) as bridge:
        await _spec(bridge, auto_reconnect=False)
        assert "s__pid" in await bridge.tool_names()
        os.kill(int(_text(await bridge.call("s__pid"))), signal.SIGKILL)
        told = await bridge.wait_for(
            lambda f: f.get("method") == "notifications/tools/list_changed"
        )
        assert told["type"] == "mcp/server/push" and told["server_id"] == "s"
        assert not [name for name in await bridge.tool_names() if name.startswith("s__")]
        info = await bridge.server("s")
        assert info["status"] == "disconnected" and info["tools_count"] == 0
        down = await bridge.call("s__pid")
        assert down["error_code"] == "mcp_server_unavailable", down
        await _spec(bridge, auto_reconnect=False)  # registered again: its tools are back
        assert "s__pid" in await bridge.tool_names()
        assert (await bridge.call("s__pid"))["success"]


# 5. headers go on every HTTP-based transport -----------------------------------------------


async def _record_heads(listener: trio.SocketListener, heads: list[bytes]) -> None:
    """Accept connections; keep each one's request head, then hang up."""
    while True:
        stream = await listener.accept()
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                data = await stream.receive_some(65536)
                if not data:
                    break
                head += data
            heads.append(head.split(b"\r\n\r\n", 1)[0].lower())


@BACKENDS
@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
async def test_headers_go_on_every_http_transport(backend: str, transport: str) -> None:
    """The legacy SSE stream's GET and the WebSocket handshake carry ``headers``,
    as Streamable HTTP's POSTs always did."""
    heads: list[bytes] = []
    async with trio.open_nursery() as nursery:
        (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listener.socket.getsockname()[1]
        nursery.start_soon(_record_heads, listener, heads)
        scheme, path = {"http": ("http", "mcp"), "sse": ("http", "sse"), "ws": ("ws", "mcp")}[
            transport
        ]
        async with wire_bridge(backend) as bridge:
            reply = await bridge.register(
                {
                    "server_id": "net",
                    "transport": transport,
                    "url": f"{scheme}://127.0.0.1:{port}/{path}",
                    "headers": {"Authorization": "Bearer t0k3n", "X-Custom": "yes"},
                    "auto_reconnect": False,
                    "timeout": 5,
                }
            )
            assert reply["ok"] is False  # (the recorder hangs up)
        nursery.cancel_scope.cancel()
    assert heads, "the bridge never connected"
    first = heads[0]
    assert first.startswith(b"post" if transport == "http" else b"get")
    assert b"\r\nauthorization: bearer t0k3n" in first, first
    assert b"\r\nx-custom: yes" in first, first
