"""The stdio transport's child processes on Trio, in the shape the stdio client
takes them (the process and its pipes are the backend's; stopping one and
draining its stderr are the runtime's, :mod:`sansio_mcp.runtime._process`)."""

from __future__ import annotations

import logging
import subprocess

import trio

from sansio_mcp.runtime import _process

from ._backend import PRIMITIVES, PipeStream, child_process

__all__ = ["PIPE", "drain_stderr", "stop_process"]

logger = logging.getLogger("trio_adapters.stdio")

PIPE = subprocess.PIPE


async def drain_stderr(
    stream: trio.abc.ReceiveStream, name: str, tail: _process.StderrTail | None = None
) -> None:
    """Read a child's stderr to the end, logging each line (the last ones kept in
    ``tail``), so it can never block."""
    await _process.drain_stderr(PipeStream(None, stream), name, logger, tail)


async def stop_process(process: trio.Process, *, grace: float = 2.0) -> None:
    """Close stdin, wait, then SIGTERM, wait, then SIGKILL (the spec's shutdown order)."""
    await _process.stop_process(PRIMITIVES, child_process(process), grace=grace)
