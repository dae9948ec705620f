"""An answer over the message limit fails its request at once, naming its size and the
limit, and ``--max-message-size`` (the ``max_message_size`` keyword of every client)
raises the limit. Against a real subprocess server, on both backends."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

# A stdio MCP server whose one tool answers with as many bytes of text as it is asked for.
BIG_SERVER = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "0"}}
    elif msg["method"] == "tools/call":
        size = msg["params"]["arguments"]["size"]
        result = {"content": [{"type": "text", "text": "x" * size}]}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]}
    else:
        out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
        sys.stdout.write(json.dumps(out) + "\n"); sys.stdout.flush(); continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""

SIZE = 8_400_000


def _call(*options: str, size: int = SIZE, backend: str = "trio") -> tuple[int, str, float]:
    started = time.monotonic()
    call = ["call", "big", "--backend", backend, "--protocol-version", "2025-11-25"]
    arguments = ["--args", f'{{"size": {size}}}', *options]
    server = [sys.executable, "-c", BIG_SERVER]
    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", *call, *arguments, "--", *server],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_an_oversized_answer_fails_at_once_naming_the_limit(backend: str) -> None:
    status, output, seconds = _call(backend=backend)
    assert status == 1, output
    assert "8388608-byte limit" in output and "exceeds" in output, output
    assert "timed out" not in output
    assert seconds < 30  # not the 60 s time limit


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_max_message_size_raises_the_limit(backend: str) -> None:
    status, output, _ = _call("--max-message-size", str(16 * 1024 * 1024), backend=backend)
    assert status == 0, output[-2000:]
    assert output.count("x") >= SIZE
