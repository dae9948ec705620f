"""What a server check has found so far, per property: counts, violations and
skips.  The :class:`~sansio_mcp_testing.report.Report` is built from it.

The checker, its probes and the stateful property all record into one
:class:`Findings`, so none of them needs to reach into another to report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from ._options import PROPERTIES
from .report import PropertyResult, Report, Skip, Violation

if TYPE_CHECKING:
    from ._connection import Connection
    from ._recorder import SchemaProblem

__all__ = ["Findings", "PropertyFailure"]

#: Distinct schema violations reported at most (a server that gets one message type
#: wrong usually gets it wrong every time).
_MAX_SCHEMA_VIOLATIONS = 25


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


class PropertyFailure(Exception):
    """A property failed on a generated example: raised inside a Hypothesis run (so
    that it shrinks the example), recorded as a violation once the run is over."""

    def __init__(self, message: str, transcript: list[str], details: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.transcript = transcript
        self.details = details


class Findings:
    """Counts, violations and skips of one check run, recorded into ``report``."""

    def __init__(
        self,
        report: Report,
        *,
        seed: int,
        enabled: Collection[str],
        progress: Callable[[str], None] | None = None,
        status: Callable[[str, str, int, int], None] | None = None,
    ) -> None:
        self.report = report
        self.seed = seed
        #: The properties that still run (a property skipped as a whole leaves it).
        self.enabled = set(enabled)
        self._progress = progress
        self._status = status
        #: Where the run is: (revision, surface).
        self.where = ("", "")
        self._schema_seen: set[str] = set()
        self._wire_seen: set[str] = set()
        #: Tools a call of which went over the per-call budget (skipped for time since).
        self.over_budget: set[str] = set()
        for name, description in PROPERTIES.items():
            verdict = "passed" if name in self.enabled else "skipped"
            report.properties[name] = PropertyResult(name, description, verdict)
            if name not in self.enabled:
                report.properties[name].reason = "not selected"

    def say(self, text: str) -> None:
        if self._progress is not None:
            self._progress(text)

    def step(self, revision: str, surface: str) -> None:
        """The run moves on to ``surface`` (a property, a tool) at ``revision``."""
        self.where = (revision, surface)
        self.say(f"[{revision}] {surface}")

    def tick(self, surface: str, done: int, planned: int) -> None:
        """``done`` of ``planned`` examples of ``surface`` have run."""
        if self._status is not None:
            self._status(self.where[0], surface, done, planned)

    def count(self, name: str, n: int = 1) -> None:
        self.report.properties[name].checks += n

    def violate(
        self,
        name: str,
        message: str,
        transcript: list[str],
        *,
        revision: str | None,
        tool: str | None = None,
        severity: str = "error",
        announce: bool = True,
        **details: Any,
    ) -> Violation:
        if name not in PROPERTIES:
            raise KeyError(name)
        self.report.properties[name].status = "failed"
        violation = Violation(
            property=name,
            message=message,
            revision=revision,
            tool=tool,
            severity=severity,
            seed=self.seed,
            transcript=transcript,
            details=details,
        )
        for earlier in self.report.violations:
            if earlier.same_finding(violation) and revision is not None:
                # Found again at another revision: one entry, the revisions listed.
                if revision not in earlier.revisions:
                    earlier.revisions.append(revision)
                return earlier
        self.report.violations.append(violation)
        if announce:
            self.say(f"  ! {name}: {message}")
        return violation

    def merge(self, part: Report) -> None:
        """Take in what a run at one revision found, recorded in a report of its own
        (revisions checked at once merge in a fixed order: the report reads the same)."""
        for name, result in part.properties.items():
            mine = self.report.properties[name]
            mine.checks += result.checks
            if result.status == "failed":
                mine.status = "failed"
            elif result.status == "skipped" and mine.status == "passed" and name in self.enabled:
                self.skip_property(name, result.reason or "")
        for violation in part.violations:
            for earlier in self.report.violations:
                if earlier.same_finding(violation) and violation.revision is not None:
                    earlier.revisions += [
                        r for r in violation.revisions if r not in earlier.revisions
                    ]
                    break
            else:
                self.report.violations.append(violation)
        for skip in part.skipped:
            self.skip(skip.what, skip.reason, skip.revision)
        self.report.revisions_checked += part.revisions_checked
        if not self.report.server_info:
            self.report.server_info = dict(part.server_info)

    def skip(self, what: str, reason: str, revision: str | None = None) -> None:
        skip = Skip(what, reason, revision)
        if skip not in self.report.skipped:  # several properties skip the same tool
            self.report.skipped.append(skip)

    def skip_property(self, name: str, reason: str) -> None:
        result = self.report.properties[name]
        result.status = "skipped"
        result.reason = reason
        self.enabled.discard(name)

    def server_gone(self, conn: Connection, when: str, start: int | None = None) -> None:
        """The server died during ``when``: a survival violation, and ``conn`` is dead."""
        conn.dead = True
        begin = start if start is not None else max(conn.setup_end, conn.recorder.seq - 4)
        # A process's exit status and last stderr lines are filled in (and the death
        # announced) once it is reaped.
        conn.death = self.violate(
            "survival",
            f"the server died during {when}",
            conn.transcript(begin),
            revision=conn.revision,
            announce=conn.process is None,
            stderr=list(conn.stderr_tail),
            exit_status=None,
        )

    def schema_problem(self, problem: SchemaProblem) -> None:
        """A message failed its schema (the recorder's callback)."""
        if "schema" not in self.enabled:
            return
        # Numbers vary from message to message (ids, generated values): the same
        # breach with another number is the same finding.
        key = f"{problem.revision}|" + _NUMBER.sub("N", problem.problems[0][:120])
        if key in self._schema_seen:
            return
        self._schema_seen.add(key)
        if len(self._schema_seen) > _MAX_SCHEMA_VIOLATIONS:
            return
        # A problem can quote the whole offending message: the transcript has it already.
        message = "; ".join(p if len(p) <= 300 else p[:300] + " …" for p in problem.problems)
        self.violate("schema", message, problem.transcript(), revision=problem.revision)

    def wire_problem(self, problem: SchemaProblem) -> None:
        """The server broke JSON-RPC 2.0 itself (the recorder's callback)."""
        if "wire" not in self.enabled:
            return
        for text in problem.problems:
            # One finding per kind of breach: the id or version varies from message
            # to message, the defect does not.
            kind = text.split(" with ")[0] + (" id" if "matches no request" in text else "")
            key = f"wire|{problem.revision}|{kind}"
            if key in self._wire_seen:
                continue
            self._wire_seen.add(key)
            self.count("wire")
            self.violate("wire", text, problem.transcript(), revision=problem.revision)

    def finish(self) -> None:
        """A property that checked nothing is skipped, not passed, with the reason
        (malformed-jsonrpc over Streamable HTTP showed "passed, 0 checks")."""
        for name in self.enabled:
            result = self.report.properties[name]
            if result.status != "passed" or result.checks:
                continue
            reasons = list(dict.fromkeys(s.reason for s in self.report.skipped if s.what == name))
            if name == "schema" and not reasons:
                reasons = ["no message was checked"]
            result.status, result.reason = "skipped", "; ".join(reasons) or "nothing to check"
