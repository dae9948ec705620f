"""Child processes, backend-neutral: stderr always drained, and the spec's
shutdown order (close stdin, wait, SIGTERM, wait, SIGKILL) on a
:class:`~sansio_mcp.runtime.Process` that a :class:`Backend` started."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from typing import Any

from .._stdio import StderrLines
from ._backend import Backend, ByteStream, Process

__all__ = ["ChildProcess", "drain_stderr", "signal_group", "stop_process"]

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


async def drain_stderr(stream: ByteStream, name: str, log: logging.Logger = logger) -> None:
    """Read a child's stderr to the end, logging each line to ``log`` (debug), so
    it can never block."""
    lines = StderrLines()
    try:
        while chunk := await stream.receive_some(65536):
            for line in lines.feed(chunk):
                log.debug("[%s stderr] %s", name, line)
    except OSError:
        pass
    for line in lines.feed(b""):
        log.debug("[%s stderr] %s", name, line)


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
