#!/usr/bin/env python3
"""Run the official MCP conformance suite against sansio-mcp, both sides.

    python conformance/run.py                 # everything, results in a temp dir
    python conformance/run.py --out DIR       # keep results in DIR
    python conformance/run.py --side server --run 2026-07-28
    python conformance/run.py --markdown table.md
    python conformance/run.py --side server --scenario tasks-lifecycle --server-backend asyncio

Server side: starts ``conformance/server.py`` on a free loopback
port and runs ``conformance server`` against it for the 2025-11-25 and
2026-07-28 requirement sets and the ``all`` suite.  Client side: runs
``conformance client`` with ``conformance/client.py`` for the same
three selections.  Every run uses the expected-failures baseline
``conformance/baseline.yml`` (empty: every scenario passes).  ``--client-backend
asyncio`` runs the client on asyncio, ``--server-backend asyncio`` the fixture server.

The suite is ``@modelcontextprotocol/conformance@0.2.0-alpha.12`` from
``node_modules`` (``npm ci``), run with the Node 22 of ``node_modules/.bin/node``.
Exit status 0 when every scenario outside the baseline passed and no baseline
entry passed (a stale baseline); 1 otherwise; 2 when the suite is not installed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE = REPO / "node_modules" / ".bin" / "node"
PACKAGE = REPO / "node_modules" / "@modelcontextprotocol" / "conformance"
HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.yml"
SERVER_SCRIPT = HERE / "server.py"
CLIENT_SCRIPT = HERE / "client.py"
SUITE_VERSION = "0.2.0-alpha.12"

#: How long one ``conformance`` invocation may take before it is killed.
RUN_TIMEOUT = 240.0
#: How long the fixture server may take to print its port.
SERVER_START_TIMEOUT = 20.0

_STAMP = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")


@dataclass(frozen=True)
class Run:
    """One invocation of the suite: a side and a scenario selection."""

    side: str  # "server" | "client"
    label: str  # "2025-11-25" | "2026-07-28" | "all"
    #: The backend the client runs on ("trio" or "asyncio"; see fixture_server for the server's).
    backend: str = "trio"
    #: One scenario only (of the ``all`` suite), instead of the whole selection.
    scenario: str | None = None

    @property
    def selection(self) -> list[str]:
        if self.scenario is not None:
            return ["--scenario", self.scenario]
        if self.label == "all":
            return ["--suite", "all"]
        return ["--requirements", self.label]

    @property
    def name(self) -> str:
        suffix = "" if self.backend == "trio" else f"-{self.backend}"
        if self.scenario:
            suffix += f"-{self.scenario.replace('/', '_')}"
        return f"{self.side}-{self.label}{suffix}"


#: The selections: the two requirement sets, and every scenario of the suite.
LABELS = ("2025-11-25", "2026-07-28", "all")
RUNS: tuple[Run, ...] = tuple(Run(side, label) for side in ("server", "client") for label in LABELS)


@dataclass
class ScenarioResult:
    scenario: str
    run: Run
    counts: collections.Counter[str]
    not_scored: str | None = None  # "extension", "pending", "added-after-release"
    baseline_reason: str | None = None
    failures: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.counts["FAILURE"] or self.counts["WARNING"])

    @property
    def outcome(self) -> str:
        """pass, skipped (nothing applicable), baselined, FAIL (unexpected) or STALE."""
        if self.baseline_reason is not None:
            return "baselined" if self.failed else "STALE"
        if self.failed:
            return "FAIL"
        return "pass" if self.counts["SUCCESS"] else "skipped"

    @property
    def ok(self) -> bool:
        return self.outcome in ("pass", "skipped", "baselined")


@dataclass
class RunResult:
    run: Run
    exit_code: int
    out_dir: Path
    scenarios: list[ScenarioResult]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and bool(self.scenarios) and all(s.ok for s in self.scenarios)

    @property
    def problems(self) -> list[str]:
        found = [
            f"{s.scenario}: {s.outcome} ({'; '.join(s.failures[:3]) or 'baseline entry passes'})"
            for s in self.scenarios
            if not s.ok
        ]
        if not self.scenarios:
            found.append("no scenario results were written")
        if self.exit_code != 0 and not found:
            found.append(f"the conformance CLI exited {self.exit_code}")
        return found


# Baseline ------------------------------------------------------------------------------


def load_baseline(path: Path = BASELINE) -> dict[str, dict[str, str]]:
    """``{"server": {scenario: reason}, "client": {...}}`` from the baseline file.

    The file is the small YAML subset the suite reads: two keys holding lists
    of scenario names, each line's comment giving the reason.
    """
    baseline: dict[str, dict[str, str]] = {"server": {}, "client": {}}
    section: str | None = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith((" ", "-")):
            key = line.split(":", 1)[0].strip()
            section = key if key in baseline else None
            continue
        item = line.strip()
        if section is None or not item.startswith("- "):
            continue
        entry, _, comment = item[2:].partition("#")
        baseline[section][entry.strip()] = comment.strip() or "in the baseline"
    return baseline


# The suite ----------------------------------------------------------------------------


def cli_entry() -> Path:
    """The conformance CLI script (the package's ``bin``)."""
    package = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    if package.get("version") != SUITE_VERSION:
        raise RuntimeError(
            f"{PACKAGE} is version {package.get('version')}, expected {SUITE_VERSION} (npm ci)"
        )
    bin_field = package["bin"]
    relative = bin_field if isinstance(bin_field, str) else bin_field["conformance"]
    return PACKAGE / relative


def missing_prerequisites() -> str | None:
    """Why the suite cannot run here, or None."""
    if not NODE.exists():
        return f"{NODE} is missing: run `npm ci` in {REPO} (the suite needs Node 22)"
    if not (PACKAGE / "package.json").is_file():
        return f"{PACKAGE} is missing: run `npm ci` in {REPO}"
    return None


@contextmanager
def fixture_server(log_path: Path, backend: str = "trio") -> Iterator[str]:
    """Run the conformance fixture server on a free loopback port, on ``backend``
    (trio or asyncio); yields its URL."""
    log = log_path.open("w", encoding="utf-8")
    process = subprocess.Popen(
        [
            sys.executable,
            str(SERVER_SCRIPT),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--backend",
            backend,
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=REPO,
    )
    try:
        assert process.stdout is not None
        first_line: list[str] = []
        reader = threading.Thread(
            target=lambda: first_line.append(process.stdout.readline()),  # type: ignore[union-attr]
            daemon=True,
        )
        reader.start()
        reader.join(SERVER_START_TIMEOUT)
        match = re.search(r"http://\S+/mcp", first_line[0]) if first_line else None
        if match is None:
            raise RuntimeError(
                f"the fixture server did not report its URL within {SERVER_START_TIMEOUT} s "
                f"(exit status {process.poll()}; see {log_path})"
            )
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=_drain, args=(process.stdout, log), daemon=True).start()
        yield match.group(0)
    finally:
        _stop(process)
        log.close()


def _drain(stream: object, log: object) -> None:
    for line in stream:  # type: ignore[attr-defined]
        try:
            log.write(line)  # type: ignore[attr-defined]
        except ValueError:  # the log was closed
            return


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop a child we started: SIGTERM, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def run_suite(
    run: Run,
    out_root: Path,
    *,
    server_url: str | None = None,
    baseline_path: Path = BASELINE,
    timeout: float = RUN_TIMEOUT,
) -> RunResult:
    """Invoke the conformance CLI for ``run``; its results land in ``out_root/<run>``."""
    out_dir = out_root / run.name
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [str(NODE), str(cli_entry()), run.side]
    if run.side == "server":
        if server_url is None:
            raise ValueError("a server run needs the fixture server's URL")
        command += ["--url", server_url]
    else:
        client = f"{sys.executable} {CLIENT_SCRIPT}"
        if " " in str(sys.executable) + str(CLIENT_SCRIPT):
            raise RuntimeError("the suite splits --command on spaces: move the checkout")
        command += ["--command", client]
    command += [*run.selection, "--expected-failures", str(baseline_path), "-o", str(out_dir)]
    env = dict(os.environ)
    env.pop("MCP_CONFORMANCE_LOG", None)
    env["SANSIO_MCP_CONFORMANCE_BACKEND"] = run.backend
    started = time.monotonic()
    with (out_dir / "cli-stdout.txt").open("w", encoding="utf-8") as stdout_file:
        completed = subprocess.run(
            command,
            stdout=stdout_file,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
            timeout=timeout,
            check=False,
        )
    seconds = time.monotonic() - started
    baseline = load_baseline(baseline_path)[run.side]
    not_scored = {name: "extension" for name in extension_scenarios(run.side)}
    not_scored.update(not_scored_reasons(run.side))
    scenarios = collect_results(run, out_dir, baseline, not_scored)
    return RunResult(run, completed.returncode, out_dir, scenarios, seconds)


def not_scored_reasons(side: str) -> dict[str, str]:
    """Why the suite never scores some scenarios of ``side`` (extension, pending, ...),
    from its frozen requirement files."""
    reasons: dict[str, set[str]] = collections.defaultdict(set)
    for requirements in sorted((PACKAGE / "requirements").glob("*.yaml")):
        entry: dict[str, str] = {}
        in_section = False
        for line in [*requirements.read_text(encoding="utf-8").splitlines(), "-"]:
            if not line.startswith((" ", "#")):
                in_section = line.startswith("not_scored:")
            match = re.match(r"^\s*-?\s*(scenario|leg|reason):\s*(\S+)", line)
            if not in_section or line.lstrip().startswith("- ") or not line.strip():
                if entry.get("leg") == side and "scenario" in entry and "reason" in entry:
                    reasons[entry["scenario"]].add(f"{entry['reason']} ({requirements.stem})")
                entry = {}
            if in_section and match:
                entry[match.group(1)] = match.group(2)
    return {name: ", ".join(sorted(why)) for name, why in reasons.items()}


def required_scenarios(side: str, revision: str) -> list[str]:
    """The scenarios a requirement set scores for ``side`` (its frozen top-level list)."""
    text = (PACKAGE / "requirements" / f"{revision}.yaml").read_text(encoding="utf-8")
    found: list[str] = []
    section = None
    for line in text.splitlines():
        if line and not line.startswith((" ", "#", "-")):
            section = line.split(":", 1)[0]
        elif section == side and (match := re.match(r"^\s*- (\S+)\s*$", line)):
            found.append(match.group(1))
    return found


def extension_scenarios(side: str) -> set[str]:
    """Scenarios the suite tags ``[extension]`` (``conformance list``)."""
    listing = subprocess.run(
        [str(NODE), str(cli_entry()), "list", f"--{side}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    ).stdout
    return set(re.findall(r"^\s+- (\S+) \[extension\]$", listing, re.MULTILINE))


def collect_results(
    run: Run, out_dir: Path, baseline: dict[str, str], not_scored: dict[str, str]
) -> list[ScenarioResult]:
    """One result per scenario from the ``checks.json`` files the suite wrote."""
    results: dict[str, ScenarioResult] = {}
    for checks_file in sorted(out_dir.rglob("checks.json")):
        relative = checks_file.parent.relative_to(out_dir).as_posix()
        scenario = _STAMP.sub("", relative)
        if run.side == "server" and scenario.startswith("server-"):
            scenario = scenario[len("server-") :]
        checks = json.loads(checks_file.read_text(encoding="utf-8"))
        counts = collections.Counter(str(c.get("status")) for c in checks)
        failures = [
            f"{c.get('id')}: {c.get('errorMessage') or c.get('status')}"
            for c in checks
            if c.get("status") in ("FAILURE", "WARNING")
        ]
        results[scenario] = ScenarioResult(
            scenario,
            run,
            counts,
            not_scored=not_scored.get(scenario),
            baseline_reason=baseline.get(scenario),
            failures=failures,
        )
    return [results[name] for name in sorted(results)]


def run_all(
    runs: Sequence[Run], out_root: Path, *, baseline_path: Path = BASELINE, backend: str = "trio"
) -> list[RunResult]:
    """Run ``runs``, starting (and stopping) the fixture server (on ``backend``)
    for the server side."""
    results: list[RunResult] = []
    server_runs = [r for r in runs if r.side == "server"]
    if server_runs:
        with fixture_server(out_root / "fixture-server.log", backend) as url:
            for run in server_runs:
                results.append(
                    run_suite(run, out_root, server_url=url, baseline_path=baseline_path)
                )
    for run in (r for r in runs if r.side == "client"):
        results.append(run_suite(run, out_root, baseline_path=baseline_path))
    return results


# Reporting ----------------------------------------------------------------------------


def _cell(result: ScenarioResult | None) -> str:
    if result is None:
        return "—"
    counts = result.counts
    total = counts["SUCCESS"] + counts["FAILURE"] + counts["WARNING"]
    if result.outcome == "pass":
        skipped = f" ({counts['SKIPPED']} n/a)" if counts["SKIPPED"] else ""
        return f"pass {counts['SUCCESS']}/{total}{skipped}"
    if result.outcome == "skipped":
        return f"skipped ({counts['SKIPPED']} n/a)"
    failed = counts["FAILURE"] + counts["WARNING"]
    return f"{result.outcome} ({failed}/{total} failed)"


def markdown_table(results: Sequence[RunResult]) -> str:
    """Scenario rows, one column per run of the same side."""
    lines: list[str] = []
    for side in ("server", "client"):
        side_runs = [r for r in results if r.run.side == side]
        if not side_runs:
            continue
        by_scenario: dict[str, dict[str, ScenarioResult]] = collections.defaultdict(dict)
        for run_result in side_runs:
            for scenario in run_result.scenarios:
                by_scenario[scenario.scenario][run_result.run.label] = scenario
        labels = [r.run.label for r in side_runs]
        lines.append(f"| {side} scenario | " + " | ".join(labels) + " | notes |")
        lines.append("|---|" + "---|" * len(labels) + "---|")
        for name in sorted(by_scenario, key=lambda n: (n.startswith(("auth/", "tasks-")), n)):
            cells = by_scenario[name]
            notes = []
            first = next(iter(cells.values()))
            if first.not_scored:
                notes.append(f"not scored: {first.not_scored}")
            if first.baseline_reason:
                notes.append(f"baseline: {first.baseline_reason}")
            row = [_cell(cells.get(label)) for label in labels]
            lines.append(f"| `{name}` | " + " | ".join(row) + f" | {'; '.join(notes)} |")
        lines.append("")
    return "\n".join(lines)


def summary_lines(results: Sequence[RunResult]) -> list[str]:
    lines = []
    for result in results:
        outcomes = collections.Counter(s.outcome for s in result.scenarios)
        checks = collections.Counter[str]()
        for scenario in result.scenarios:
            checks.update(scenario.counts)
        lines.append(
            f"{result.run.name:<20} {'ok' if result.ok else 'FAILED':<6} "
            f"scenarios: {', '.join(f'{n} {k}' for k, n in sorted(outcomes.items()))}; "
            f"checks: {checks['SUCCESS']} passed, {checks['FAILURE']} failed, "
            f"{checks['WARNING']} warnings, {checks['SKIPPED']} skipped "
            f"(cli exit {result.exit_code}, {result.seconds:.1f} s)"
        )
        lines.extend(f"    {problem}" for problem in result.problems)
    return lines


def results_folder(out: Path | None, prefix: str) -> Path:
    """``out``, or a new temporary folder named after ``prefix``; created either way."""
    folder = out or Path(tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def report(results: Sequence[RunResult], out_root: Path, markdown: Path | None = None) -> int:
    """Write ``results.md`` (and ``markdown``, if given), print the summary; the exit
    code: 0 when every run is ok."""
    table = markdown_table(results)
    (out_root / "results.md").write_text(table, encoding="utf-8")
    if markdown:
        markdown.write_text(table, encoding="utf-8")
    for line in summary_lines(results):
        print(line)
    print(f"results: {out_root}")
    return 0 if all(r.ok for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="results directory (default: a new temp dir)")
    parser.add_argument("--side", choices=("server", "client", "both"), default="both")
    parser.add_argument(
        "--run",
        action="append",
        choices=LABELS,
        help="selection to run (repeatable; default: all three)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        help="run only this scenario (repeatable; one suite invocation each, label 'all')",
    )
    parser.add_argument(
        "--server-backend",
        choices=("trio", "asyncio"),
        default="trio",
        help="the backend conformance/server.py serves on (default: trio)",
    )
    parser.add_argument(
        "--client-backend",
        choices=("trio", "asyncio"),
        default="trio",
        help="the backend conformance/client.py runs on (default: trio)",
    )
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--markdown", type=Path, help="also write the result table here")
    parser.add_argument("--json", type=Path, help="also write a JSON summary here")
    args = parser.parse_args(argv)

    problem = missing_prerequisites()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    labels = args.run or list(LABELS)
    runs = [
        Run(r.side, r.label, args.client_backend if r.side == "client" else "trio")
        for r in RUNS
        if args.side in (r.side, "both") and r.label in labels
    ]
    if args.scenario:
        sides = ("server", "client") if args.side == "both" else (args.side,)
        runs = [
            Run(side, "all", args.client_backend if side == "client" else "trio", name)
            for side in sides
            for name in args.scenario
        ]
    out_root = results_folder(args.out, "mcp-conformance-")
    results = run_all(runs, out_root, baseline_path=args.baseline, backend=args.server_backend)
    summary = {
        result.run.name: {
            "ok": result.ok,
            "exit_code": result.exit_code,
            "seconds": round(result.seconds, 1),
            "scenarios": {
                s.scenario: {
                    "outcome": s.outcome,
                    "checks": dict(s.counts),
                    "not_scored": s.not_scored,
                    "baseline": s.baseline_reason,
                    "failures": s.failures,
                }
                for s in result.scenarios
            },
        }
        for result in results
    }
    (out_root / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return report(results, out_root, args.markdown)


if __name__ == "__main__":
    sys.exit(main())
