"""What every area of the checker's probes shares: the connection it probes,
the findings it records into, and requests that record an unanswered request
(responsive) and a dead server (survival) as they happen."""

from __future__ import annotations

from typing import Any

from sansio_mcp import ConnectionClosedError, MCPError, RequestTimeout
from sansio_mcp._errors import ErrorCode

from ._connection import Connection, ServerGone
from ._findings import Findings
from ._options import CheckOptions

__all__ = ["MAX_PAGES", "Probe"]

#: Pages of one list walked at the most (a server that never ends a list is a finding,
#: not a hang).
MAX_PAGES = 200


class Probe:
    """The checks of one area over one connection."""

    def __init__(self, findings: Findings, options: CheckOptions, conn: Connection) -> None:
        self.findings = findings
        self.options = options
        self.conn = conn

    def violate(self, name: str, message: str, transcript: list[str], **details: Any) -> None:
        """A violation of property ``name`` on this connection (at its revision)."""
        self.findings.violate(name, message, transcript, revision=self.conn.revision, **details)

    def skip(self, what: str, reason: str) -> None:
        """Something not checked on this connection, and why."""
        self.findings.skip(what, reason, self.conn.revision)

    async def request(
        self, method: str, params: dict[str, Any] | None, what: str
    ) -> tuple[str, Any, list[str]]:
        """("result", result) | ("error", MCPError) | ("unanswered", None): no usable
        answer (none in time, or one over the size limit), already reported; with the
        transcript.  Raises ServerGone."""
        conn = self.conn
        start = conn.recorder.seq
        try:
            result = await conn.client.request(
                method, params, timeout=self.options.timeout, fresh=True
            )
            outcome: tuple[str, Any] = ("result", result)
        except RequestTimeout:
            return "unanswered", None, self._unanswered(method, params, what, start)
        except ConnectionClosedError:
            self.findings.server_gone(conn, what, start)
            raise ServerGone() from None
        except MCPError as error:
            if conn.recorder.dropped_since(start) is not None and _is_local(error):
                # The session failed the request itself: the answer was over the limit.
                return "unanswered", None, self._unanswered(method, params, what, start)
            outcome = ("error", error)
        self.findings.count("responsive")
        return outcome[0], outcome[1], conn.transcript(start)

    def _unanswered(
        self, method: str, params: dict[str, Any] | None, what: str, start: int
    ) -> list[str]:
        """Report a request with no usable answer (responsive); its transcript."""
        transcript = self.conn.transcript(start)
        tool_call = method == "tools/call"
        dropped = self.conn.recorder.dropped_since(start)
        if dropped is not None:
            message = f"{what}: {dropped}"
        elif tool_call:
            message = (
                f"{what}: no answer within {self.options.timeout}s (the call was "
                "cancelled; a tool may legitimately run this long)"
            )
        else:
            message = f"{what}: no answer within {self.options.timeout}s"
        self.violate(
            "responsive",
            message,
            transcript,
            severity="warning" if tool_call or dropped else "error",
            tool=(params or {}).get("name") if tool_call else None,
        )
        return transcript


def _is_local(error: MCPError) -> bool:
    """An error the client session made up (a malformed or oversized answer), not
    one the server sent."""
    return error.code == ErrorCode.INVALID_REQUEST and error.message.startswith(
        "malformed response:"
    )
