"""Child processes for the stdio transport on asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sansio_mcp._stdio import StderrLines

from ._runner import OutputPipeProtocol

__all__ = ["Child", "drain_stderr", "start_child", "stop_process"]

logger = logging.getLogger("asyncio_adapters.stdio")


async def drain_stderr(stream: asyncio.StreamReader, name: str) -> None:
    """Read a child's stderr to the end, logging each line, so it can never block."""
    lines = StderrLines()
    while chunk := await stream.read(65536):
        for line in lines.feed(chunk):
            logger.debug("[%s stderr] %s", name, line)
    for line in lines.feed(b""):
        logger.debug("[%s stderr] %s", name, line)


class Child:
    """A child process on pipes of our own rather than the subprocess streams: its
    output is handed to a protocol as it arrives (:meth:`connect_output`), with no
    reader task to wake for every message; ``writer`` is its input."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        writer: asyncio.StreamWriter,
        stdin: asyncio.WriteTransport,
        output: Any,
    ) -> None:
        self.process = process
        self.writer = writer
        #: The child's input: give it to :func:`stop_process` (``stdin=``).
        self.stdin = stdin
        self._output = output

    async def connect_output(
        self, protocol: Callable[[], asyncio.BaseProtocol]
    ) -> tuple[asyncio.BaseTransport, Any]:
        """Connect the child's output to the protocol ``protocol()`` makes (an
        :class:`~asyncio_adapters._runner.AsyncioRunner` connector)."""
        return await asyncio.get_running_loop().connect_read_pipe(protocol, self._output)


async def start_child(
    command: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None
) -> Child:
    """Start ``command`` (in a process group of its own) with its stdin and stdout
    on pipes of ours and its stderr on ``process.stderr`` (drain it)."""
    loop = asyncio.get_running_loop()
    child_stdin, to_child = os.pipe()
    from_child, child_stdout = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=os.name != "nt",
        )
    except BaseException:
        os.close(to_child)
        os.close(from_child)
        raise
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    output = os.fdopen(from_child, "rb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(
            OutputPipeProtocol, os.fdopen(to_child, "wb", buffering=0)
        )
    except BaseException:
        output.close()
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return Child(process, writer, transport, output)


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
