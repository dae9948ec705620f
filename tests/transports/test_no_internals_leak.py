"""No peer sees Python's internals (issue "Hardening", point 9): a tool called with an
argument it does not take, or without one it needs, is -32602 naming the argument; a
handler that raises is answered with its message, never a qualified Python name, an
object address or a traceback.  Served over real sockets on both backends."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sansio_mcp._errors import failure_text
from sansio_mcp.runtime import Server
from tests.parity.harness import serving

from .helpers import INITIALIZED, POST_HEADERS, initialize

INTERNALS = ("<locals>", "Traceback", " at 0x", "build_server", "_leaky_server", "__")


class _Widget:
    pass


def _leaky_server() -> Server:
    server = Server("leaky")

    @server.tool()
    def add(a: float, b: float) -> float:
        return a + b

    @server.tool()
    def explode() -> str:
        raise RuntimeError(f"cannot use {_Widget()!r} in {add.__qualname__}()")

    @server.tool()
    def call_badly() -> str:
        return add(1, 2, 3)  # type: ignore[call-arg]  # the TypeError names add's qualname

    @server.resource("mem://broken")
    def broken() -> str:
        raise ValueError(f"{_Widget()!r} broke")

    return server


@contextmanager
def _session(backend: str) -> Iterator[Any]:
    with serving(backend, "http", _leaky_server()) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = dict(POST_HEADERS)

        def rpc(message: dict[str, Any]) -> tuple[int, Any]:
            connection.request("POST", "/mcp", json.dumps(message), headers)
            response = connection.getresponse()
            body = response.read()
            if "mcp-session-id" not in headers and response.getheader("mcp-session-id"):
                headers["mcp-session-id"] = response.getheader("mcp-session-id") or ""
                headers["mcp-protocol-version"] = "2025-06-18"
            return response.status, json.loads(body) if body else None

        try:
            assert rpc(initialize(version="2025-06-18"))[0] == 200
            assert rpc(INITIALIZED)[0] == 202
            yield rpc
        finally:
            connection.close()


def _call(rpc: Any, request_id: int, tool: str, arguments: dict[str, Any]) -> Any:
    params = {"name": tool, "arguments": arguments}
    status, body = rpc(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )
    assert status == 200
    return body


def _assert_no_internals(text: str) -> None:
    for internal in INTERNALS:
        assert internal not in text, (internal, text)


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_names_a_tool_cannot_take_are_invalid_params(backend: str) -> None:
    with _session(backend) as rpc:
        unexpected = _call(rpc, 2, "add", {"a": 1, "b": 2, "z": 3})
        assert unexpected["error"]["code"] == -32602
        assert "unexpected argument 'z'" in unexpected["error"]["message"]
        missing = _call(rpc, 3, "add", {"a": 1})
        assert missing["error"]["code"] == -32602
        assert "missing required argument 'b'" in missing["error"]["message"]
        for answer in (unexpected, missing):
            _assert_no_internals(json.dumps(answer))
        # A value of the wrong type stays a tool error the model can act on (SEP-1303).
        wrong_type = _call(rpc, 4, "add", {"a": "one", "b": 2})
        assert wrong_type["result"]["isError"] is True
        assert _call(rpc, 5, "add", {"a": 1, "b": 2})["result"]["content"][0]["text"] == "3"


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_a_raising_handler_is_answered_without_internals(backend: str) -> None:
    with _session(backend) as rpc:
        exploded = _call(rpc, 2, "explode", {})
        text = exploded["result"]["content"][0]["text"]
        assert exploded["result"]["isError"] is True
        assert text == "RuntimeError: cannot use <_Widget object> in add()"
        badly = _call(rpc, 3, "call_badly", {})["result"]["content"][0]["text"]
        assert badly.startswith("TypeError: add() takes 2 positional arguments")
        status, broken = rpc(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "resources/read",
                "params": {"uri": "mem://broken"},
            }
        )
        assert status == 200 and broken["error"]["code"] == -32603
        assert broken["error"]["message"] == "internal error: ValueError: <_Widget object> broke"
        for answer in (exploded, badly, broken):
            _assert_no_internals(json.dumps(answer))


def test_failure_text_keeps_the_message_and_drops_the_layout() -> None:
    assert failure_text(ValueError("no luck")) == "ValueError: no luck"
    assert failure_text(KeyError("x")) == "KeyError: 'x'"
    assert failure_text(RuntimeError()) == "RuntimeError"
    assert failure_text(OSError("config.json is missing"), with_kind=False) == (
        "config.json is missing"
    )
    qualified = TypeError("build_server.<locals>.add() got an unexpected keyword argument 'z'")
    assert failure_text(qualified) == "TypeError: add() got an unexpected keyword argument 'z'"
    reprs = ValueError("<app.tools.Thing object at 0x7f00aa> or <function a.<locals>.g at 0x1f>")
    assert failure_text(reprs) == "ValueError: <Thing object> or <function g>"
