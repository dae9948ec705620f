"""What a checker run found: JSON, Markdown and HTML renderings."""

from __future__ import annotations

import html
import json
from typing import Any

import attrs

__all__ = ["PropertyResult", "Report", "Skip", "Violation"]


@attrs.define
class Violation:
    """One broken property, with the exact JSON lines that reproduce it.

    ``transcript`` lines start with ``>`` (sent to the server) or ``<``
    (received from it); the handshake comes first, so replaying the ``>``
    lines into a fresh server reproduces the problem.  ``seed`` is the
    Hypothesis seed of the run (``--seed`` reruns the same examples).  The
    same finding at several revisions is one violation: ``revisions`` lists
    them all, ``revision`` (the first) is the one ``transcript`` comes from.
    """

    property: str
    message: str
    revision: str | None
    tool: str | None
    severity: str
    seed: int | None
    transcript: list[str]
    details: dict[str, Any] = attrs.field(factory=dict)
    revisions: list[str] = attrs.field(factory=list)
    #: The message as first found (a death's message grows its exit status later,
    #: and the same death at another revision is still the same finding).
    key: str = attrs.field(default="", eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.revisions and self.revision is not None:
            self.revisions = [self.revision]
        self.key = self.key or self.message

    def same_finding(self, other: Violation) -> bool:
        """The same finding, perhaps at another revision."""
        return (self.property, self.key, self.tool, self.severity) == (
            other.property,
            other.key,
            other.tool,
            other.severity,
        )

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, filter=lambda field, _: field.name != "key")

    def replay_lines(self) -> list[str]:
        """The lines to send a fresh server to reproduce this (``>`` lines)."""
        return [line[2:] for line in self.transcript if line.startswith("> ")]


@attrs.define
class Skip:
    what: str
    reason: str
    revision: str | None = None


@attrs.define
class PropertyResult:
    name: str
    description: str
    status: str  # passed | failed | skipped
    checks: int = 0
    reason: str | None = None


@attrs.define
class Report:
    target: str
    seed: int
    options: dict[str, Any] = attrs.field(factory=dict)
    server_info: dict[str, Any] = attrs.field(factory=dict)
    revisions_checked: list[str] = attrs.field(factory=list)
    properties: dict[str, PropertyResult] = attrs.field(factory=dict)
    violations: list[Violation] = attrs.field(factory=list)
    skipped: list[Skip] = attrs.field(factory=list)
    tools: dict[str, list[str]] = attrs.field(factory=dict)
    duration: float = 0.0
    workdir: str = ""
    #: Where the JSON report was written (the replay commands name it).
    json_path: str = ""

    # Verdicts -------------------------------------------------------------------------

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity == "error"]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if v.severity != "error"]

    @property
    def ok(self) -> bool:
        """No error-level violation (warnings are SHOULD-level findings)."""
        return not self.errors

    def by_property(self, name: str) -> list[Violation]:
        return [v for v in self.violations if v.property == name]

    def assert_clean(self, *, allow_warnings: bool = True) -> None:
        """Raise AssertionError listing the violations, if any."""
        found = self.errors if allow_warnings else self.violations
        if found:
            raise AssertionError(self.to_markdown(only=found))

    # Renderings ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "seed": self.seed,
            "ok": self.ok,
            "duration_seconds": round(self.duration, 2),
            "options": self.options,
            "server_info": self.server_info,
            "revisions_checked": self.revisions_checked,
            "summary": {
                "errors": len(self.errors),
                "warnings": len(self.warnings),
                "checks": sum(p.checks for p in self.properties.values()),
                "skipped": len(self.skipped),
            },
            "properties": {name: attrs.asdict(p) for name, p in self.properties.items()},
            "findings_by_kind": self._counts(),
            "violations": [
                {
                    "number": i,
                    **v.to_dict(),
                    "replay": self.replay_command(i, self.json_path or "REPORT.json"),
                }
                for i, v in enumerate(self.violations, 1)
            ],
            "skipped": [attrs.asdict(s) for s in self.skipped],
            "tools": self.tools,
        }

    def _counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for v in self.violations:
            row = counts.setdefault(v.property, {})
            row[v.severity] = row.get(v.severity, 0) + 1
        return counts

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def summary_line(self) -> str:
        checks = sum(p.checks for p in self.properties.values())
        verdict = "OK" if self.ok else "VIOLATIONS"
        return (
            f"{verdict}: {len(self.errors)} errors, {len(self.warnings)} warnings, "
            f"{checks} checks at {', '.join(self.revisions_checked) or 'no revision'}, "
            f"{len(self.skipped)} skipped, seed {self.seed}, {self.duration:.1f}s"
        )

    def _depth(self) -> str:
        """How deep the run went: examples, and the bound on a tool call."""
        options = self.options
        budget = options.get("call_budget")
        bound = (
            f"a tool call over {budget:g}s skips its tool for time"
            if budget is not None and budget < options.get("timeout", budget + 1)
            else f"a tool call may take up to {options.get('timeout', '?')}s"
        )
        return (
            f"{options.get('examples', '?')} examples per tool and property, "
            f"{options.get('stateful_examples', '?')} stateful runs; {bound}; "
            f"took {self.duration:.1f}s"
        )

    def summary_table(self) -> list[str]:
        """Findings by kind (property) and severity, as Markdown table lines."""
        counts = self._counts()
        lines = ["| kind | errors | warnings |", "| --- | ---: | ---: |"]
        for name in self.properties:  # in the order the properties run
            if name in counts:
                row = counts[name]
                lines.append(f"| {name} | {row.get('error', 0)} | {row.get('warning', 0)} |")
        lines.append(f"| **total** | {len(self.errors)} | {len(self.warnings)} |")
        return lines

    def replay_command(self, index: int, report_path: str = "REPORT.json") -> str:
        """The command that replays finding ``index`` (1-based, as numbered)."""
        return f"sansio-mcp check --replay {report_path}#{index} -- {self.target}"

    def to_markdown(self, only: list[Violation] | None = None) -> str:
        name = self.server_info.get("name", "?")
        version = self.server_info.get("version", "?")
        if not self.server_info and self.revisions_checked:
            name, version = "(no serverInfo)", ""  # a lenient handshake went on without it
        out = [
            f"# MCP server check: {name} {version}".rstrip(),
            "",
            f"- target: `{self.target}`",
            f"- revisions checked: {', '.join(self.revisions_checked) or 'none'}",
            f"- seed: `{self.seed}` (rerun with `--seed {self.seed}`)",
            f"- depth: {self._depth()}",
            f"- result: **{self.summary_line()}**",
            "",
            "## Properties",
            "",
            "| property | status | checks | note |",
            "| --- | --- | --- | --- |",
        ]
        for p in self.properties.values():
            count = len(self.by_property(p.name))
            note = p.reason or (f"{count} violation(s)" if count else "")
            out.append(f"| {p.name} | {p.status} | {p.checks} | {note} |")
        if self.violations:
            out += ["", "## Findings by kind", "", *self.summary_table()]
        violations = self.violations if only is None else only
        out += ["", f"## Violations ({len(violations)})", ""]
        if not violations:
            out.append("None.")
        for i, v in enumerate(violations, 1):
            at = ", ".join(v.revisions)
            if len(v.revisions) > 1:
                at += f" (the transcript is from {v.revision})"
            where = ", ".join(x for x in (at, f"tool `{v.tool}`" if v.tool else None) if x)
            out += [
                f"### {i}. [{v.severity}] {v.property}: {v.message}",
                "",
                f"{where}; seed `{v.seed}`" if where else f"seed `{v.seed}`",
                "",
                "```",
                *(line if len(line) <= 2000 else line[:2000] + " …" for line in v.transcript),
                "```",
                "",
            ]
            extra = {k: val for k, val in v.details.items() if k != "arguments"}
            if "arguments" in v.details:
                out += [f"Minimal arguments: `{json.dumps(v.details['arguments'])[:500]}`", ""]
            if extra.get("stderr"):
                out += ["Server stderr (last lines):", "", "```", *extra["stderr"], "```", ""]
            if v.replay_lines() and self.json_path:
                number = self.violations.index(v) + 1
                out += [f"Replay: `{self.replay_command(number, self.json_path)}`", ""]
        if only is None:
            out += ["## Skipped", ""]
            if not self.skipped:
                out.append("Nothing.")
            for (what, reason), revisions in self._grouped_skips().items():
                rev = f" ({', '.join(revisions)})" if revisions else ""
                out.append(f"- {what}{rev}: {reason}")
        return "\n".join(out) + "\n"

    def _grouped_skips(self) -> dict[tuple[str, str], list[str]]:
        """The same skip at several revisions, once, with its revisions."""
        grouped: dict[tuple[str, str], list[str]] = {}
        for skip in self.skipped:
            revisions = grouped.setdefault((skip.what, skip.reason), [])
            if skip.revision and skip.revision not in skip.what:
                revisions.append(skip.revision)
        return grouped

    def to_html(self) -> str:
        body = html.escape(self.to_markdown())
        title = html.escape(f"MCP server check: {self.server_info.get('name', '?')}")
        return (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{title}</title></head><body><pre>{body}</pre></body></html>\n"
        )
