"""A small stdio MCP server with the habits of real-world servers, for the
checker's regression tests (written without the library).

It claims 2025-03-26, 2025-06-18 and 2025-11-25 and answers ``server/discover``
(2026-07-28) with -32601, as the TypeScript SDK does.  Modes
(``real_world_server.py MODE [ARG]``):

- ``schema`` (the default): an ``echo`` tool and a ``bad_result`` tool whose
  result is schema-invalid (a content block without ``type``), at every
  revision; a long ``instructions`` text.
- ``big BYTES``: one ``big`` tool, no arguments, answering a text of BYTES bytes.
- ``crash``: one ``crash`` tool that writes three lines to stderr and exits 7.
- ``dead``: writes two lines to stderr and exits 4 before reading anything.
"""

from __future__ import annotations

import json
import sys

REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
MODE = sys.argv[1] if len(sys.argv) > 1 else "schema"
INSTRUCTIONS = "Use the echo tool to echo. " * 400
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
TOOLS = {
    "schema": [
        {
            "name": "echo",
            "description": "echoes its text",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 10}},
                "required": ["text"],
            },
        },
        {"name": "bad_result", "description": "a result without type", "inputSchema": NO_ARGUMENTS},
    ],
    "big": [{"name": "big", "description": "a large answer", "inputSchema": NO_ARGUMENTS}],
    "crash": [{"name": "crash", "description": "exits", "inputSchema": NO_ARGUMENTS}],
}


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text(value: str, is_error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def call_tool(params: dict) -> dict:
    name = params.get("name")
    arguments = params.get("arguments")
    if name not in {t["name"] for t in TOOLS[MODE]}:
        return text(f"no such tool {name!r}", is_error=True)
    if name == "echo":
        if not isinstance(arguments, dict) or not isinstance(arguments.get("text"), str):
            return text("text must be a string", is_error=True)
        return text(arguments["text"])
    if arguments:
        return text("this tool takes no arguments", is_error=True)
    if name == "bad_result":
        return {"content": [{"text": "no type"}]}
    if name == "crash":
        for line in ("crash: loading", "crash: state is corrupt", "crash: giving up"):
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        sys.exit(7)
    return text("x" * int(sys.argv[2]))


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in REVISIONS else REVISIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"real-world-{MODE}", "version": "0.0.1"},
            "instructions": INSTRUCTIONS,
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS[MODE]}
    if method == "tools/call":
        return call_tool(params)
    raise LookupError(method)


def main() -> None:
    if MODE == "dead":
        sys.stderr.write("dead: reading the configuration\ndead: no configuration found\n")
        sys.exit(4)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}})
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        try:
            result = answer(message["method"], params)
        except LookupError:
            error = {"code": -32601, "message": f"Method not found: {message['method']}"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            continue
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
