"""A stdio MCP server that misbehaves after the handshake (for tests/adapters).

``python stuck_peer.py MODE [LOG]``:

* ``slow``: read nothing for ``SLOW`` seconds, then log each line it reads
  (``ok <method> <id>``, or ``BAD <length>`` if it is not whole JSON) to LOG
  and answer every request;
* ``never_read``: never read again; live ``PEER_LIFE`` seconds;
* ``closein``: close its stdin (writers get EPIPE), keep stdout open, live on.
"""

from __future__ import annotations

import json
import os
import sys
import time


def send(message: dict[str, object]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def handshake() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stuck-peer", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif message.get("method") == "notifications/initialized":
            return
        elif "id" in message:
            error = {"code": -32601, "message": "not here"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
    sys.exit(0)


def main() -> None:
    mode = sys.argv[1]
    handshake()
    if mode == "slow":
        time.sleep(float(os.environ.get("SLOW", "1.0")))
        with open(sys.argv[2], "a") as log:
            for line in sys.stdin.buffer:
                try:
                    message = json.loads(line)
                except ValueError:
                    log.write(f"BAD {len(line)}\n")
                    log.flush()
                    continue
                log.write(f"ok {message.get('method')} {message.get('id')}\n")
                log.flush()
                if "id" in message and "method" in message:
                    text = {"type": "text", "text": "pong"}
                    send({"jsonrpc": "2.0", "id": message["id"], "result": {"content": [text]}})
    elif mode == "never_read":
        time.sleep(float(os.environ.get("PEER_LIFE", "60")))
    elif mode == "closein":
        os.close(0)
        time.sleep(60)


if __name__ == "__main__":
    main()
