"""A stdio MCP "server" (raw NDJSON, no library) that answers every ``tools/call``
with a line that is no JSON this library takes: the fault named by its argument.

    python tests/malformed_answer_server.py nan|infinity|huge-number|deep|garbage
"""

from __future__ import annotations

import json
import sys

FAULTS = {
    "nan": '{"content":[],"n":NaN}',
    "infinity": '{"content":[],"n":Infinity}',
    "huge-number": '{"content":[],"n":1e999}',
    "deep": '{"content":[],"n":' + "[" * 100 + "]" * 100 + "}",
    "garbage": '{"content":[],"n":tru}',
}


def main(fault: str) -> None:
    result = FAULTS[fault]
    for line in sys.stdin:
        msg = json.loads(line)
        method, request_id = msg.get("method"), msg.get("id")
        if method == "initialize":
            answer = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "malformed", "version": "1"},
            }
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": answer}), flush=True)
        elif method == "server/discover":
            error = {"code": -32601, "message": "no such method"}
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}), flush=True)
        elif method == "tools/list":
            tools = [{"name": "broken", "inputSchema": {"type": "object"}}]
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}}))
            sys.stdout.flush()
        elif method == "tools/call":
            print(
                f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{result}}}', flush=True
            )
        elif method is not None and request_id is not None:
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
