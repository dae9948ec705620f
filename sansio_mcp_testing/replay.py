"""Replaying a finding (the lines a report's violation sent) or a trace (the
messages ``sansio-mcp inspect|call --trace FILE`` sent), sent again to a fresh
stdio server, one at a time, each request given the time to be answered; what the
server writes back is printed as it comes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import trio

from sansio_mcp import safe_environment
from trio_adapters._process import PIPE, stop_process

from ._connection import absolute_command

__all__ = ["ReplayError", "finding_lines", "is_trace", "replay", "trace_lines"]


class ReplayError(ValueError):
    """The finding cannot be replayed (no such report, finding or input)."""


def finding_lines(spec: str) -> tuple[list[str], dict[str, Any]]:
    """The lines to send for ``REPORT.json#N`` (N counts from 1, as the report
    numbers findings), and the finding itself."""
    path, sep, number = spec.rpartition("#")
    if not sep or not number.isdigit():
        raise ReplayError(f"--replay wants REPORT.json#N (a finding's number), not {spec!r}")
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as exc:
        raise ReplayError(f"cannot read the report {path!r}: {exc}") from None
    violations = report.get("violations") if isinstance(report, dict) else None
    if not isinstance(violations, list) or not 1 <= int(number) <= len(violations):
        count = len(violations) if isinstance(violations, list) else 0
        raise ReplayError(f"{path} has no finding {number} (it has {count})")
    finding = violations[int(number) - 1]
    lines = [line[2:] for line in finding.get("transcript", []) if line.startswith("> ")]
    if not lines:
        raise ReplayError(f"finding {number} has no input to replay (nothing was sent)")
    return lines, finding


def is_trace(spec: str) -> bool:
    """Whether ``--replay spec`` names a trace file rather than ``REPORT.json#N``."""
    _, sep, number = spec.rpartition("#")
    return not (sep and number.isdigit())


def trace_lines(path: str) -> list[str]:
    """The messages a trace file (JSON lines of ``{"direction", "time", "message"}``)
    says were sent, as the lines to send again."""
    lines: list[str] = []
    try:
        with open(path, encoding="utf-8") as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except ValueError as exc:
                    raise ReplayError(f"{path}:{number} is not a JSON line: {exc}") from None
                if not isinstance(record, dict) or "direction" not in record:
                    raise ReplayError(
                        f"{path}:{number} is not a trace record "
                        '({"direction", "time", "message"}); --replay wants a trace file '
                        "or REPORT.json#N"
                    )
                if record["direction"] == "send":
                    lines.append(json.dumps(record.get("message"), separators=(",", ":")))
    except OSError as exc:
        raise ReplayError(f"cannot read the trace {path!r}: {exc}") from None
    if not lines:
        raise ReplayError(f"{path} has nothing to replay (no message was sent)")
    return lines


async def replay(
    command: Sequence[str],
    lines: Sequence[str],
    *,
    timeout: float = 10.0,
    out: TextIO | None = None,
) -> list[Any]:
    """Send ``lines`` to a fresh ``command`` and print what comes back; the
    server's messages (parsed, or the raw line).  A request waits up to ``timeout``
    for its answer; the server's exit ends the replay (and is said)."""
    write: Callable[[str], Any] = (out or sys.stdout).write
    received: list[Any] = []
    changed = trio.Event()
    process = await trio.lowlevel.open_process(
        absolute_command(list(command)),
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env=safe_environment(os.environ, {}),
        start_new_session=os.name != "nt",
    )
    assert process.stdin and process.stdout and process.stderr
    stderr: list[bytes] = []
    ended = trio.Event()

    async def read() -> None:
        nonlocal changed
        pending = b""
        assert process.stdout is not None
        while chunk := await process.stdout.receive_some(65536):
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                if raw.strip():
                    text = raw.decode("utf-8", "replace")
                    write(f"< {text}\n")
                    try:
                        received.append(json.loads(text))
                    except ValueError:
                        received.append(text)
                    changed.set()
                    changed = trio.Event()
        ended.set()
        changed.set()

    async def drain() -> None:
        assert process.stderr is not None
        while chunk := await process.stderr.receive_some(65536):
            stderr.append(bytes(chunk))

    def answered(request_id: Any) -> bool:
        return any(
            isinstance(m, dict) and "method" not in m and m.get("id") == request_id
            for m in received
        )

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            nursery.start_soon(drain)
            for line in lines:
                if ended.is_set():
                    break
                write(f"> {line}\n")
                try:
                    await process.stdin.send_all(line.encode("utf-8") + b"\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    break
                request_id = _request_id(line)
                with trio.move_on_after(timeout if request_id is not None else 0.3):
                    while not ended.is_set() and not (
                        request_id is not None and answered(request_id)
                    ):
                        await changed.wait()
                if request_id is not None and not answered(request_id) and not ended.is_set():
                    write(f"! no answer within {timeout}s\n")
            with trio.move_on_after(1.0):
                await ended.wait()  # a crash takes a moment to show
            nursery.cancel_scope.cancel()
    finally:
        if ended.is_set() and process.returncode is None:
            with trio.move_on_after(1.0):
                await process.wait()
        status = process.returncode
        await stop_process(process, grace=0.5)
    if status is not None:
        tail = b"".join(stderr).decode("utf-8", "replace").strip().splitlines()[-3:]
        said = " | ".join(tail) if tail else "nothing on its stderr"
        write(f"! the server exited with status {status}; its stderr ended: {said}\n")
    return received


def _request_id(line: str) -> Any:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" in message and "id" in message:
        return message["id"]
    return None
