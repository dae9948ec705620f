"""The official conformance server suite against the gateway (each backend), with
conformance/gateway-baseline.yml: every scenario outside it passes, no entry in it
passes, and every entry gives its reason (a few seconds per backend)."""

from __future__ import annotations

import importlib.util
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
