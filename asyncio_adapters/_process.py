"""The stdio transport's child processes on asyncio, in the shape the stdio client
takes them (the process, the pipes and :class:`Child` are the backend's; stopping
one and draining its stderr are the runtime's, :mod:`sansio_mcp.runtime._process`)."""

from __future__ import annotations

import asyncio
import logging

from sansio_mcp.runtime import _process

from ._backend import PRIMITIVES, Child, PipeStream, start_child

__all__ = ["Child", "drain_stderr", "start_child", "stop_process"]

logger = logging.getLogger("asyncio_adapters.stdio")


async def drain_stderr(stream: asyncio.StreamReader, name: str) -> None:
    """Read a child's stderr to the end, logging each line, so it can never block."""
    await _process.drain_stderr(PipeStream(reader=stream), name, logger)


async def stop_process(
    process: asyncio.subprocess.Process,
    *,
    grace: float = 2.0,
    stdin: asyncio.WriteTransport | None = None,
) -> None:
    """Close stdin, wait, then SIGTERM, wait, then SIGKILL (the spec's shutdown order).

    ``stdin`` is the child's input when it is a pipe of ours rather than ``process.stdin``.
    """
    stdin_pipe = PipeStream(transport=stdin) if stdin is not None else PipeStream(process.stdin)
    stopping = _process.ChildProcess(process, stdin_pipe, PipeStream(), PipeStream())
    await _process.stop_process(PRIMITIVES, stopping, grace=grace)
