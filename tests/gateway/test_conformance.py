"""The official conformance server suite against the gateway (each backend), with
conformance/gateway-baseline.yml: every scenario outside it passes, no entry in it
passes, and every entry gives its reason (a few seconds per backend); and the same
against each virtual MCP endpoint (``/mcp/alpha``, ``/mcp/beta``) of a gateway serving
two, with the same baseline (20-45 s per backend on 2 busy cores)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import BACKENDS, REPO

pytestmark = pytest.mark.interop


def _load(name: str) -> ModuleType:
    # conformance/ is a folder of scripts: load by path (it imports its neighbour run.py).
    path = REPO / "conformance" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"conformance_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


gateway_runner = _load("gateway")


def test_every_baseline_entry_gives_its_reason() -> None:
    baseline = gateway_runner.load_baseline(gateway_runner.GATEWAY_BASELINE)
    assert baseline["server"] and not baseline["client"]
    for name, reason in baseline["server"].items():
        assert reason and reason != "in the baseline", f"{name} has no reason"


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_suite_against_the_gateway(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if gateway_runner.missing_prerequisites() is not None:
        pytest.skip(gateway_runner.missing_prerequisites())
    status = gateway_runner.main(["--backend", backend, "--out", str(tmp_path)])
    report = capsys.readouterr().out
    assert status == 0, report
    assert " pass" in report


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_suite_against_each_virtual_mcp(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every virtual MCP endpoint passes what ``/mcp`` passes: the runner checks first
    that each lists only its own connector's tools, then runs the suite at each."""
    if gateway_runner.missing_prerequisites() is not None:
        pytest.skip(gateway_runner.missing_prerequisites())
    status = gateway_runner.main(["--backend", backend, "--virtual", "--out", str(tmp_path)])
    report = capsys.readouterr().out
    assert status == 0, report
    passed = {}
    for vid in gateway_runner.VIRTUAL_MCPS:
        summary = report.partition(f"/mcp/{vid}:\n")[2].partition("\n")[0]
        assert summary.startswith("server-all") and " ok " in summary, report
        table = (tmp_path / backend / vid / "results.md").read_text(encoding="utf-8")
        passed[vid] = set(re.findall(r"^\| `(\S+)` \| pass ", table, re.MULTILINE))
    first, *others = passed.values()
    assert {"tools-list", "ping", "http-header-validation"} <= first, passed
    assert all(other == first for other in others), passed
