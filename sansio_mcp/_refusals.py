"""How to say that a server does not speak the revision asked for: the CLI's
``inspect``/``call`` and the checker put it the same way, rather than showing a
bare -32601 or an HTTP 400 body."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ._errors import HTTPStatusError, MCPError

__all__ = ["describe_answer", "does_not_speak"]


def describe_answer(error: MCPError) -> str:
    """The error a server answered with, briefly: ``-32601 "Method not found"``, or
    for an HTTP failure its status and the message in its body."""
    if isinstance(error, HTTPStatusError) and isinstance(error.data, dict):
        status = error.data.get("status")
        body = str(error.data.get("body") or "")
        try:
            said = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            said = body
        return f"HTTP {status}" + (f" {json.dumps(str(said)[:200])}" if said else "")
    return f"{error.code} {json.dumps(error.message[:200])}"


def does_not_speak(
    revision: str, method: str, error: MCPError, spoken: Sequence[str] | None = None
) -> str:
    """``the server does not speak REV (it answered METHOD with ...); it speaks ...``.

    ``spoken`` (when known) is what the server does speak; empty: none was found."""
    said = (
        f"the server does not speak {revision} (it answered {method} with {describe_answer(error)})"
    )
    if spoken:
        said += f"; it speaks {', '.join(spoken)}"
    elif spoken is not None:
        said += "; no revision it speaks was found"
    return said
