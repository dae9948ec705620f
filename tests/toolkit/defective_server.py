"""Small deliberately defective MCP servers (stdio NDJSON, 2025-06-18), one
defect per mode: ``defective_server.py MODE[,MODE...]``, or ``many`` for all of
them at once.  Written without the library, so the defects are not limited by it.
Without a mode the server is well behaved (an ``echo`` tool, a ``browse`` tool that
rightly refuses a client without URL elicitation, one resource, one template, one
prompt)."""

from __future__ import annotations

import json
import os
import sys
import time

try:
    from .broken_server import ECHO, error, result, send, text
except ImportError:  # run as a script
    from broken_server import ECHO, error, result, send, text  # type: ignore[no-redef]

#: Every mode, with the defect it plants (the checker's tests assert on each).
DEFECTS = {
    "no-server-info": "the initialize result lacks serverInfo",
    "string-input-schema": 'tool "spell" has an inputSchema of type "string"',
    "array-output-schema": 'tool "table" has an outputSchema of type "array" (2025-06-18)',
    "duplicate-tools": 'tool "echo" is listed twice',
    "endless-pages": "resources/list hands out a new nextCursor forever",
    "looping-cursor": "prompts/list's second page points back to the first cursor",
    "bad-uri": 'a resource with the URI "not a uri"',
    "bad-template": 'a resource template "file:///{path" (never closed)',
    "unknown-content": 'tool "film" answers with a content block of type "video"',
    "structured-mismatch": 'tool "table" returns structuredContent that breaks its outputSchema',
    "crash-on-call": 'tool "explode" exits (status 7) when n > 100',
    "close-output": 'tool "hangup" closes its output when bye is true, and keeps running',
    "stall": 'tool "stall" never answers when wait is true, and the server stops reading',
    "internal-error": 'tool "echo" answers invalid arguments with -32603',
    "unknown-method-ok": "unknown methods get an empty result instead of -32601",
    "answers-notifications": "every notification gets a response (id null)",
    "wrong-version": 'the error answering params that are no object says jsonrpc "1.0"',
    "stray-id": "every tools/list answer is followed by a response with id 9999",
    "false-refusal": 'tool "draw" refuses with -32021 for sampling, which the client declared',
}

#: Modes that attack the checker itself (not in ``many``: each is run alone).
HOSTILE = {
    "backtracking-pattern": 'tool "match" has an outputSchema pattern ^(a+)+$, which its '
    "result misses by one character (exponential time for a backtracking regex engine)",
    "exponential-schema": 'tool "nest" has an outputSchema of anyOf nested 40 deep through '
    "$ref, two ways at each level, which its result fails (2**40 paths to try)",
    "notification-flood": "after notifications/initialized, 1 MiB notifications "
    "($FLOOD_MIB of them, 40 unless set)",
}

MODES = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else set()
if "many" in MODES:
    MODES = set(DEFECTS)


def tool(name: str, **properties: dict) -> dict:
    """A tool whose arguments are ``properties``, all required."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"name": name, "inputSchema": schema}


#: Needs URL elicitation, which no 2025-06-18 client has: refused with -32021.
BROWSE = {"name": "browse", "inputSchema": {"type": "object"}}
TOOLS: list[dict] = [ECHO, BROWSE]
if "duplicate-tools" in MODES:
    TOOLS.append(dict(ECHO, description="the same name again"))
if "string-input-schema" in MODES:
    TOOLS.append({"name": "spell", "inputSchema": {"type": "string"}})
if "array-output-schema" in MODES or "structured-mismatch" in MODES:
    output = (
        {"type": "array"}
        if "array-output-schema" in MODES
        else {"type": "object", "properties": {"rows": {"type": "integer"}}, "required": ["rows"]}
    )
    TOOLS.append({"name": "table", "inputSchema": {"type": "object"}, "outputSchema": output})
if "unknown-content" in MODES:
    TOOLS.append({"name": "film", "inputSchema": {"type": "object"}})
if "false-refusal" in MODES:
    TOOLS.append({"name": "draw", "inputSchema": {"type": "object"}})
if "crash-on-call" in MODES:
    TOOLS.append(tool("explode", n={"type": "integer", "minimum": 0, "maximum": 1000}))
if "close-output" in MODES:
    TOOLS.append(tool("hangup", bye={"type": "boolean"}))
if "stall" in MODES:
    TOOLS.append(tool("stall", wait={"type": "boolean"}))
if "exponential-schema" in MODES:
    defs: dict = {"l40": {"type": "string"}}
    for level in range(40):
        defs[f"l{level}"] = {"anyOf": [{"$ref": f"#/$defs/l{level + 1}"}] * 2}
    nested = {"type": "object", "properties": {"v": {"$ref": "#/$defs/l0"}}, "$defs": defs}
    TOOLS.append({"name": "nest", "inputSchema": {"type": "object"}, "outputSchema": nested})
if "backtracking-pattern" in MODES:
    word = {"type": "string", "pattern": "^(a+)+$"}
    TOOLS.append(
        {
            "name": "match",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"word": word}},
        }
    )

RESOURCES = [{"uri": "file:///notes.txt", "name": "notes"}]
if "bad-uri" in MODES:
    RESOURCES.append({"uri": "not a uri", "name": "broken"})
TEMPLATES = [{"uriTemplate": "file:///{path}", "name": "files"}]
if "bad-template" in MODES:
    TEMPLATES.append({"uriTemplate": "file:///{path", "name": "unclosed"})


def call_tool(request_id: object, params: dict) -> None:
    name = params.get("name")
    args = params.get("arguments")
    if not isinstance(args, dict):
        args = {}
    if name == "echo":
        if not isinstance(args.get("text"), str) or len(args["text"]) > 20:
            if "internal-error" in MODES:
                return error(request_id, -32603, "internal error")
            return result(request_id, text("text must be a short string", is_error=True))
        return result(request_id, text(args["text"]))
    if name == "table":
        rows = "many" if "structured-mismatch" in MODES else 3
        return result(request_id, dict(text("a table"), structuredContent={"rows": rows}))
    if name == "nest":
        return result(request_id, dict(text("a number"), structuredContent={"v": 7}))
    if name == "match":
        return result(request_id, dict(text("a word"), structuredContent={"word": "a" * 64 + "!"}))
    if name == "film":
        return result(request_id, {"content": [{"type": "video", "url": "file:///a.mp4"}]})
    if name == "explode":
        n = args.get("n")
        if isinstance(n, int) and n > 100:
            sys.stderr.write(f"explode: {n} is too many\n")
            sys.exit(7)
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 1000:
            return result(request_id, text("n must be an integer 0..1000", is_error=True))
        return result(request_id, text(str(n)))
    if name == "hangup":
        if args.get("bye") is True:
            os.close(1)  # the output, not only the Python object over it
            time.sleep(3600)
        if not isinstance(args.get("bye"), bool):
            return result(request_id, text("bye must be a boolean", is_error=True))
        return result(request_id, text("still here"))
    if name == "stall":
        if args.get("wait") is True:
            time.sleep(3600)  # never answers, reads nothing more
        if not isinstance(args.get("wait"), bool):
            return result(request_id, text("wait must be a boolean", is_error=True))
        return result(request_id, text("done"))
    if name == "spell":
        return result(request_id, text("spelled"))
    if name in ("browse", "draw"):
        needed = {"elicitation": {"url": {}}} if name == "browse" else {"sampling": {}}
        return send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {
                    "code": -32021,
                    "message": f"{name} needs {json.dumps(needed)}",
                    "data": {"requiredCapabilities": needed},
                },
            }
        )
    return error(request_id, -32602, f"unknown tool {name!r}")


def paged(request_id: object, params: dict, key: str, items: list, method: str) -> None:
    cursor = params.get("cursor")
    if method == "resources/list" and "endless-pages" in MODES:
        page = int(cursor[5:]) if isinstance(cursor, str) and cursor.startswith("page-") else 0
        return result(
            request_id, {key: items if page == 0 else [], "nextCursor": f"page-{page + 1}"}
        )
    if method == "prompts/list" and "looping-cursor" in MODES:
        if cursor is None:
            return result(request_id, {key: items, "nextCursor": "a"})
        if cursor in ("a", "b"):
            return result(request_id, {key: [], "nextCursor": "b" if cursor == "a" else "a"})
    if cursor is not None:
        return error(request_id, -32602, "unknown cursor")
    result(request_id, {key: items})
    if method == "tools/list" and "stray-id" in MODES:
        result(9999, {"tools": []})


def handle(message: object) -> None:
    if not isinstance(message, dict):
        return error(None, -32600, "not a JSON-RPC message")
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    id_ok = "id" not in message or (
        isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
    )
    if not isinstance(method, str) or message.get("jsonrpc") != "2.0" or not id_ok:
        if "id" in message:
            return error(request_id if id_ok else None, -32600, "invalid request")
        return None
    if "params" in message and not isinstance(message["params"], dict):
        version = "1.0" if "wrong-version" in MODES else "2.0"
        failure = {"code": -32602, "message": "params must be an object"}
        return send({"jsonrpc": version, "id": request_id, "error": failure})
    if "id" not in message:
        if method == "notifications/initialized" and "notification-flood" in MODES:
            data = "x" * (1 << 20)
            for _ in range(int(os.environ.get("FLOOD_MIB", "40"))):
                params = {"level": "info", "logger": "flood", "data": data}
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        if "answers-notifications" in MODES:
            result(None, {})
        return None
    if method == "initialize":
        answer = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "defective-server", "version": "0.0.1"},
        }
        if "no-server-info" in MODES:
            del answer["serverInfo"]
        return result(request_id, answer)
    if method == "ping":
        return result(request_id, {})
    if method == "tools/list":
        return paged(request_id, params, "tools", TOOLS, method)
    if method == "tools/call":
        return call_tool(request_id, params)
    if method == "prompts/list":
        return paged(request_id, params, "prompts", [{"name": "greet"}], method)
    if method == "prompts/get":
        if params.get("name") != "greet":
            return error(request_id, -32602, "unknown prompt")
        message_ = {"role": "user", "content": {"type": "text", "text": "hello"}}
        return result(request_id, {"messages": [message_]})
    if method == "resources/list":
        return paged(request_id, params, "resources", RESOURCES, method)
    if method == "resources/templates/list":
        return paged(request_id, params, "resourceTemplates", TEMPLATES, method)
    if method == "resources/read":
        uri = params.get("uri")
        if uri != "file:///notes.txt":
            return error(request_id, -32002, "resource not found")
        return result(request_id, {"contents": [{"uri": uri, "text": "notes"}]})
    if "unknown-method-ok" in MODES:
        return result(request_id, {})
    return error(request_id, -32601, f"no such method {method}")


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            error(None, -32700, "parse error")
            continue
        if isinstance(message, list):
            if not message:
                error(None, -32600, "empty batch")
            for item in message:
                handle(item)
            continue
        handle(message)


if __name__ == "__main__":
    main()
