"""Child processes for the stdio transport: a minimal environment, stderr
always drained, and terminate-then-kill on close."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

import trio

from sansio_mcp._stdio import StderrLines

__all__ = ["PIPE", "drain_stderr", "stop_process"]

logger = logging.getLogger("trio_adapters.stdio")


async def drain_stderr(stream: trio.abc.ReceiveStream, name: str) -> None:
    """Read a child's stderr to the end, logging each line, so it can never block."""
    lines = StderrLines()
    try:
        while chunk := await stream.receive_some(65536):
            for line in lines.feed(chunk):
                logger.debug("[%s stderr] %s", name, line)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    for line in lines.feed(b""):
        logger.debug("[%s stderr] %s", name, line)


async def stop_process(process: trio.Process, *, grace: float = 2.0) -> None:
    """Close stdin, wait, then SIGTERM, wait, then SIGKILL (the spec's shutdown order)."""
    with trio.CancelScope(shield=True):
        if process.stdin is not None:
            try:
                await process.stdin.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        with trio.move_on_after(grace):
            await process.wait()
        if process.returncode is None:
            _signal_group(process, signal.SIGTERM)
            with trio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            _signal_group(process, signal.SIGKILL if sys.platform != "win32" else signal.SIGTERM)
            await process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                await stream.aclose()


def _signal_group(process: trio.Process, sig: int) -> None:
    # The child leads its own process group, so helpers it spawned go too.
    try:
        if sys.platform != "win32":
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


PIPE = subprocess.PIPE
