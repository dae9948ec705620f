"""A tiny MCP stdio server for the fault tests: standard library only, so it
starts in milliseconds.

Tools: ``pid`` (its process id), ``sleep`` (blocks ``seconds``), ``grow``
(adds a tool and sends ``notifications/tools/list_changed``), and
``boot_<pid>``, whose name shows which process answered a ``tools/list``.
``TINY_STDERR_KB`` makes it write that much to stderr before serving (a
client that never drains stderr would deadlock it).
"""

import json
import os
import sys
import time

PID = os.getpid()
extra_tools: list[str] = []


def tools() -> list[dict]:
    names = ["pid", "sleep", "grow", f"boot_{PID}", *extra_tools]
    return [
        {"name": n, "description": f"tiny {n}", "inputSchema": {"type": "object"}} for n in names
    ]


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


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
            version = params.get("protocolVersion", "2025-06-18")
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "tiny", "version": "1.0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": tools()}
        elif method == "tools/call":
            name = params.get("name")
            if name == "pid":
                result = text(str(PID))
            elif name == "sleep":
                time.sleep(float(params.get("arguments", {}).get("seconds", 1)))
                result = text("slept")
            elif name == "grow":
                extra_tools.append(f"extra_{len(extra_tools)}")
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                result = text("grown")
            else:
                result = text(f"called {name}")
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"method not found: {method}"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
