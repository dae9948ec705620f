"""Backend-neutral pieces of the stdio transport's process handling: the
child's environment and the splitting of its stderr into log lines."""

from __future__ import annotations

import sys
from collections.abc import Mapping

__all__ = ["DEFAULT_INHERITED_ENV", "StderrLines", "safe_environment"]

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


def safe_environment(
    environ: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A small environment for a child: the safe variables of ``environ`` plus ``extra``."""
    env = {k: v for k in DEFAULT_INHERITED_ENV if (v := environ.get(k)) is not None}
    # Exported shell functions can smuggle code into a child shell.
    env = {k: v for k, v in env.items() if not v.startswith("()")}
    env.update(extra or {})
    return env


class StderrLines:
    """Splits a child's stderr into lines, whatever the chunking, with a cap
    so an endless line cannot grow without bound."""

    def __init__(self, max_line: int = 65536) -> None:
        self.max_line = max_line
        self._pending = b""

    def feed(self, chunk: bytes | bytearray) -> list[str]:
        """Complete lines; ``b""`` at the end flushes what is left."""
        if not chunk:
            rest, self._pending = self._pending, b""
            return [rest.decode("utf-8", "replace").rstrip()] if rest else []
        self._pending += bytes(chunk)
        *lines, self._pending = self._pending.split(b"\n")
        out = [line.decode("utf-8", "replace").rstrip() for line in lines]
        if len(self._pending) > self.max_line:
            out.append(self._pending.decode("utf-8", "replace"))
            self._pending = b""
        return out
