"""Each deliberately defective server (tests/toolkit/defective_server.py) is caught
by ONE run of the checker, run as a user runs it (the CLI, a subprocess) and read
from its JSON report; the server with every defect at once too, and its findings
replay; the pytest plugin runs the same checks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .conftest import HERE, REPO
from .defective_server import DEFECTS
from .test_plugin import _pytest

DEFECTIVE = [sys.executable, str(HERE / "defective_server.py")]

#: mode -> (kind, a phrase of its message, tool or None)
EXPECTED: dict[str, tuple[str, str, str | None]] = {
    "no-server-info": ("schema", "'serverInfo' is a required property", None),
    "string-input-schema": ("tool-schemas", "inputSchema of tool 'spell'", "spell"),
    "array-output-schema": ("tool-schemas", "outputSchema of tool 'table'", "table"),
    "duplicate-tools": ("listings", "tools/list lists name 'echo' more than once", None),
    "endless-pages": ("pagination", "resources/list did not end after 100 pages", None),
    "looping-cursor": ("pagination", "prompts/list returned cursor 'a' twice", None),
    "bad-uri": ("listings", "uri 'not a uri' is malformed: no scheme", None),
    "bad-template": ("listings", "uriTemplate 'file:///{path' is malformed", None),
    "unknown-content": ("valid-arguments", "has type 'video', not a content type", "film"),
    "structured-mismatch": ("valid-arguments", "structuredContent does not match", "table"),
    "crash-on-call": ("survival", "the server died during tools/call explode", "explode"),
    "close-output": ("survival", "died during tools/call hangup (it closed its output", "hangup"),
    "stall": ("responsive", "tools/call stall: no answer within 1.0s", "stall"),
    "internal-error": ("invalid-arguments", "got error -32603 (internal error)", "echo"),
    "unknown-method-ok": ("unknown-method", "an unknown method got a result", None),
    "answers-notifications": ("wire", "got an answer (a notification is never answered)", None),
    "wrong-version": ("wire", 'a message with jsonrpc "1.0"', None),
    "stray-id": ("wire", "a response with id 9999, which matches no request", None),
    "false-refusal": ("valid-arguments", "got a protocol error -32021", "draw"),
}


def check(
    tmp_path: Path,
    schema_dir: str,
    *server: str,
    revision: str | None = None,
    options: Sequence[str] = (),
) -> Any:
    """Run ``sansio-mcp check`` on ``server`` (with ``options``); its JSON report."""
    report = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "sansio_mcp_cli",
        "check",
        "--examples",
        "4",
        "--timeout",
        "1",
        "--seed",
        "1",
        "--schema-dir",
        schema_dir,
        "--report",
        str(report),
        *(["--protocol-version", revision] if revision else []),
        *options,
        "--",
        *server,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    data = json.loads(report.read_text())
    data["stderr"] = done.stderr
    return data


def found(data: Any, kind: str, phrase: str) -> dict[str, Any]:
    hits = [v for v in data["violations"] if v["property"] == kind and phrase in v["message"]]
    assert hits, f"no {kind} finding with {phrase!r}: " + json.dumps(
        [(v["property"], v["message"]) for v in data["violations"]], indent=1
    )
    return hits[0]


def test_every_defect_has_an_expectation() -> None:
    assert set(EXPECTED) == set(DEFECTS)


def test_the_well_behaved_mode_is_clean(tmp_path: Path, schema_dir: str) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, revision="2025-06-18")
    assert data["violations"] == [], data["violations"]
    assert data["properties"]["listings"]["checks"] == 5  # two tools, a prompt, resource, template
    assert data["properties"]["wire"]["status"] == "passed"
    # browse refuses with -32021 for URL elicitation, which 2025-06-18 cannot declare.
    refused = [s for s in data["skipped"] if s["what"].startswith("tool browse")]
    assert refused, data["skipped"]
    assert 'needs client capability {"elicitation": {"url": {}}}' in refused[0]["reason"]


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_one_defect_one_run(mode: str, tmp_path: Path, schema_dir: str) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, mode, revision="2025-06-18")
    kind, phrase, tool = EXPECTED[mode]
    finding = found(data, kind, phrase)
    assert finding["tool"] == tool
    assert data["revisions_checked"] == ["2025-06-18"]
    # the run went on to the end: the last property ran
    assert data["properties"]["malformed-jsonrpc"]["checks"] == 7, data["stderr"][-2000:]


def test_a_crash_is_shrunk_and_the_run_goes_on(tmp_path: Path, schema_dir: str) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, "crash-on-call", revision="2025-06-18")
    crash = found(data, "survival", "the server died during tools/call explode")
    assert crash["details"]["arguments"] == {"n": 101}  # the smallest n that kills it
    assert crash["details"]["exit_status"] == 7
    assert "explode: 101 is too many" in crash["details"]["stderr"]
    assert "exit status 7" in crash["message"]
    calls = [line for line in crash["transcript"] if '"tools/call"' in line]
    assert len(calls) == 1 and '"n":101' in calls[0]
    # restarted: the properties after the crash still checked the server
    assert data["properties"]["invalid-arguments"]["checks"] > 0
    assert data["properties"]["unknown-method"]["status"] == "passed"


def test_many_defects_in_one_run(tmp_path: Path, schema_dir: str) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, "many")
    for mode, (kind, phrase, tool) in EXPECTED.items():
        assert found(data, kind, phrase)["tool"] == tool, mode
    # lenient: the initialize result without serverInfo did not stop the run, and
    # every revision was tried (the server speaks only 2025-06-18)
    assert data["revisions_checked"] == ["2025-06-18"]
    tried = {s["what"] for s in data["skipped"] if s["what"].startswith("revision ")}
    assert tried == {
        f"revision {r}" for r in ("2026-07-28", "2025-11-25", "2025-03-26", "2024-11-05")
    }
    # the summary table on stderr and in the JSON agree with the findings
    assert "| kind | errors | warnings |" in data["stderr"]
    assert data["findings_by_kind"]["wire"]["error"] == 4  # two notifications, id, version
    # every finding is replayable: its number and command are in the report
    for number, violation in enumerate(data["violations"], 1):
        assert violation["number"] == number
        assert violation["replay"].startswith(f"sansio-mcp check --replay {tmp_path}")


def test_replay_resends_a_finding(tmp_path: Path, schema_dir: str) -> None:
    data = check(tmp_path, schema_dir, *DEFECTIVE, "crash-on-call", revision="2025-06-18")
    crash = found(data, "survival", "the server died during tools/call explode")
    number = data["violations"].index(crash) + 1
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sansio_mcp_cli",
            "check",
            "--timeout",
            "2",
            "--replay",
            f"{tmp_path / 'report.json'}#{number}",
            "--",
            *DEFECTIVE,
            "crash-on-call",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("> ") and '"initialize"' in lines[0]
    assert lines[1].startswith("< ") and json.loads(lines[1][2:])["result"]["serverInfo"]
    assert any('"n":101' in line for line in lines if line.startswith("> "))
    assert lines[-1].startswith("! the server exited with status 7")
    assert "explode: 101 is too many" in lines[-1]
    # a finding that does not exist is a precise error
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "sansio_mcp_cli",
            "check",
            "--replay",
            f"{tmp_path / 'report.json'}#999",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert bad.returncode == 2 and "has no finding 999" in bad.stderr


def test_the_plugin_runs_the_same_checks(tmp_path: Path, schema_dir: str) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    done = _pytest(
        tmp_path,
        "--mcp-check",
        " ".join([*DEFECTIVE, "duplicate-tools,stray-id,crash-on-call"]),
        "--mcp-check-examples",
        "4",
        "--mcp-check-timeout",
        "1",
        "--mcp-check-seed",
        "1",
        "--mcp-check-protocol-version",
        "2025-06-18",
        "-rA",
        env_schema=schema_dir,
    )
    out = done.stdout
    for prop in ("listings", "wire", "survival"):
        assert f"FAILED ::mcp-check::{prop}" in out, out[-3000:]
    assert "more than once" in out and "id 9999" in out and '{"n": 101}' in out
