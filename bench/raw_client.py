"""The practical floor: a minimal hand-written NDJSON MCP client over blocking pipes.

No event loop, no session machine, stdlib ``json``: write one line, read
lines until the answer with the same id arrives.  Anything a real client
does costs time on top of this.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from typing import Any


class RawStdioClient:
    def __init__(
        self,
        command: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=dict(os.environ) if env is None else env,
            bufsize=0,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._write = self.process.stdin.write
        self._readline = self.process.stdout.readline
        self._next_id = 0

    def _send(self, obj: dict[str, Any]) -> None:
        self._write((json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        while True:
            line = self._readline()
            if not line:
                raise EOFError("the server closed its stdout")
            answer = json.loads(line)
            if answer.get("id") == request_id and "method" not in answer:
                if "error" in answer:
                    raise RuntimeError(f"error from server: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result
            # A notification or a server request: a floor client ignores it.

    def initialize(self, protocol_version: str = "2025-11-25") -> dict[str, Any]:
        result = self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "bench-raw-client", "version": "1.0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()
