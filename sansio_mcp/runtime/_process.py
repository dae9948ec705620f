"""Child processes, backend-neutral: stderr always drained, and the spec's
shutdown order (close stdin, wait, SIGTERM, wait, SIGKILL) on a
:class:`~sansio_mcp.runtime.Process` that a :class:`Backend` started."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .._errors import ConnectionClosedError
from .._stdio import StderrLines
from ._backend import Backend, ByteStream, Process, Signal

__all__ = [
    "ChildProcess",
    "StderrTail",
    "drain_stderr",
    "explain_child_exit",
    "explained_exit",
    "signal_group",
    "stop_process",
]

logger = logging.getLogger("sansio_mcp.stdio")

#: The last word: SIGKILL, where there is one.
_KILL = signal.SIGTERM if sys.platform == "win32" else signal.SIGKILL


class ChildProcess:
    """A :class:`~sansio_mcp.runtime.Process` over an event loop's own process
    object (``process``: a :class:`trio.Process` or an asyncio one, which answer
    the same calls) and its pipes; ``native`` is what the adapter's own session
    hosts take of it (the process itself unless told otherwise)."""

    def __init__(
        self,
        process: Any,
        stdin: ByteStream,
        stdout: ByteStream,
        stderr: ByteStream,
        native: Any = None,
    ) -> None:
        self.process = process
        self.pid: int = process.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.native = process if native is None else native

    @property
    def returncode(self) -> int | None:
        code: int | None = self.process.returncode
        return code

    async def wait(self) -> int:
        code: int = await self.process.wait()
        return code

    def send_signal(self, sig: int) -> None:
        self.process.send_signal(sig)


class StderrTail:
    """The last ``size`` lines a child wrote to stderr, each cut to ``width``
    characters: what an error about its exit can show without holding all of it.
    ``drained`` is set once its stream has ended."""

    def __init__(self, drained: Signal, size: int = 20, width: int = 300) -> None:
        self.drained = drained
        self.width = width
        self._lines: deque[str] = deque(maxlen=size)

    def add(self, line: str) -> None:
        """Keep ``line`` (the oldest kept line goes when the tail is full)."""
        if len(line) > self.width:
            line = line[: self.width - 1] + "\u2026"
        self._lines.append(line)

    @property
    def lines(self) -> list[str]:
        """The kept lines, oldest first."""
        return list(self._lines)


async def drain_stderr(
    stream: ByteStream,
    name: str,
    log: logging.Logger = logger,
    tail: StderrTail | None = None,
) -> None:
    """Read a child's stderr to the end, logging each line to ``log`` (debug), so
    it can never block; the last lines are kept in ``tail`` if one is given."""
    lines = StderrLines()

    def emit(line: str) -> None:
        log.debug("[%s stderr] %s", name, line)
        if tail is not None:
            tail.add(line)

    try:
        while chunk := await stream.receive_some(65536):
            for line in lines.feed(chunk):
                emit(line)
    except OSError:
        pass
    for line in lines.feed(b""):
        emit(line)
    if tail is not None:
        tail.drained.set()


def _exit_status(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


async def explain_child_exit(
    backend: Backend,
    process: Process,
    tail: StderrTail,
    error: ConnectionClosedError,
    *,
    wait: float = 1.0,
) -> ConnectionClosedError:
    """``error`` (the connection to a stdio server closed) retold with what became
    of the server: its exit status and the last lines of its stderr (each waited
    for up to ``wait`` seconds), also given as ``data`` (``exitStatus``, ``stderr``)."""
    async with backend.move_on_after(wait):
        if process.returncode is None:
            await process.wait()
        await tail.drained.wait()
    code = process.returncode
    message = f"{error.message}: the server {_exit_status(code)}"
    if tail.lines:
        shown = "\n".join(f"  | {line}" for line in tail.lines)
        message += f"\nthe last lines of its stderr:\n{shown}"
    return ConnectionClosedError(message=message, data={"exitStatus": code, "stderr": tail.lines})


@asynccontextmanager
async def explained_exit(
    backend: Backend, process: Process, tail: StderrTail
) -> AsyncIterator[None]:
    """The block of a stdio client: a :class:`ConnectionClosedError` leaving it is
    retold by :func:`explain_child_exit` (a crashing server says why), unless the
    session gave the connection up itself (``data["gaveUp"]``): then how the child
    ended is only the echo of that."""
    try:
        yield
    except ConnectionClosedError as error:
        if isinstance(error.data, dict) and error.data.get("gaveUp"):
            raise
        raise await explain_child_exit(backend, process, tail, error) from error


def signal_group(process: Process, sig: int) -> None:
    """Send ``sig`` to the process's group (it leads one of its own, so helpers it
    spawned go too); quietly nothing if it is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform != "win32":
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)


async def stop_process(backend: Backend, process: Process, *, grace: float = 2.0) -> None:
    """Close stdin, wait ``grace`` seconds, then SIGTERM, wait, then SIGKILL (the
    spec's shutdown order); then close its output pipes.  Runs to its end even
    if the caller is cancelled meanwhile."""

    async def stop() -> None:
        with contextlib.suppress(OSError):
            await process.stdin.aclose()
        for sig in (None, signal.SIGTERM):
            if process.returncode is not None:
                break
            if sig is not None:
                signal_group(process, sig)
            async with backend.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            signal_group(process, _KILL)
            await process.wait()
        for stream in (process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                await stream.aclose()

    await backend.shielded(stop)
