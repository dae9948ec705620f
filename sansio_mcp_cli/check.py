"""``sansio-mcp check`` (alias ``fuzz``): property-based checks of an MCP server."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from sansio_mcp import ALL_REVISIONS
from sansio_mcp_testing._options import DEFAULT_MAX_RECORDED_BYTES, DEFAULT_MAX_RECORDED_MESSAGES

__all__ = ["QUICK_CALL_BUDGET", "QUICK_EXAMPLES", "THOROUGH_EXAMPLES", "add_parser", "run"]

#: The depth of a check by default (quick) and with ``--thorough``.
QUICK_EXAMPLES = 5
THOROUGH_EXAMPLES = 20
QUICK_CALL_BUDGET = 2.0
DEFAULT_TIMEOUT = 10.0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``check`` subcommand (and its alias ``fuzz``) to ``sub``."""
    check = sub.add_parser(
        "check",
        aliases=["fuzz"],
        parents=[common],
        help="property-based checks of an MCP server (stdio command or URL); exit 1 on violations",
        usage="sansio-mcp check [options] -- COMMAND [ARG...]  |  sansio-mcp check [options] URL",
    )
    check.add_argument("url", nargs="?", help="a Streamable HTTP server URL instead of a command")
    check.add_argument(
        "--protocol-version",
        action="append",
        choices=ALL_REVISIONS,
        metavar="REV",
        help="revision to check (repeatable; default: every revision the server claims)",
    )
    check.add_argument(
        "--examples",
        type=int,
        help=f"examples per tool and property (default {QUICK_EXAMPLES}; "
        f"{THOROUGH_EXAMPLES} with --thorough)",
    )
    check.add_argument(
        "--thorough",
        action="store_true",
        help=f"check deeper: {THOROUGH_EXAMPLES} examples per tool and property, and tool "
        "calls may take up to --timeout (default: a quick check)",
    )
    check.add_argument(
        "--call-budget",
        type=float,
        metavar="S",
        help=f"seconds a generated tool call may take before its tool is skipped for time "
        f"(default {QUICK_CALL_BUDGET:g}; --timeout with --thorough or an explicit --timeout)",
    )
    check.add_argument("--seed", type=int, help="Hypothesis seed (default: random, reported)")
    check.add_argument(
        "--allow-destructive",
        action="store_true",
        help="also call tools annotated destructiveHint: true",
    )
    check.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="call TOOL even if it is annotated destructive (repeatable)",
    )
    check.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="TOOL",
        help="never call TOOL (repeatable)",
    )
    check.add_argument(
        "--read-only",
        action="store_true",
        help="only call tools annotated readOnlyHint: true",
    )
    check.add_argument(
        "--timeout",
        type=float,
        help="seconds per request (default 10); given, a tool call may take that long too "
        "(no --call-budget unless one is given)",
    )
    check.add_argument(
        "--max-recorded-messages",
        type=int,
        default=DEFAULT_MAX_RECORDED_MESSAGES,
        metavar="N",
        help="the server's messages kept in a connection's transcript (past it they are "
        "checked and counted, not kept)",
    )
    check.add_argument(
        "--max-recorded-bytes",
        type=int,
        default=DEFAULT_MAX_RECORDED_BYTES,
        metavar="N",
        help="bytes of the server's messages kept in a connection's transcript",
    )
    check.add_argument(
        "--property",
        action="append",
        dest="properties",
        metavar="NAME",
        help="run only this property (repeatable; see the report for the names)",
    )
    check.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for a stdio server (it gets a minimal environment)",
    )
    check.add_argument(
        "--schema-dir",
        help="folder of <revision>/schema.json searched first (then $MCP_SCHEMA_DIR, the cache "
        "`sansio-mcp schemas fetch` fills, ../shared/mcp-schema)",
    )
    check.add_argument("--report-json", metavar="FILE", help="write the report as JSON")
    check.add_argument("--report-md", metavar="FILE", help="write the report as Markdown")
    check.add_argument("--report-html", metavar="FILE", help="write the report as HTML")
    check.add_argument(
        "--report",
        metavar="FILE",
        help="write the report; the format follows the extension (.json, .md, .html)",
    )
    check.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    check.add_argument(
        "--replay",
        metavar="REPORT.json#N|TRACE.jsonl",
        help="re-send finding N of a JSON report (or the messages a `--trace` file of "
        "inspect or call says were sent) to a fresh server (the command after --, "
        "or the report's target) and print what it answers",
    )
    from .oauth import add_oauth_arguments

    add_oauth_arguments(check)


def _auth(args: argparse.Namespace, target: list[str] | str) -> Any:
    """The OAuth provider of ``--oauth`` / ``--bearer`` for a URL (the check runs on Trio)."""
    if not isinstance(target, str):
        return None
    from trio_adapters import BACKEND

    from .oauth import oauth_provider

    args.url = target
    return oauth_provider(args, BACKEND)


def run(args: argparse.Namespace, command: list[str]) -> int:
    """Run the check; 0 when no error-level violation was found, 1 otherwise, 2 on misuse."""
    from sansio_mcp_testing.checker import CheckOptions, run_check

    if args.replay:
        return _replay(args.replay, command, args.timeout or DEFAULT_TIMEOUT)
    target: list[str] | str
    if args.url:
        target = args.url
    elif len(command) == 1 and command[0].startswith(("http://", "https://")):
        target = command[0]
    elif command:
        target = command
    else:
        print(
            "sansio-mcp check: give a server URL, or the server command after --", file=sys.stderr
        )
        return 2
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"sansio-mcp check: --env wants KEY=VALUE, not {item!r}", file=sys.stderr)
            return 2
        env[key] = value
    logging.getLogger("sansio_mcp").setLevel(logging.ERROR)
    logging.getLogger("trio_adapters").setLevel(logging.ERROR)
    progress = None if args.quiet else _Progress()
    options = CheckOptions(
        protocol_versions=args.protocol_version,
        examples=args.examples or (THOROUGH_EXAMPLES if args.thorough else QUICK_EXAMPLES),
        call_budget=args.call_budget
        or (None if args.thorough or args.timeout is not None else QUICK_CALL_BUDGET),
        seed=args.seed,
        allow_destructive=args.allow_destructive,
        allow=args.allow,
        deny=args.deny,
        read_only=args.read_only,
        timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
        max_recorded_messages=args.max_recorded_messages,
        max_recorded_bytes=args.max_recorded_bytes,
        schema_dir=args.schema_dir,
        env=env,
        properties=args.properties,
        progress=progress,
        status=progress.status if progress is not None else None,
        auth=_auth(args, target),
    )
    try:
        report = run_check(target, options)
    except ValueError as exc:
        print(f"sansio-mcp check: {exc}", file=sys.stderr)
        return 2
    finally:
        if progress is not None:
            progress.done()
    outputs = {"json": args.report_json, "md": args.report_md, "html": args.report_html}
    if args.report:
        suffix = args.report.rsplit(".", 1)[-1].lower()
        outputs[{"markdown": "md", "htm": "html"}.get(suffix, suffix)] = args.report
    if outputs.get("json"):
        report.json_path = outputs["json"]
    renderers = {"json": report.to_json, "md": report.to_markdown, "html": report.to_html}
    for kind, path in outputs.items():
        if path:
            if kind not in renderers:
                print(f"sansio-mcp check: unknown report format {kind!r}", file=sys.stderr)
                return 2
            with open(path, "w", encoding="utf-8") as f:
                f.write(renderers[kind]())
    sys.stdout.write(report.to_markdown())
    for skip in report.skipped:
        if skip.what == "schema":  # checking less than asked must never be silent
            print(f"sansio-mcp check: warning: {skip.reason}", file=sys.stderr)
    if report.violations:
        print("\n".join(report.summary_table()), file=sys.stderr)
    print(report.summary_line(), file=sys.stderr)
    return 0 if report.ok else 1


def _replay(spec: str, command: list[str], timeout: float) -> int:
    """``--replay REPORT.json#N`` or ``--replay TRACE.jsonl``: 0 when replayed,
    2 when it cannot be."""
    import shlex

    from sansio_mcp_testing.replay import ReplayError, finding_lines, is_trace, trace_lines

    try:
        if is_trace(spec):
            lines, finding = trace_lines(spec), None
        else:
            lines, finding = finding_lines(spec)
    except ReplayError as exc:
        print(f"sansio-mcp check: {exc}", file=sys.stderr)
        return 2
    if finding is None:
        if not command:
            print("sansio-mcp check: give the server command after --", file=sys.stderr)
            return 2
        print(f"replaying {len(lines)} messages of the trace {spec}", file=sys.stderr)
        return _replay_lines(command, lines, timeout)
    if not command:
        with open(spec.rpartition("#")[0], encoding="utf-8") as f:
            target = json.load(f).get("target", "")
        if target.startswith(("http://", "https://")) or not target:
            print("sansio-mcp check: give the server command after --", file=sys.stderr)
            return 2
        command = shlex.split(target)
    print(
        f"replaying finding {spec.rpartition('#')[2]} [{finding.get('severity')}] "
        f"{finding.get('property')}: {finding.get('message')}",
        file=sys.stderr,
    )
    return _replay_lines(command, lines, timeout)


def _replay_lines(command: list[str], lines: list[str], timeout: float) -> int:
    import trio

    from sansio_mcp_testing.replay import replay

    try:
        trio.run(lambda: replay(command, lines, timeout=timeout))
    except OSError as exc:
        print(f"sansio-mcp check: cannot start the server: {exc}", file=sys.stderr)
        return 2
    return 0


class _Progress:
    """One status line on a terminal, rewritten in place (revision, surface, examples
    done of planned); elsewhere (a log) only the steps and findings, a line each."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.steps = 0

    def status(self, revision: str, surface: str, done: int, planned: int) -> None:
        if not self.tty:
            return
        counted = f"{min(done, planned)}/{planned} examples" + (
            ", shrinking" if done > planned else ""
        )
        sys.stderr.write(f"\r\x1b[K[{revision}] {surface[:70]}: {counted}")
        sys.stderr.flush()

    def __call__(self, text: str) -> None:
        self.steps += 1
        if self.tty and not text.startswith("  !"):
            bar = "#" * (self.steps % 20)
            sys.stderr.write(f"\r\x1b[K[{bar:<20}] {text[:100]}")
        else:
            if self.tty:
                sys.stderr.write("\r\x1b[K")
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
