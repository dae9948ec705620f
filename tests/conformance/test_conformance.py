"""The official MCP conformance suite (@modelcontextprotocol/conformance@0.2.0-alpha.12)
against sansio-mcp: the fixture server (conformance/server.py) and the
client (conformance/client.py), for the 2025-11-25 and 2026-07-28
requirement sets and the suite's ``all`` selection.

The baseline (conformance/baseline.yml) is empty: any failure fails a test, and so
would a baseline entry that passes.  The tasks extension's scenarios also run one by one
against the fixture on each backend.  The runner is conformance/run.py; each test is one
suite invocation (20-40 s on 2 busy cores).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.interop


def _load_runner() -> ModuleType:
    # conformance/ is a folder of scripts, not a package (pytest already maps
    # tests/conformance to the name "conformance"): load the runner by path.
    path = REPO / "conformance" / "run.py"
    spec = importlib.util.spec_from_file_location("conformance_runner", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("conformance_runner", module)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


@pytest.fixture(scope="module")
def suite_ready() -> None:
    if not runner.NODE.exists():
        pytest.skip(
            f"{runner.NODE} is missing: the conformance suite needs the Node 22 that "
            f"`npm ci` installs into node_modules (run it in {REPO})"
        )
    problem = runner.missing_prerequisites()
    assert problem is None, problem


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("conformance")


@pytest.fixture(scope="module")
def server_url(suite_ready: None, results_dir: Path) -> Iterator[str]:
    with runner.fixture_server(results_dir / "fixture-server.log") as url:
        yield url


def _check(result: object, side: str, label: str) -> None:
    """Fail with every unexpected failure (and stale baseline entry) of a run."""
    problems = list(result.problems)  # type: ignore[attr-defined]
    outcomes = {s.scenario: s.outcome for s in result.scenarios}  # type: ignore[attr-defined]
    if label != "all":
        # Every scored scenario outside the baseline ran and passed (guards against a
        # run that silently did less).
        baseline = runner.load_baseline()[side]
        for name in runner.required_scenarios(side, label):
            if name not in baseline and outcomes.get(name) != "pass":
                problems.append(f"{name}: required, but {outcomes.get(name, 'did not run')}")
    where = result.out_dir  # type: ignore[attr-defined]
    assert not problems, f"{side} {label} (results in {where}):\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("label", runner.LABELS)
def test_server_side(server_url: str, results_dir: Path, label: str) -> None:
    result = runner.run_suite(runner.Run("server", label), results_dir, server_url=server_url)
    _check(result, "server", label)


@pytest.mark.parametrize("label", runner.LABELS)
def test_client_side(suite_ready: None, results_dir: Path, label: str) -> None:
    result = runner.run_suite(runner.Run("client", label), results_dir)
    _check(result, "client", label)


def test_client_auth_scenarios_on_asyncio(suite_ready: None, results_dir: Path) -> None:
    """Every ``auth/*`` client scenario with the client on asyncio, and ``sse-retry``
    (a stream resumed after the server's ``retry`` delay, with ``Last-Event-ID``),
    which exercises the asyncio client's own GET and timer paths; the Trio runs above
    cover the rest."""
    result = runner.run_suite(runner.Run("client", "all", "asyncio"), results_dir)
    auth = [s for s in result.scenarios if s.scenario.startswith("auth/")]
    assert len(auth) == 33, [s.scenario for s in auth]
    checked = [*auth, *(s for s in result.scenarios if s.scenario == "sse-retry")]
    assert len(checked) == 34, [s.scenario for s in result.scenarios]
    problems = [
        f"{s.scenario}: {s.outcome} ({'; '.join(s.failures[:3])})" for s in checked if not s.ok
    ]
    assert not problems, f"results in {result.out_dir}:\n  " + "\n  ".join(problems)


def test_baseline_is_empty() -> None:
    """Authorization (issue 19) and the tasks extension (issue 18) are implemented: every
    scenario must pass, so the baseline lists none (a reason would be required)."""
    baseline = runner.load_baseline()
    assert baseline == {"server": {}, "client": {}}


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_tasks_extension_scenarios(
    suite_ready: None, tmp_path_factory: pytest.TempPathFactory, backend: str
) -> None:
    """Every tasks-* scenario of the suite, one invocation each, against the fixture
    served on ``backend``: each passes (the suite itself skips the notifications one)."""
    names = sorted(n for n in runner.extension_scenarios("server") if n.startswith("tasks-"))
    assert len(names) >= 9, names
    out = tmp_path_factory.mktemp(f"tasks-{backend}")
    outcomes: dict[str, str] = {}
    with runner.fixture_server(out / "fixture-server.log", backend) as url:
        # Each scenario mostly waits (on its polls and the server), and each writes to a
        # directory of its own: they run side by side.
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(
                pool.map(
                    lambda name: runner.run_suite(
                        runner.Run("server", "all", scenario=name), out, server_url=url
                    ),
                    names,
                )
            )
    for result in results:
        _check(result, "server", "all")
        outcomes.update({s.scenario: s.outcome for s in result.scenarios})
    passed = {n for n, outcome in outcomes.items() if outcome == "pass"}
    assert set(names) - passed <= {"tasks-status-notifications"}, outcomes
