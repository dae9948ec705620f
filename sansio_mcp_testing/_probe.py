"""What every area of the checker's probes shares: the connection it probes,
the findings it records into, and requests that record an unanswered request
(responsive) and a dead server (survival) as they happen."""

from __future__ import annotations

from typing import Any

import attrs

from sansio_mcp import ConnectionClosedError, ErrorCode, MCPError, RequestTimeout

from ._connection import Connection, Lifeline, ServerGone
from ._findings import Findings
from ._options import CheckOptions

__all__ = ["MAX_PAGES", "Probe", "Walk"]

#: Pages of one list walked at the most (a server that never ends a list is a finding,
#: not a hang).
MAX_PAGES = 100


@attrs.define
class Walk:
    """One walk through the pages of a list."""

    #: (the cursor asked with, the page's items) in order; None: the first page.
    pages: list[tuple[str | None, list[Any]]] = attrs.field(factory=list)
    #: Why the walk stopped before the end: a repeated cursor, no end (None: it ended,
    #: or a request failed, which is reported where it happened).
    problem: str | None = None
    #: The recorder line the walk began at (for its transcript).
    start: int = 0

    @property
    def items(self) -> list[Any]:
        return [item for _, items in self.pages for item in items]


class Probe:
    """The checks of one area over one connection."""

    def __init__(self, findings: Findings, options: CheckOptions, line: Lifeline) -> None:
        self.findings = findings
        self.options = options
        self.line = line

    @property
    def conn(self) -> Connection:
        """The current connection (a restart replaces it)."""
        return self.line.conn

    async def walk(self, method: str, key: str) -> Walk:
        """Every page of list ``method`` (items under ``key``), until the end, a cursor
        seen before, :data:`MAX_PAGES`, or a failed request.  Raises ServerGone."""
        walk = Walk(start=self.conn.recorder.seq)
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = {"cursor": cursor} if cursor is not None else None
            kind, value, _ = await self.request(method, params, method)
            if kind != "result" or not isinstance(value, dict):
                return walk
            items = value.get(key)
            walk.pages.append((cursor, list(items) if isinstance(items, list) else []))
            next_cursor = value.get("nextCursor")
            if not isinstance(next_cursor, str):
                return walk  # the end (a nextCursor of another type: the schema's finding)
            if next_cursor in seen:
                walk.problem = f"{method} returned cursor {next_cursor!r} twice (a pagination loop)"
                return walk
            if len(walk.pages) >= MAX_PAGES:
                walk.problem = (
                    f"{method} did not end after {MAX_PAGES} pages (the walk stopped there)"
                )
                return walk
            seen.add(next_cursor)
            cursor = next_cursor

    def violate(self, name: str, message: str, transcript: list[str], **details: Any) -> None:
        """A violation of property ``name`` on this connection (at its revision)."""
        self.findings.violate(name, message, transcript, revision=self.conn.revision, **details)

    def skip(self, what: str, reason: str) -> None:
        """Something not checked on this connection, and why."""
        self.findings.skip(what, reason, self.conn.revision)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        what: str,
        *,
        report_death: bool = True,
        budget: float | None = None,
    ) -> tuple[str, Any, list[str]]:
        """("result", result) | ("error", MCPError) | ("unanswered", None): no usable
        answer (none in time, or one over the size limit), already reported |
        ("over-budget", None): none within ``budget`` seconds (shorter than the
        timeout), not reported; with the transcript.  Raises ServerGone (with the
        transcript, unreported, when ``report_death`` is false)."""
        conn = self.conn
        start = conn.recorder.seq
        bounded = budget is not None and budget < self.options.timeout
        try:
            result = await conn.client.request(
                method,
                params,
                timeout=budget if bounded else self.options.timeout,
                fresh=True,
            )
            outcome: tuple[str, Any] = ("result", result)
        except RequestTimeout:
            if bounded:
                return "over-budget", None, conn.transcript(start)
            return "unanswered", None, self._unanswered(method, params, what, start)
        except ConnectionClosedError:
            if not report_death:
                raise ServerGone(conn.transcript(start)) from None
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
    # The wording of RequestTracker.fail_malformed: "the answer to M was malformed: ..."
    # or, over the size limit, "... was refused: ...".
    message = error.message
    return (
        error.code == ErrorCode.INVALID_REQUEST
        and message.startswith("the answer to ")
        and (" was malformed: " in message or " was refused: " in message)
    )
