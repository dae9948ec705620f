"""The JSON-RPC traffic of ``inspect`` and ``call``, on request: ``-v`` logs a
line per message each way (``> `` sent, ``< `` received, long ones shortened),
``--trace FILE`` writes every message whole as a JSON line
(``{"direction": "send"|"receive", "time": <unix seconds>, "message": ...}``),
which ``sansio-mcp check --replay FILE`` sends again."""

from __future__ import annotations

import json
import logging
import time
from typing import IO, Any

__all__ = ["LOG_WIDTH", "Traffic", "shorten"]

logger = logging.getLogger("sansio_mcp_cli.traffic")

#: Characters of a message a ``-v`` line shows before it is cut with an ellipsis.
LOG_WIDTH = 200

_ARROWS = {"send": ">", "receive": "<"}


def shorten(text: str, width: int = LOG_WIDTH) -> str:
    """``text`` cut to ``width`` characters, the cut said with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


class Traffic:
    """A session's ``trace`` callable (see ``ClientOptions.trace``): logs each
    message and writes it to the trace file, if there is one."""

    def __init__(self, trace_path: str | None = None) -> None:
        self._file: IO[str] | None = open(trace_path, "w", encoding="utf-8") if trace_path else None

    def __call__(self, direction: str, message: Any) -> None:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=repr)
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s %s", _ARROWS.get(direction, direction), shorten(text))
        if self._file is not None:
            record = {"direction": direction, "time": round(time.time(), 6)}
            line = json.dumps(record, separators=(",", ":"))[:-1] + f',"message":{text}}}'
            self._file.write(line + "\n")
            self._file.flush()  # a crash or Ctrl-C keeps what was traced

    def close(self) -> None:
        """Close the trace file."""
        if self._file is not None:
            self._file.close()
            self._file = None
