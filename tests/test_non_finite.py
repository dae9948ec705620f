"""Numbers JSON cannot carry never take a process down nor lose another message.

A handler's result that holds an infinity is answered -32603; a peer's number beyond the
range of a float (1e400) and the non-standard NaN/Infinity tokens are refused with a
precise error; the session, server or bridge goes on. Checked in the core, and against the
``sansio-mcp`` commands on both backends, over every transport.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sansio_mcp import NEED_DATA, LocalProtocolError, RequestReceived, ServerSession

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sansio_mcp_cli"]
BACKENDS = ["trio", "asyncio"]
HANDSHAKE = "2025-11-25"


def _handshake_line(request_id: int = 0) -> bytes:
    return _line(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
    )


def _line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


INITIALIZED = _line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _served_session() -> ServerSession:
    server = ServerSession(capabilities={"tools": {}, "logging": {}})
    server.receive_data(_handshake_line())
    server.next_event()
    server.data_to_send()
    server.receive_data(INITIALIZED)
    server.next_event()
    return server


# The core ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, {1, 2}])
def test_a_result_that_is_not_json_is_refused_where_it_is_made(bad: Any) -> None:
    server = _served_session()
    server.receive_data(
        _line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}})
        + _line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    )
    call, listing = server.next_event(), server.next_event()
    assert isinstance(call, RequestReceived) and isinstance(listing, RequestReceived)
    server.respond(listing.request_id, {"tools": []})
    with pytest.raises(LocalProtocolError, match="cannot be sent as JSON"):
        server.respond(call.request_id, {"content": [], "structuredContent": {"sum": bad}})
    # Still open, so it can be answered; the other answer is not lost.
    server.respond_error(call.request_id, -32603, "internal error")
    sent = [json.loads(line) for line in server.data_to_send().splitlines()]
    assert sent == [
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal error"}},
    ]


def test_error_data_that_is_not_json_still_answers() -> None:
    server = _served_session()
    server.receive_data(_line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    event = server.next_event()
    assert isinstance(event, RequestReceived)
    server.respond_error(event.request_id, -32000, "no", data={"x": math.inf})
    (answer,) = [json.loads(line) for line in server.data_to_send().splitlines()]
    assert answer["id"] == 1 and answer["error"]["code"] == -32603
    assert "data" not in answer["error"] and "no" in answer["error"]["message"]


def test_our_own_params_that_are_not_json_are_refused_before_anything_changes() -> None:
    server = _served_session()
    with pytest.raises(LocalProtocolError, match="cannot be sent as JSON"):
        server.send_notification("notifications/message", {"level": "info", "data": math.nan})
    assert server.data_to_send() == b""
    server.send_notification("notifications/message", {"level": "info", "data": 1.5})
    assert json.loads(server.data_to_send())["params"]["data"] == 1.5


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_a_peer_number_json_cannot_carry_is_a_precise_parse_error(number: str) -> None:
    server = _served_session()
    call = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"a":%s}}}'
    server.receive_data(
        (call % number).encode() + b"\n" + _line({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    )
    while (event := server.next_event()) is not NEED_DATA:
        if isinstance(event, RequestReceived):
            server.respond(event.request_id, {})
    answers = [json.loads(line) for line in server.data_to_send().splitlines()]
    refusal = answers[0]["error"]
    assert refusal["code"] == -32700
    assert number.lstrip("-") in refusal["message"]
    assert answers[1:] == [{"jsonrpc": "2.0", "id": 8, "result": {}}]


# The commands, on both backends ---------------------------------------------------------


def _read_json_lines(fd: int, want: int, seconds: float = 20) -> list[dict[str, Any]]:
    seen = b""
    deadline = time.monotonic() + seconds
    while seen.count(b"\n") < want:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"only {seen!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        chunk = os.read(fd, 65536) if ready else b""
        assert chunk, f"the process ended: {seen!r}"
        seen += chunk
    return [json.loads(line) for line in seen.splitlines()]


@contextmanager
def _command(*args: str, command: list[str] = CLI) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [*command, *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            assert stream is not None
            stream.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_example_server_on_stdio_says_an_infinite_sum_is_no_number(backend: str) -> None:
    """``add`` whose sum overflows to infinity (which JSON cannot carry): a precise tool
    error, not -32603; the server goes on."""
    with _command("example-server", "--backend", backend) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_handshake_line() + INITIALIZED)
        process.stdin.flush()
        _read_json_lines(process.stdout.fileno(), 1)
        call = {"name": "add", "arguments": {"a": 1e308, "b": 1e308}}
        process.stdin.write(
            _line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
            + _line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        )
        process.stdin.flush()
        answers = {a.get("id"): a for a in _read_json_lines(process.stdout.fileno(), 2)}
        assert answers[1]["result"] == {
            "content": [
                {"type": "text", "text": "the sum of 1e+308 and 1e+308 is not a finite number"}
            ],
            "isError": True,
        }
        assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert process.poll() is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_on_stdio_answers_an_unsendable_result_and_goes_on(backend: str) -> None:
    """A result JSON cannot carry is the handler's bug: -32603; the server goes on."""
    script = [sys.executable, str(REPO / "tests" / "unsendable_server.py")]
    with _command("--backend", backend, command=script) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_handshake_line() + INITIALIZED)
        process.stdin.flush()
        _read_json_lines(process.stdout.fileno(), 1)
        call = {"name": "unsendable", "arguments": {}}
        process.stdin.write(
            _line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
            + _line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            + b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add",'
            b'"arguments":{"a":1e400,"b":1}}}\n'
            + _line({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        )
        process.stdin.flush()
        answers = {a.get("id"): a for a in _read_json_lines(process.stdout.fileno(), 4)}
        assert answers[1]["error"]["code"] == -32603
        assert "cannot be sent as JSON" in answers[1]["error"]["message"]
        assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert answers[4] == {"jsonrpc": "2.0", "id": 4, "result": {}}
        (refusal,) = [a for i, a in answers.items() if i not in (1, 2, 4)]
        assert refusal["error"]["code"] == -32700 and "1e400" in refusal["error"]["message"]
        assert process.poll() is None


_ADDRESS = re.compile(r"(?:http|ws)://127\.0\.0\.1:(\d+)/\w+")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bridge_on_stdio_refuses_1e400_and_goes_on(backend: str) -> None:
    with _command("bridge", "--backend", backend) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(
            b'{"type":"tool/call/req","id":"c1","version":"1.0","ts":0,'
            b'"tool":"x__add","arguments":{"a":1e400}}\n'
            + _line({"type": "ping", "id": "p1", "version": "1.0", "ts": 0})
        )
        process.stdin.flush()
        answers = _read_json_lines(process.stdout.fileno(), 2)
        assert answers[0]["type"] == "error" and answers[0]["code"] == "parse_error"
        assert "1e400" in answers[0]["message"]
        assert answers[1]["type"] == "pong" and answers[1]["req_id"] == "p1"
        assert process.poll() is None


def _http_exchange(port: int, request: bytes, seconds: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("garbage", [b"\x00", b"GET /a2e HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"])
def test_bridge_websocket_listener_survives_a_broken_handshake(
    backend: str, garbage: bytes
) -> None:
    with _command("bridge", "--backend", backend, "--listen", "ws://127.0.0.1:0") as process:
        assert process.stderr is not None
        seen = b""
        deadline = time.monotonic() + 30
        while (match := _ADDRESS.search(seen.decode("utf-8", "replace"))) is None:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([process.stderr], [], [], 1)
            if ready:
                seen += os.read(process.stderr.fileno(), 4096)
        port = int(match.group(1))
        answer = _http_exchange(port, garbage)
        if garbage.startswith(b"GET"):
            assert answer.startswith(b"HTTP/1.1 4"), answer  # refused with a status
        time.sleep(0.2)
        assert process.poll() is None, "the bridge exited"
        # Still listening, still answering.
        assert _http_exchange(port, b"GET /a2e HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").startswith(
            b"HTTP/1.1 4"
        )
