"""Child processes for the stdio transport: a minimal environment, stderr
always drained, and terminate-then-kill on close."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping

import trio

__all__ = ["DEFAULT_INHERITED_ENV", "safe_environment", "drain_stderr", "stop_process"]

logger = logging.getLogger("trio_adapters.stdio")

#: Variables a server inherits by default; everything else must be passed explicitly.
DEFAULT_INHERITED_ENV: tuple[str, ...] = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
)


def safe_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A small environment for a child: the safe inherited variables plus ``extra``."""
    env = {k: v for k in DEFAULT_INHERITED_ENV if (v := os.environ.get(k)) is not None}
    # Exported shell functions can smuggle code into a child shell.
    env = {k: v for k, v in env.items() if not v.startswith("()")}
    env.update(extra or {})
    return env


async def drain_stderr(stream: trio.abc.ReceiveStream, name: str) -> None:
    """Read a child's stderr to the end, logging each line, so it can never block."""
    pending = b""
    try:
        while chunk := await stream.receive_some(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                logger.debug("[%s stderr] %s", name, line.decode("utf-8", "replace").rstrip())
            if len(pending) > 65536:  # an endless line: log it in pieces
                logger.debug("[%s stderr] %s", name, pending.decode("utf-8", "replace"))
                pending = b""
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    if pending:
        logger.debug("[%s stderr] %s", name, pending.decode("utf-8", "replace").rstrip())


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
