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


class _Stopping:
    """A process asyncio started, as :func:`_process.stop_process` takes it;
    ``stdin`` when its input is a pipe of ours rather than ``process.stdin``."""

    def __init__(
        self, process: asyncio.subprocess.Process, stdin: asyncio.WriteTransport | None
    ) -> None:
        self.process = process
        self.pid = process.pid
        self.stdin = _Closing(stdin) if stdin is not None else PipeStream(process.stdin)
        self.stdout = self.stderr = _Closing(None)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        return await self.process.wait()

    def send_signal(self, sig: int) -> None:
        self.process.send_signal(sig)


class _Closing:
    def __init__(self, transport: asyncio.WriteTransport | None) -> None:
        self._transport = transport

    async def aclose(self) -> None:
        if self._transport is not None:
            self._transport.close()


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
    await _process.stop_process(PRIMITIVES, _Stopping(process, stdin), grace=grace)  # type: ignore[arg-type]
