"""The floor of a stdio server in Python: a bare json echo loop (issue 37, row 2's goal).

Read a line, ``json.loads`` it, ``json.dumps`` a result, write it: no checks, no
session, no event loop.  ``initialize`` gets a minimal result, ``tools/call`` the
``message`` argument back as text, anything else with an id an empty result;
notifications are ignored.  Ends at the end of stdin.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    read, write = sys.stdin.buffer.readline, sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    while line := read():
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "tools/call":
            text = message["params"]["arguments"]["message"]
            result: dict[str, object] = {"content": [{"type": "text", "text": text}]}
        elif method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "json-echo", "version": "1"},
            }
        else:
            result = {}
        write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())
        write(b"\n")
        flush()


if __name__ == "__main__":
    main()
