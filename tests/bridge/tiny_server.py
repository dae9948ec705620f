"""A tiny MCP stdio server (2025-06-18 handshake) for the fault tests and the
tests that hold the bridge to its spec: standard library only, so it starts in
milliseconds, and it does what real servers do that the bridge must not misread.

Tools: ``pid`` (its process id), ``sleep`` (answers after ``seconds``, in a
thread of its own, so other calls are answered meanwhile), ``grow`` (adds a
tool at run time and says so), ``fail`` (answers a JSON-RPC error with the
``code``, ``message`` and ``data`` it is given: a server's own -32000 or
-32001, or a ``data.a2e_code`` trying to choose the bridge's answer), ``log``
(a ``notifications/message``, sent only once a log level was set, as a server
may) and ``boot_<pid>``, whose name shows which process answered a
``tools/list``.  Resource ``tiny://blob`` is a blob without a MIME type; an
unknown URI is answered -32602 naming it.  ``TINY_STDERR_KB`` makes it write
that much to stderr before serving (a client that never drains stderr would
deadlock it).
"""

import base64
import json
import os
import sys
import threading
import time

PID = os.getpid()
_lock = threading.Lock()
extra_tools: list[str] = []
log_level: list[str] = []


def tools() -> list[dict]:
    names = ["pid", "sleep", "grow", "fail", "log", f"boot_{PID}", *extra_tools]
    return [
        {"name": n, "description": f"tiny {n}", "inputSchema": {"type": "object"}} for n in names
    ]


def send(obj: dict) -> None:
    with _lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def answer(rid: object, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def error(rid: object, code: int, message: str, data: object = None) -> None:
    body: dict = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": body})


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def sleep_then_answer(rid: object, seconds: float) -> None:
    time.sleep(seconds)
    answer(rid, text("slept"))


def call_tool(rid: object, name: str, arguments: dict) -> None:
    if name == "pid":
        answer(rid, text(str(PID)))
    elif name == "sleep":
        seconds = float(arguments.get("seconds", 1))
        threading.Thread(target=sleep_then_answer, args=(rid, seconds), daemon=True).start()
    elif name == "grow":
        extra_tools.append(f"extra_{len(extra_tools)}")
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        answer(rid, text("grown"))
    elif name == "fail":
        error(
            rid,
            int(arguments.get("code", -32000)),
            str(arguments.get("message", "the server refuses")),
            arguments.get("data"),
        )
    elif name == "log":
        if log_level:
            params = {"level": "info", "logger": "tiny", "data": arguments.get("data", "hello")}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        answer(rid, text("logged" if log_level else "no log level was set"))
    else:
        answer(rid, text(f"called {name}"))


def read_resource(rid: object, uri: str) -> None:
    if uri == "tiny://blob":
        blob = base64.b64encode(b"\x00\x01binary").decode()
        answer(rid, {"contents": [{"uri": uri, "blob": blob}]})
    else:
        error(rid, -32602, f"unknown resource: {uri}", {"uri": uri})


def main() -> None:
    noise = int(os.environ.get("TINY_STDERR_KB", "0"))
    for _ in range(noise):
        sys.stderr.write("x" * 1023 + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method is None:
            continue
        rid = message["id"]
        params = message.get("params") or {}
        if method == "initialize":
            answer(
                rid,
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {
                        "tools": {"listChanged": True},
                        "resources": {},
                        "logging": {},
                    },
                    "serverInfo": {"name": "tiny", "version": "1.0"},
                },
            )
        elif method == "ping":
            answer(rid, {})
        elif method == "logging/setLevel":
            log_level[:] = [params.get("level", "")]
            answer(rid, {})
        elif method == "tools/list":
            answer(rid, {"tools": tools()})
        elif method == "tools/call":
            call_tool(rid, params.get("name"), params.get("arguments") or {})
        elif method == "resources/list":
            answer(rid, {"resources": [{"uri": "tiny://blob", "name": "blob"}]})
        elif method == "resources/read":
            read_resource(rid, params.get("uri", ""))
        else:
            error(rid, -32601, f"method not found: {method}")


if __name__ == "__main__":
    main()
