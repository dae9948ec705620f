"""Row 5: many clients in flight against one Streamable HTTP server.

A deliberately small load generator (asyncio + h11, so it costs the same
whichever server it drives): ``clients`` concurrent clients, each with its
own keep-alive TCP connection to 127.0.0.1, each making ``calls`` sequential
2026-07-28 (stateless) ``tools/call`` echo requests.  A connection the server
closes is reopened.  Everything is bounded: each request by
``request_timeout`` seconds, the whole run by ``deadline`` seconds.

Errors are counted by kind: ``connect`` (could not connect), ``timeout``,
``http`` (a status other than 200), ``jsonrpc`` (an error response, or a
result that is not the echo), ``protocol`` (a broken HTTP exchange),
``unfinished`` (calls never attempted before the deadline).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import h11

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-load", "version": "1.0"},
}


class _Closed(Exception):
    pass


class _Stale(_Closed):
    """A reused keep-alive connection was closed before any answer: retry once."""


class _Conn:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.h11: h11.Connection | None = None
        self.reused = False

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.h11 = h11.Connection(h11.CLIENT)
        self.reused = False

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = self.h11 = None

    async def post(
        self, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[int, str, bytes]:
        assert self.h11 is not None and self.writer is not None and self.reader is not None
        conn = self.h11
        data = conn.send(
            h11.Request(
                method="POST",
                target=target,
                headers=[*headers, ("content-length", str(len(body)))],
            )
        )
        data += conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        self.writer.write(data)
        status, ctype, chunks = 0, "", []
        got_any = False
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                more = await self.reader.read(65536)
                if not more:
                    stale = self.reused and not got_any
                    raise (_Stale if stale else _Closed)("the server closed the connection")
                got_any = True
                conn.receive_data(more)
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                ctype = dict(event.headers).get(b"content-type", b"").decode()
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise _Closed("the server closed the connection")
        if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
            self.close()
        else:
            conn.start_next_cycle()
            self.reused = True
        return status, ctype, b"".join(chunks)


def _answer(ctype: str, body: bytes, request_id: int) -> Any:
    """The JSON-RPC message answering ``request_id`` in a JSON or SSE body."""
    if ctype.startswith("application/json"):
        return json.loads(body)
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(
            line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")
        )
        if data:
            message = json.loads(data)
            if isinstance(message, dict) and message.get("id") == request_id:
                return message
    return None


async def _client(
    index: int,
    url: Any,
    calls: int,
    request_timeout: float,
    stop_at: float,
    latencies: list[float],
    errors: Counter[str],
    start_gate: asyncio.Event,
    tool: str,
    protocol: str,
) -> None:
    await start_gate.wait()
    conn = _Conn(url.hostname, url.port)
    target = url.path or "/"
    message = f"client {index}"
    headers = [
        ("host", f"{url.hostname}:{url.port}"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", protocol),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ]
    # An older revision's stateless server takes the call without the per-request _meta.
    meta = {"_meta": META} if protocol == MODERN else {}
    done = 0
    try:
        for call in range(calls):
            now = time.perf_counter()
            if now > stop_at:
                break
            request_id = index * 1_000_000 + call
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {"message": message}, **meta},
                },
                separators=(",", ":"),
            ).encode()
            try:
                async with asyncio.timeout(min(request_timeout, max(0.01, stop_at - now))):
                    if conn.h11 is None:
                        try:
                            await conn.open()
                        except OSError:
                            errors["connect"] += 1
                            continue
                    t0 = time.perf_counter()
                    try:
                        status, ctype, payload = await conn.post(target, headers, body)
                    except _Stale:
                        conn.close()
                        await conn.open()
                        status, ctype, payload = await conn.post(target, headers, body)
            except TimeoutError:
                errors["timeout"] += 1
                conn.close()
                continue
            except (_Closed, OSError, h11.ProtocolError):
                errors["protocol"] += 1
                conn.close()
                continue
            finally:
                done += 1
            if status != 200:
                errors["http"] += 1
                continue
            try:
                answer = _answer(ctype, payload, request_id)
                text = answer["result"]["content"][0]["text"]
            except (ValueError, KeyError, IndexError, TypeError):
                errors["jsonrpc"] += 1
                continue
            if text != message:
                errors["jsonrpc"] += 1
                continue
            latencies.append(time.perf_counter() - t0)
    finally:
        conn.close()
        if done < calls:
            errors["unfinished"] += calls - done


async def _run(
    url: str,
    clients: int,
    calls: int,
    deadline: float,
    request_timeout: float,
    tool: str,
    protocol: str,
) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost"):
        raise ValueError("the load generator only talks to 127.0.0.1")
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    gate = asyncio.Event()
    start = time.perf_counter()
    stop_at = start + deadline
    tasks = [
        asyncio.create_task(
            _client(
                i, parts, calls, request_timeout, stop_at, latencies, errors, gate, tool, protocol
            )
        )
        for i in range(clients)
    ]
    await asyncio.sleep(0)
    start = time.perf_counter()
    gate.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - start
    latencies.sort()
    ok = len(latencies)
    n = max(ok, 1)
    return {
        "clients": clients,
        "calls_per_client": calls,
        "ok": ok,
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "seconds": wall,
        "calls_per_s": ok / wall if wall > 0 else 0.0,
        "p50_ms": latencies[n // 2] * 1e3 if ok else None,
        "p99_ms": latencies[min(ok - 1, (ok * 99) // 100)] * 1e3 if ok else None,
    }


def run_load(
    url: str,
    clients: int,
    calls: int,
    deadline: float,
    request_timeout: float = 30.0,
    tool: str = "echo",
    protocol: str = MODERN,
) -> dict[str, Any]:
    """``clients`` concurrent clients of ``calls`` stateless ``tools/call``s of
    ``tool`` each, in revision ``protocol`` (2026-07-28 by default)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, clients * 2 + 100))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return asyncio.run(_run(url, clients, calls, deadline, request_timeout, tool, protocol))
