"""A deliberately broken MCP server (stdio, 2025-06-18 only) for the checker's tests.

Written without the library, so its defects are not limited by it.  Planted defects:

1. ``divide`` answers a valid call with b == 0 with a JSON-RPC error (-32603)
   instead of an ``isError`` result.
2. ``bad_result`` returns a schema-invalid result (a content block without "type").
3. ``lenient`` accepts arguments that violate its inputSchema (no isError, no -32602).
4. ``tools/list`` pages are unstable: the second page alternates between two orders.
5. Unknown methods get -32600 instead of -32601.
6. ``prompts/list`` is never answered.
7. A JSON string (not an object) gets -32700 instead of -32600.
8. A line that is not JSON crashes the server (exit status 3).

Stateful defects, one per mode (``broken_server.py MODE``; in a mode the server
is otherwise well behaved: one ``echo`` tool, an empty prompt list):

- ``drifting-list``: every other ``tools/list`` returns a different list, with
  no ``notifications/tools/list_changed``.
- ``deaf-after-cancel``: after a ``notifications/cancelled``, the next request
  is never answered.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {
        "name": "divide",
        "description": "a / b",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "bad_result",
        "description": "returns a content block without a type",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "lenient",
        "description": "claims to want a small non-negative integer, takes anything",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}},
            "required": ["n"],
        },
    },
    {
        "name": "wipe",
        "description": "destructive: must never be called by default",
        "inputSchema": {"type": "object"},
        "annotations": {"destructiveHint": True},
    },
]

ECHO = {
    "name": "echo",
    "description": "echoes its text",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 20}},
        "required": ["text"],
    },
}
EXTRA = {"name": "ghost", "description": "comes and goes", "inputSchema": {"type": "object"}}

_page_asks = 0
_list_asks = 0
_deaf = False
MODE = sys.argv[1] if len(sys.argv) > 1 else ""


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def result(request_id: object, value: dict) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(request_id: object, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def text(value: str, is_error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def call_tool(request_id: object, params: dict) -> None:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if name == "divide":
        a, b = arguments.get("a"), arguments.get("b")
        if not isinstance(a, int) or not isinstance(b, int):
            return result(request_id, text("a and b must be integers", is_error=True))
        if b == 0:
            return error(request_id, -32603, "division by zero")  # defect 1
        return result(request_id, text(str(a // b)))
    if name == "bad_result":
        return result(request_id, {"content": [{"text": "no type"}]})  # defect 2
    if name == "lenient":
        return result(request_id, text(f"got {arguments!r}"))  # defect 3
    if name == "wipe":
        sys.exit(99)  # would show as a crash if it were ever called
    return error(request_id, -32602, f"unknown tool {name!r}")


def list_tools(request_id: object, params: dict) -> None:
    global _page_asks
    cursor = params.get("cursor")
    if cursor is None:
        return result(request_id, {"tools": TOOLS[:2], "nextCursor": "page-2"})
    if cursor == "page-2":
        _page_asks += 1
        page = TOOLS[2:] if _page_asks % 2 else list(reversed(TOOLS[2:]))  # defect 4
        return result(request_id, {"tools": page})
    return error(request_id, -32602, "bad cursor")


def handle_mode(message: dict) -> None:
    global _list_asks, _deaf
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if "id" not in message:
        if method == "notifications/cancelled" and MODE == "deaf-after-cancel":
            _deaf = True
        return None
    if _deaf:
        _deaf = False
        return None  # deaf-after-cancel: this request is never answered
    if method == "initialize":
        return result(
            request_id,
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}, "prompts": {}},
                "serverInfo": {"name": f"broken-server-{MODE}", "version": "0.0.1"},
            },
        )
    if method == "ping":
        return result(request_id, {})
    if method == "tools/list":
        _list_asks += 1
        drift = MODE == "drifting-list" and _list_asks % 2 == 0
        return result(request_id, {"tools": [ECHO, EXTRA] if drift else [ECHO]})
    if method == "tools/call":
        if params.get("name") == "echo":
            return result(request_id, text(str((params.get("arguments") or {}).get("text"))))
        return result(request_id, text("no such tool", is_error=True))
    if method == "prompts/list":
        return result(request_id, {"prompts": []})
    return error(request_id, -32601, f"no such method {method}")


def handle(message: object) -> None:
    if MODE and isinstance(message, dict):
        return handle_mode(message)
    if not isinstance(message, dict):
        return error(None, -32700, "not an object")  # defect 7 (should be -32600)
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if not isinstance(method, str) or message.get("jsonrpc") != "2.0":
        if "id" in message:
            return error(
                request_id if isinstance(request_id, (str, int)) else None,
                -32600,
                "invalid request",
            )
        return None
    if "id" not in message:
        return None  # notifications
    if method == "initialize":
        return result(
            request_id,
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}, "prompts": {}},
                "serverInfo": {"name": "broken-server", "version": "0.0.1"},
            },
        )
    if method == "ping":
        return result(request_id, {})
    if method == "tools/list":
        return list_tools(request_id, params)
    if method == "tools/call":
        return call_tool(request_id, params)
    if method == "prompts/list":
        return None  # defect 6: never answered
    return error(request_id, -32600, f"no such method {method}")  # defect 5


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            sys.stderr.write("broken-server: cannot parse a line, giving up\n")
            sys.exit(3)  # defect 8
        handle(message)


if __name__ == "__main__":
    main()
