"""CPU per Streamable HTTP ``tools/call`` in the pure machine: stateless vs handshake.

Measures ``StreamableHTTPServer.handle`` for the example server's ``echo`` (the
runtime's share, running the tool, is the same on both paths and left out):
``time.process_time`` per request and Python function calls per request (cProfile),
the load-independent figure.  Run: ``python -m bench.stateless_cpu [N] [--answered]``.

``--answered`` measures the whole call the pure layer sees: each request handled,
answered as the runtime answers it (``respond`` with the tool's result, ``flush``), its
response taken and its exchange finished, one at a time (a server holds few at once).
"""

from __future__ import annotations

import cProfile
import json
import pstats
import sys
import time
from collections.abc import Callable

from sansio_mcp import NEED_DATA, RequestReceived
from sansio_mcp.http import Exchange, HTTPRequest
from sansio_mcp.runtime.hosting import streamable_http_router
from sansio_mcp_apps.example_server import build_server

#: How to make request ``i``, and what handles it.
Case = tuple[Callable[[int], HTTPRequest], Callable[[HTTPRequest], Exchange]]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1.0"},
}
BASE = {
    "host": "127.0.0.1:8000",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


def _body(i: int, meta: bool) -> bytes:
    params: dict[str, object] = {"name": "echo", "arguments": {"message": f"m{i}"}}
    if meta:
        params["_meta"] = META
    return json.dumps(
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
    ).encode()


def stateless() -> Case:
    """A stateless request, and the machine's ``handle``."""
    machine = streamable_http_router(build_server())
    headers = {
        **BASE,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }

    return lambda i: HTTPRequest("POST", "/mcp", headers, _body(i, True)), machine.handle


#: The ``initialize`` that opens a handshake session.
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        },
    }
).encode()


def handshake() -> Case:
    """A request on a handshake session made beforehand, and the machine's ``handle``."""
    machine = streamable_http_router(build_server())
    first = machine.handle(HTTPRequest("POST", "/mcp", BASE, INITIALIZE))
    sid = first.headers["mcp-session-id"]
    headers = {**BASE, "mcp-session-id": sid, "mcp-protocol-version": LEGACY}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    machine.handle(HTTPRequest("POST", "/mcp", headers, json.dumps(note).encode()))

    return lambda i: HTTPRequest("POST", "/mcp", headers, _body(i, False)), machine.handle


RESULT = {"content": [{"type": "text", "text": "m"}]}


def answered(case: Case) -> Case:
    """``case``, each request answered, its response taken and its exchange ended
    (:func:`_run` then keeps none of them: a finished request's objects go at once,
    as in a server)."""
    make, handle = case
    router = handle.__self__  # type: ignore[attr-defined]

    def serve(request: HTTPRequest) -> Exchange:
        exchange = handle(request)
        session = exchange.session
        assert session is not None
        while (event := session.next_event()) is not NEED_DATA:
            if isinstance(event, RequestReceived):
                session.respond(event.request_id, RESULT)
        router.flush(session)
        exchange.take()
        exchange.disconnected()
        return exchange

    serve.finishes = True  # type: ignore[attr-defined]
    return make, serve


def _run(case: Case, n: int, profile: cProfile.Profile | None) -> float:
    make, handle = case
    for i in range(1, 200):
        handle(make(i)).disconnected()
    requests = [make(i) for i in range(1000, 1000 + n)]
    if profile is not None:
        profile.enable()
    finishes = getattr(handle, "finishes", False)
    start = time.process_time()
    if finishes:
        for r in requests:
            handle(r)
        exchanges = []
    else:
        exchanges = [handle(r) for r in requests]
    cpu = time.process_time() - start
    if profile is not None:
        profile.disable()
    for exchange in exchanges:
        exchange.disconnected()
    return cpu / n * 1e6


def measure(make: Callable[[], Case], n: int) -> tuple[float, float]:
    """(CPU microseconds per request, Python function calls per request)."""
    cpu = min(_run(make(), n, None) for _ in range(3))
    profile = cProfile.Profile()
    _run(make(), n, profile)
    calls = pstats.Stats(profile).total_calls / n  # type: ignore[attr-defined]
    return cpu, calls


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--answered"]
    n = int(args[0]) if args else 2000
    if "--answered" in sys.argv:
        s_cpu, s_calls = measure(lambda: answered(stateless()), n)
        h_cpu, h_calls = measure(lambda: answered(handshake()), n)
    else:
        s_cpu, s_calls = measure(stateless, n)
        h_cpu, h_calls = measure(handshake, n)
    report((s_cpu, s_calls), (h_cpu, h_calls))


def report(stateless: tuple[float, float], handshake: tuple[float, float]) -> None:
    """Print two :func:`measure` figures and their ratio."""
    (s_cpu, s_calls), (h_cpu, h_calls) = stateless, handshake
    print(f"stateless: {s_cpu:6.1f} us/request  {s_calls:6.1f} calls/request")
    print(f"handshake: {h_cpu:6.1f} us/request  {h_calls:6.1f} calls/request")
    print(f"ratio:     {s_cpu / h_cpu:6.2f} (CPU)       {s_calls / h_calls:6.2f} (calls)")


if __name__ == "__main__":
    main()
