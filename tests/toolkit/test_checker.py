"""The checker: every planted defect of the broken server is caught with a minimal
transcript; our example server comes out clean; server-everything's findings are
the known ones (docs/testing-servers.md); safety defaults hold."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from sansio_mcp._versions import ALL_REVISIONS
from sansio_mcp_testing.checker import CheckOptions, check_server
from sansio_mcp_testing.report import Report

from .conftest import BROKEN_SERVER, EXAMPLE_SERVER, REPO


@pytest.fixture(scope="module")
def broken_report(schema_dir: str) -> Report:
    import trio

    return trio.run(
        check_server,
        BROKEN_SERVER,
        CheckOptions(examples=8, timeout=2.0, seed=1234, schema_dir=schema_dir),
    )


def _one(report: Report, prop: str, needle: str):  # type: ignore[no-untyped-def]
    found = [v for v in report.by_property(prop) if needle in v.message]
    assert found, f"no {prop} violation mentioning {needle!r}: {report.to_markdown()}"
    return found[0]


def test_broken_server_every_defect_is_caught(broken_report: Report) -> None:
    r = broken_report
    assert r.revisions_checked == ["2025-06-18"]
    assert not r.ok
    # 1. a protocol error for a valid call, shrunk to the minimal arguments
    divide = _one(r, "valid-arguments", "protocol error -32603")
    assert divide.tool == "divide" and divide.details["arguments"] == {"a": 0, "b": 0}
    # 2. a schema-invalid result
    _one(r, "schema", "CallToolResult")
    # 3. invalid arguments accepted
    assert _one(r, "invalid-arguments", "accepted").tool == "lenient"
    # 4. unstable cursor
    _one(r, "pagination", "different page")
    # 5. wrong code for an unknown method
    _one(r, "unknown-method", "-32600, not -32601")
    # 6. a request never answered
    _one(r, "responsive", "prompts/list")
    # 7. wrong code for malformed JSON-RPC
    _one(r, "malformed-jsonrpc", "a JSON string: error -32700, expected -32600")
    # 8. a crash on malformed input
    crash = _one(r, "survival", "died during malformed input (not JSON)")
    assert crash.details["exit_status"] == 3
    assert any("cannot parse" in line for line in crash.details["stderr"])
    # and the stateful run meets the unanswered prompts/list too (its baseline walk)
    _one(r, "stateful", "prompts/list got no answer")


def test_transcripts_are_minimal_and_replayable(broken_report: Report) -> None:
    divide = _one(broken_report, "valid-arguments", "protocol error")
    lines = divide.transcript
    # handshake (3 lines), the failing call, its answer: nothing else
    assert [line[0] for line in lines] == [">", "<", ">", ">", "<"], lines
    call = json.loads(lines[3][2:])
    assert call["method"] == "tools/call" and call["params"]["arguments"] == {"a": 0, "b": 0}
    assert json.loads(lines[4][2:])["error"]["code"] == -32603
    assert divide.seed == 1234
    # Replaying the ">" lines into a fresh server reproduces the error.
    replay = "\n".join(divide.replay_lines()) + "\n"
    done = subprocess.run(BROKEN_SERVER, input=replay, capture_output=True, text=True, timeout=20)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[-1]["error"]["code"] == -32603


def test_destructive_tool_is_skipped_by_default(broken_report: Report) -> None:
    skipped = {s.what: s.reason for s in broken_report.skipped}
    assert "destructiveHint" in skipped["tool wipe"]
    # and it was never called (calling it would exit the server)
    assert not any(
        '"name":"wipe"' in line for v in broken_report.violations for line in v.transcript
    )


def test_reports_render(broken_report: Report) -> None:
    data = json.loads(broken_report.to_json())
    assert data["ok"] is False and data["summary"]["errors"] == len(broken_report.errors)
    markdown = broken_report.to_markdown()
    assert "## Violations" in markdown and "```" in markdown and "## Skipped" in markdown
    assert "<pre>" in broken_report.to_html()


async def test_example_server_is_clean(schema_dir: str) -> None:
    report = await check_server(
        EXAMPLE_SERVER,
        CheckOptions(
            examples=5,
            # Only a hang may reach it: 3 s was once too short on a loaded 2-core run.
            timeout=10.0,
            seed=7,
            schema_dir=schema_dir,
            deny=["slow"],  # sleeps as long as asked: a legitimate tool, not a defect
        ),
    )
    # every revision the library knows, the new properties included
    assert report.revisions_checked == sorted(ALL_REVISIONS, reverse=True)
    for prop in ("listings", "wire"):
        assert report.properties[prop].status == "passed", report.to_markdown()
    assert report.violations == [], report.to_markdown()
    assert report.properties["valid-arguments"].checks > 20
    assert report.properties["malformed-jsonrpc"].checks == 7 * len(ALL_REVISIONS)
    # a task-only tool is skipped, with the reason, rather than called without the extension
    task_only = [s for s in report.skipped if s.what == "tool approve_job"]
    assert task_only and all("only runs as a task" in s.reason for s in task_only)


#: What the checker finds in server-everything (see docs/testing-servers.md).
EVERYTHING_FINDINGS = {
    ("malformed-jsonrpc", "error"),  # the TS SDK answers no malformed input at all
    ("schema", "error"),  # an elicitation with an enum schema its revision lacks
    ("pagination", "warning"),  # bogus cursors accepted
    ("responsive", "warning"),  # trigger-long-running-operation outlasts the timeout
}


async def test_server_everything_findings(everything_command: list[str], schema_dir: str) -> None:
    report = await check_server(
        everything_command,
        CheckOptions(
            examples=4,
            timeout=3.0,
            seed=3,
            schema_dir=schema_dir,
            protocol_versions=["2025-06-18"],
        ),
    )
    assert report.revisions_checked == ["2025-06-18"]
    found = Counter((v.property, v.severity) for v in report.violations)
    assert set(found) <= EVERYTHING_FINDINGS, report.to_markdown()
    assert found[("malformed-jsonrpc", "error")] == 7
    for prop in (
        "valid-arguments",
        "invalid-arguments",
        "unknown-method",
        "survival",
        "tool-schemas",
        "initialize",
    ):
        assert report.properties[prop].status == "passed", report.to_markdown()
    assert report.properties["valid-arguments"].checks > 20


def test_cli_check_exit_codes_and_reports(tmp_path, schema_dir: str) -> None:  # type: ignore[no-untyped-def]
    base = [
        sys.executable,
        "-m",
        "sansio_mcp_cli",
        "check",
        "--examples",
        "3",
        "--timeout",
        "2",
        "--seed",
        "5",
        "--schema-dir",
        schema_dir,
        "-q",
    ]
    bad = subprocess.run(
        [
            *base,
            "--property",
            "valid-arguments",
            "--report-json",
            str(tmp_path / "r.json"),
            "--report-md",
            str(tmp_path / "r.md"),
            "--",
            *BROKEN_SERVER,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert bad.returncode == 1, bad.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["violations"][0]["details"]["arguments"] == {"a": 0, "b": 0}
    assert "division by zero" in (tmp_path / "r.md").read_text()
    good = subprocess.run(
        [
            *base,
            "--protocol-version",
            "2025-06-18",
            "--deny",
            "slow",
            "fuzz" and "--",
            *EXAMPLE_SERVER,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=REPO,
    )
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-2000:]
    assert "OK: 0 errors" in good.stderr
