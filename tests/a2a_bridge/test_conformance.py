"""The official MCP conformance suite's server checks against the A2A bridge, with its
baseline (conformance/a2a-bridge-baseline.yml): every scenario outside the baseline
passes, and no baseline entry passes (a stale entry fails the run).  About 15 s."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "conformance" / "a2a_bridge.py"

pytestmark = pytest.mark.interop


def test_bridge_conformance(tmp_path: Path) -> None:
    if not (REPO / "node_modules" / ".bin" / "node").exists():
        pytest.skip("the conformance suite needs the Node 22 of node_modules (npm ci)")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("server-")]
    assert len(lines) == 2 and all(" ok " in line for line in lines), done.stdout
    table = (tmp_path / "results.md").read_text()
    for scenario in ("tools-list", "dns-rebinding-protection", "server-initialize"):
        assert f"| `{scenario}` | pass" in table, scenario
