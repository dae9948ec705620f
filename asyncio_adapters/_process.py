"""Child processes for the stdio transport on asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys

from sansio_mcp._stdio import StderrLines

__all__ = ["drain_stderr", "stop_process"]

logger = logging.getLogger("asyncio_adapters.stdio")


async def drain_stderr(stream: asyncio.StreamReader, name: str) -> None:
    """Read a child's stderr to the end, logging each line, so it can never block."""
    lines = StderrLines()
    while chunk := await stream.read(65536):
        for line in lines.feed(chunk):
            logger.debug("[%s stderr] %s", name, line)
    for line in lines.feed(b""):
        logger.debug("[%s stderr] %s", name, line)


async def stop_process(
    process: asyncio.subprocess.Process,
    *,
    grace: float = 2.0,
    stdin: asyncio.WriteTransport | None = None,
) -> None:
    """Close stdin, wait, then SIGTERM, wait, then SIGKILL (the spec's shutdown order).

    ``stdin`` is the child's input when it is a pipe of ours rather than ``process.stdin``.
    """
    if stdin is not None:
        stdin.close()
    elif process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
        with contextlib.suppress(ConnectionError, OSError):
            await process.stdin.wait_closed()
    for sig in (
        None,
        signal.SIGTERM,
        signal.SIGKILL if sys.platform != "win32" else signal.SIGTERM,
    ):
        if process.returncode is not None:
            return
        if sig is not None:
            _signal_group(process, sig)
        try:
            await asyncio.wait_for(process.wait(), grace if sig != signal.SIGKILL else None)
        except TimeoutError:
            continue


def _signal_group(process: asyncio.subprocess.Process, sig: int) -> None:
    # The child leads its own process group, so helpers it spawned go too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform != "win32":
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
