"""Regressions found by running the checker against real-world servers
(server-everything, server-filesystem, an SDK server), each reproduced with a
real subprocess server (``real_world_server.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from sansio_mcp_testing.checker import CheckOptions, check_server

from .conftest import HERE, REPO

REAL_WORLD = [sys.executable, str(HERE / "real_world_server.py")]
CLI = [sys.executable, "-m", "sansio_mcp_cli", "check", "-q"]
THREE_REVISIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]
INSTRUCTIONS = "Use the echo tool to echo. " * 400  # real_world_server.py's


async def test_schema_findings_across_revisions_stay_with_their_connection(
    schema_dir: str,
) -> None:
    # Each connection numbers its lines from zero: a schema finding of the first
    # revision looked up in the next one's recorder crashed the stateful run.
    report = await check_server(
        REAL_WORLD,
        CheckOptions(
            seed=1,
            timeout=3.0,
            schema_dir=schema_dir,
            protocol_versions=THREE_REVISIONS,
            properties=["initialize", "schema", "valid-arguments", "stateful"],
        ),
    )
    assert report.revisions_checked == THREE_REVISIONS[::-1]
    [stateful] = report.by_property("stateful")
    assert "schema-invalid" in stateful.message
    assert '"no type"' in stateful.details["line"]
    # One finding at three revisions is one entry, the revisions listed.
    assert stateful.revisions == THREE_REVISIONS[::-1]
    [schema] = report.by_property("schema")
    assert schema.revisions == THREE_REVISIONS[::-1]
    assert "2025-11-25, 2025-06-18, 2025-03-26 (the transcript is from 2025-11-25)" in (
        report.to_markdown()
    )
    # The server's long instructions are cut in transcripts, their length said.
    initialize_answer = schema.transcript[1]
    assert len(initialize_answer) < 600
    assert f"… ({len(INSTRUCTIONS)} characters)" in initialize_answer
    # A schema finding is replayable: the handshake, the call, the invalid answer.
    replay = "\n".join(schema.replay_lines()) + "\n"
    done = subprocess.run(REAL_WORLD, input=replay, capture_output=True, text=True, timeout=20)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[-1]["result"] == {"content": [{"text": "no type"}]}


def test_a_huge_answer_is_reported_as_over_the_size_limit_quickly(
    tmp_path: Path, schema_dir: str
) -> None:
    # A 100 MB answer: the recorder once re-split its whole buffer on every chunk
    # (quadratic), so the check ran for many minutes while the server's unread
    # output grew; the answer is dropped by the 8 MiB limit, and must be reported so.
    report_path = tmp_path / "report.json"
    started = time.monotonic()
    done = subprocess.run(
        [
            *CLI,
            "--examples",
            "3",
            "--timeout",
            # Reading 100 MB takes a while on a loaded machine: the point is the size.
            "30",
            "--seed",
            "2",
            "--schema-dir",
            schema_dir,
            "--protocol-version",
            "2025-06-18",
            "--report-json",
            str(report_path),
            "--",
            *REAL_WORLD,
            "big",
            str(100 << 20),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
    )
    elapsed = time.monotonic() - started
    assert elapsed < 90, elapsed
    data = json.loads(report_path.read_text())
    [big] = [v for v in data["violations"] if v["tool"] == "big"]
    assert big["property"] == "responsive" and big["severity"] == "warning"
    assert big["message"] == (
        "tools/call big: the server answered with a message of 100 MiB, over the client's "
        "8 MiB (8388608-byte) message size limit, so the client could not take it"
    )
    assert "legitimately" not in done.stdout
    # The transcript keeps the beginning of the huge line, and its size.
    [huge] = [line for line in big["transcript"] if "over the 8388608-byte limit" in line]
    assert huge.startswith('< {"jsonrpc": "2.0"') and len(huge) < 1000


def test_recorder_splits_lines_whatever_the_chunking() -> None:
    from sansio_mcp_testing._recorder import Recorder

    stream = b'{"a":1}\r\n\n{"b":' + b"2}\n" + b'{"c":"' + b"x" * 100 + b'"}\r\n{"d":4}'
    for size in (7, 1, 64):
        recorder = Recorder("2025-06-18", max_message_size=50)
        for i in range(0, len(stream), size):
            recorder.received_bytes(stream[i : i + size])
        recorder.received_bytes(b"")  # the end of the output: the last line counts
        assert [line.obj for line in recorder.lines] == [{"a": 1}, {"b": 2}, None, {"d": 4}]
        oversized = recorder.lines[2]
        assert oversized.oversized and oversized.size == 108  # the CRLF does not count
        assert oversized.text.startswith('{"c":"xxxx')
    assert oversized.text.endswith("(108 bytes, over the 50-byte limit)")
    assert "a message of 108 bytes, over the client's 50-byte message size limit" in str(
        recorder.dropped_since(0)
    )
    assert recorder.dropped_since(3) is None


async def test_a_server_dying_mid_run_is_explained(schema_dir: str) -> None:
    progress: list[str] = []
    report = await check_server(
        [*REAL_WORLD, "crash"],
        CheckOptions(
            examples=2,
            timeout=3.0,
            seed=1,
            schema_dir=schema_dir,
            protocol_versions=["2025-06-18"],
            progress=progress.append,
        ),
    )
    # Found by valid-arguments (its smallest call), then again by the stateful run on
    # the restarted server: the run goes on after a crash.
    death, again = report.by_property("survival")
    assert death.tool == "crash" and death.details["arguments"] == {}
    assert "died during the stateful run" in again.message
    assert "died during tools/call crash" in death.message
    # The exit status and the last stderr lines, in the message itself (not only -v).
    assert "exit status 7; its stderr ended: " in death.message
    assert "crash: state is corrupt | crash: giving up" in death.message
    assert death.details["exit_status"] == 7
    assert death.message in report.to_markdown()
    assert f"  ! survival: {death.message}" in progress


async def test_a_server_dying_at_start_is_explained(schema_dir: str) -> None:
    report = await check_server(
        [*REAL_WORLD, "dead"],
        CheckOptions(seed=1, timeout=3.0, schema_dir=schema_dir),
    )
    [failure] = report.by_property("initialize")
    assert "the server exited before answering initialize (exit status 4" in failure.message
    assert "dead: no configuration found" in failure.message
    # Every revision says why, never a session-state error.
    for skip in report.skipped:
        assert "exited before answering" in skip.reason, skip
        assert "CLOSED" not in skip.reason


async def test_a_stdio_only_property_over_http_is_skipped_with_its_reason(schema_dir: str) -> None:
    import trio

    from sansio_mcp_apps.example_server import build_server
    from trio_adapters.http_server import serve_http

    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_http, build_server())
        report = await check_server(
            f"http://127.0.0.1:{port}/mcp",
            CheckOptions(
                timeout=3.0,
                schema_dir=schema_dir,
                protocol_versions=["2025-06-18"],
                properties=["initialize", "malformed-jsonrpc", "unknown-method"],
            ),
        )
        nursery.cancel_scope.cancel()
    assert report.revisions_checked == ["2025-06-18"], report.to_markdown()
    malformed = report.properties["malformed-jsonrpc"]
    assert (malformed.status, malformed.checks) == ("skipped", 0)
    assert malformed.reason == "raw malformed lines are only sent over stdio"
    assert "| malformed-jsonrpc | skipped | 0 | raw malformed lines" in report.to_markdown()
    assert report.properties["unknown-method"].status == "passed"


def test_inspect_says_the_server_does_not_speak_the_revision_asked_for() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sansio_mcp_cli",
            "inspect",
            "--timeout",
            "5",
            "--protocol-version",
            "2026-07-28",
            "--",
            *REAL_WORLD,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "sansio-mcp inspect: the server does not speak 2026-07-28 (it answered "
        'server/discover with -32601 "Method not found: server/discover"); it speaks 2025-11-25'
    )


async def test_check_says_which_revisions_the_server_speaks_instead(schema_dir: str) -> None:
    report = await check_server(
        REAL_WORLD,
        CheckOptions(
            timeout=3.0,
            schema_dir=schema_dir,
            protocol_versions=["2026-07-28", "2025-06-18"],
            properties=["initialize"],
        ),
    )
    [refused] = [s for s in report.skipped if s.what == "revision 2026-07-28"]
    assert refused.reason == (
        "not claimed: the server does not speak 2026-07-28 (it answered server/discover "
        'with -32601 "Method not found: server/discover"); it speaks 2025-06-18'
    )


def test_an_http_refusal_is_said_with_its_status_and_message() -> None:
    from sansio_mcp._errors import HTTPStatusError, MCPError
    from sansio_mcp._refusals import describe_answer

    body = (
        '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"}}'
    )
    error = HTTPStatusError(-3, f"HTTP 400: {body}", {"status": 400, "body": body})
    assert describe_answer(error) == 'HTTP 400 "Bad Request: Server not initialized"'
    plain = HTTPStatusError(-3, "HTTP 405", {"status": 405, "body": "not allowed"})
    assert describe_answer(plain) == 'HTTP 405 "not allowed"'
    assert describe_answer(MCPError(-32601, "Method not found")) == '-32601 "Method not found"'


def test_the_same_skip_at_several_revisions_is_listed_once() -> None:
    from sansio_mcp_testing.report import Report, Skip

    reason = "the schema accepts every object: no invalid arguments can be made"
    report = Report(
        target="server",
        seed=1,
        skipped=[
            Skip("tool get-env: invalid arguments", reason, "2025-11-25"),
            Skip("revision 2026-07-28", "not claimed: ...", "2026-07-28"),
            Skip("tool get-env: invalid arguments", reason, "2025-06-18"),
        ],
    )
    skipped = report.to_markdown().split("## Skipped")[1].strip().splitlines()
    assert skipped == [
        f"- tool get-env: invalid arguments (2025-11-25, 2025-06-18): {reason}",
        "- revision 2026-07-28: not claimed: ...",
    ]
