"""The stdio transport's child processes on Trio, in the shape the stdio client
takes them (the process and its pipes are the backend's; stopping one and
draining its stderr are the runtime's, ``sansio_mcp.runtime.stop_process``
and ``drain_stderr``)."""

from __future__ import annotations

import logging
import subprocess

import trio

from sansio_mcp.runtime import StderrTail
from sansio_mcp.runtime import drain_stderr as _drain_stderr
from sansio_mcp.runtime import stop_process as _stop_process

from ._backend import PRIMITIVES, PipeStream, child_process

__all__ = ["PIPE", "drain_stderr", "stop_process"]

logger = logging.getLogger("trio_adapters.stdio")

PIPE = subprocess.PIPE


async def drain_stderr(
    stream: trio.abc.ReceiveStream, name: str, tail: StderrTail | None = None
) -> None:
    """Read a child's stderr to the end, logging each line (the last ones kept in
    ``tail``), so it can never block."""
    await _drain_stderr(PipeStream(None, stream), name, logger, tail)


async def stop_process(process: trio.Process, *, grace: float = 2.0) -> None:
    """Close stdin, wait, then SIGTERM, wait, then SIGKILL (the spec's shutdown order)."""
    await _stop_process(PRIMITIVES, child_process(process), grace=grace)
