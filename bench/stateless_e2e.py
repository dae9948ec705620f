"""A Streamable HTTP ``tools/call`` end to end, stateless vs handshake.

The example server's ``echo`` through the asyncio ASGI app in-process (``MCPApp``:
the pure machine, the runtime's session hosts and drivers, the handler; no sockets),
one request at a time: CPU per request (``time.process_time``, best of 3 runs) and
Python function calls per request (cProfile, the figure load does not move).
Run: ``python -m bench.stateless_e2e [N]``, or ``python bench/stateless_e2e.py [N]``
as ``bench/stateless_cpu.py`` runs.  ``--instructions`` also counts machine instructions
per request (valgrind's callgrind: runs of 200 and 1,200 requests, the difference
divided by 1,000, so start-up and warm-up cancel; exact and load-independent).  Both
runs make the request bodies of the longer one (``json.dumps``: a client's work, about
52,000 instructions a stateless body and 35,000 a handshake one), so that cancels too.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import pstats
import sys
import time
from typing import Any

from asyncio_adapters.asgi import MCPApp

try:
    from bench._callgrind import callgrind_command, callgrind_total
    from bench.stateless_cpu import INITIALIZE, LEGACY, MODERN, _body, report
except ModuleNotFoundError:  # run as a file: its own folder, not the repository, is on the path
    from _callgrind import callgrind_command, callgrind_total  # type: ignore[no-redef]
    from stateless_cpu import INITIALIZE, LEGACY, MODERN, _body, report  # type: ignore[no-redef]
from sansio_mcp_apps.example_server import build_server

BASE = [
    (b"host", b"127.0.0.1:8000"),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
]


async def _call(app: MCPApp, headers: list[tuple[bytes, bytes]], body: bytes) -> dict[str, Any]:
    """POST ``body`` to ``app``: the response's status, headers and body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    given = False
    out: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"], out["headers"] = message["status"], dict(message["headers"])
        elif message["type"] == "http.response.body":
            out["body"] += message.get("body", b"")

    await app(scope, receive, send)
    return out


async def _handshake(app: MCPApp) -> list[tuple[bytes, bytes]]:
    """Open a handshake session on ``app``: the headers of a request on it."""
    reply = await _call(app, BASE, INITIALIZE)
    headers = [
        *BASE,
        (b"mcp-session-id", reply["headers"][b"mcp-session-id"]),
        (b"mcp-protocol-version", LEGACY.encode()),
    ]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await _call(app, headers, json.dumps(note).encode())
    return headers


async def _run(stateless: bool, n: int, profile: cProfile.Profile | None, made: int = 0) -> float:
    """CPU microseconds per request of ``n`` requests (bodies made for ``max(n, made)``
    of them beforehand: the client's work, outside the measure)."""
    app = MCPApp(build_server())
    if stateless:
        headers = [
            *BASE,
            (b"mcp-protocol-version", MODERN.encode()),
            (b"mcp-method", b"tools/call"),
            (b"mcp-name", b"echo"),
        ]
    else:
        headers = await _handshake(app)
    for i in range(1, 100):
        reply = await _call(app, headers, _body(i, stateless))
        assert reply["status"] == 200 and b'"result"' in reply["body"], reply
    bodies = [_body(i, stateless) for i in range(1000, 1000 + max(n, made))][:n]
    if profile is not None:
        profile.enable()
    start = time.process_time()
    for body in bodies:
        await _call(app, headers, body)
    cpu = time.process_time() - start
    if profile is not None:
        profile.disable()
    await app.aclose()
    return cpu / n * 1e6


def measure(stateless: bool, n: int) -> tuple[float, float]:
    """(CPU microseconds per request, Python function calls per request)."""
    cpu = min(asyncio.run(_run(stateless, n, None)) for _ in range(3))
    profile = cProfile.Profile()
    asyncio.run(_run(stateless, n, profile))
    return cpu, pstats.Stats(profile).total_calls / n  # type: ignore[attr-defined]


def _callgrind_total(stateless: bool, n: int, made: int) -> int:
    """Instructions callgrind counts in a process making ``n`` requests (the bodies
    of ``made``)."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        kind = "stateless" if stateless else "handshake"
        out, command = callgrind_command(
            folder, sys.executable, __file__, "--run", kind, str(n), str(made)
        )
        # A fixed hash seed: dict and set layouts, so the count, are the same each run.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(command, check=True, env=env, capture_output=True)
        return callgrind_total(out)


def instructions(stateless: bool, short: int = 200, long: int = 1200) -> float:
    """Machine instructions per request (callgrind; needs ``valgrind`` on PATH)."""
    # Both runs make ``long`` bodies: what the server does is all that differs.
    longer = _callgrind_total(stateless, long, long)
    return (longer - _callgrind_total(stateless, short, long)) / (long - short)


def main() -> None:
    if sys.argv[1:2] == ["--run"]:  # one run, counted from outside (``instructions``)
        made = int(sys.argv[4]) if len(sys.argv) > 4 else 0
        asyncio.run(_run(sys.argv[2] == "stateless", int(sys.argv[3]), None, made))
        return
    args = [a for a in sys.argv[1:] if a != "--instructions"]
    n = int(args[0]) if args else 1000
    report(measure(True, n), measure(False, n))
    if "--instructions" in sys.argv:
        s, h = instructions(True), instructions(False)
        print(f"instructions/request: stateless {s:,.0f}  handshake {h:,.0f}  ratio {s / h:.3f}")


if __name__ == "__main__":
    main()
