"""A tool's progress notifications on stderr as they come: a bar rewritten in place at
a terminal, a plain line each elsewhere (a log, a pipe)."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["ProgressDisplay"]

_BAR = 24


class ProgressDisplay:
    """``sansio-mcp call``'s view of one request's progress; call :meth:`done` before
    printing anything else, so a bar at a terminal is not left half a line."""

    def __init__(self, command: str, stream: TextIO | None = None) -> None:
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self._open = False

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + self._bar(progress, total, message))
            self._open = True
        else:
            self.stream.write(
                f"sansio-mcp {self.command}: {self._plain(progress, total, message)}\n"
            )
        self.stream.flush()

    def done(self) -> None:
        """End the bar's line (at a terminal), if one is shown."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    @staticmethod
    def _plain(progress: float, total: float | None, message: str | None) -> str:
        amount = f"{_number(progress)}/{_number(total)}" if total else _number(progress)
        return f"progress {amount}" + (f": {message}" if message else "")

    @staticmethod
    def _bar(progress: float, total: float | None, message: str | None) -> str:
        if total and total > 0:
            share = min(max(progress / total, 0.0), 1.0)
            filled = round(share * _BAR)
            shown = f"[{'#' * filled}{'.' * (_BAR - filled)}] {share:4.0%}"
        else:
            shown = f"[{_number(progress)}]"
        return shown + (f" {message[:60]}" if message else "")


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
