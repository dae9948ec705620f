"""``sansio-mcp check`` is quick by default and deep with ``--thorough``: the
real command against the bundled server reports its depth, how long it took and
what it skipped for time; revisions run at once yet report in a fixed order.
(Its speed, under 30 s, is measured in docs/testing-servers.md, not timed here.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sansio_mcp import ALL_REVISIONS

CHECK = [sys.executable, "-m", "sansio_mcp_cli", "check", "-q", "--seed", "3"]
SERVER = ["--", sys.executable, "-m", "sansio_mcp_cli", "example-server"]


def check(tmp_path: Path, schema_dir: str, *options: str) -> dict[str, Any]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [*CHECK, "--schema-dir", schema_dir, "--report-json", str(report), *options, *SERVER],
        capture_output=True, text=True, timeout=300, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    data: dict[str, Any] = json.loads(report.read_text())
    data["stdout"] = done.stdout
    return data


def test_the_default_check_is_quick_and_says_what_it_skipped_for_time(
    tmp_path: Path, schema_dir: str
) -> None:
    data = check(tmp_path, schema_dir)
    assert data["options"]["examples"] == 5
    assert data["options"]["call_budget"] == 2.0
    assert isinstance(data["duration_seconds"], float) and data["duration_seconds"] > 0
    assert data["revisions_checked"] == sorted(ALL_REVISIONS, reverse=True)
    # Every property ran.
    assert all(p["status"] == "passed" for p in data["properties"].values()), data["properties"]
    # The slow tool: skipped for time, with the budget, not a responsive warning per revision.
    assert not [v for v in data["violations"] if v.get("tool") == "slow"], data["violations"]
    slow = [s for s in data["skipped"] if s["what"] == "tool slow"]
    assert slow and all("per-call budget of 2s" in s["reason"] for s in slow), data["skipped"]
    # Found at every revision at once, listed newest first, whatever finished first.
    assert [s["revision"] for s in slow] == sorted(ALL_REVISIONS, reverse=True)
    assert "- depth: 5 examples per tool and property" in data["stdout"]
    assert "a tool call over 2s skips its tool for time" in data["stdout"]


def test_thorough_runs_more_examples(tmp_path: Path, schema_dir: str) -> None:
    # One revision, one property, the sleeping tools left out: the counts differ by depth.
    narrow = ("--protocol-version", "2025-06-18", "--property", "valid-arguments",
              "--deny", "slow", "--deny", "long_job")  # fmt: skip
    quick = check(tmp_path, schema_dir, *narrow)
    thorough = check(tmp_path, schema_dir, "--thorough", *narrow)
    assert thorough["options"]["examples"] == 20 and thorough["options"]["call_budget"] is None

    def checks(data: dict[str, Any]) -> int:
        checks: int = data["properties"]["valid-arguments"]["checks"]
        return checks

    assert checks(thorough) > 2 * checks(quick) > 0
