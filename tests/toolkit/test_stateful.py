"""The stateful property: a rule-based state machine over one live session."""

from __future__ import annotations

import json

from sansio_mcp_testing.checker import CheckOptions, check_server
from sansio_mcp_testing.report import Report

from .conftest import BROKEN_SERVER, EXAMPLE_SERVER

_PROPS = ["initialize", "schema", "stateful", "responsive", "survival"]


async def _check(command: list[str], schema_dir: str, **options: object) -> Report:
    defaults: dict[str, object] = {
        "timeout": 1.5,
        "seed": 11,
        "schema_dir": schema_dir,
        "properties": _PROPS,
    }
    defaults.update(options)
    return await check_server(command, CheckOptions(**defaults))  # type: ignore[arg-type]


async def test_example_server_is_clean(schema_dir: str) -> None:
    report = await _check(
        EXAMPLE_SERVER,
        schema_dir,
        timeout=3.0,
        protocol_versions=["2024-11-05", "2025-11-25", "2026-07-28"],
        deny=["slow"],
    )
    assert report.revisions_checked == ["2026-07-28", "2025-11-25", "2024-11-05"]
    assert report.violations == [], report.to_markdown()
    assert report.properties["stateful"].status == "passed"
    assert report.properties["stateful"].checks > 30
    assert {s.what for s in report.skipped} == {"tool slow"}


async def test_list_drifting_without_list_changed_is_caught(schema_dir: str) -> None:
    report = await _check(
        [*BROKEN_SERVER, "drifting-list"], schema_dir, protocol_versions=["2025-06-18"]
    )
    [violation] = report.by_property("stateful")
    assert "tools/list gave a different list" in violation.message
    assert "notifications/tools/list_changed" in violation.message
    # shrunk: the handshake, the baseline walks (tools, prompts), one more tools/list
    sent = [json.loads(line[2:]) for line in violation.transcript if line.startswith(">")]
    assert [m.get("method") for m in sent[2:]] == ["tools/list", "prompts/list", "tools/list"]
    assert len(violation.transcript) == 9
    assert violation.seed == 11


async def test_request_after_cancellation_never_answered_is_caught(schema_dir: str) -> None:
    report = await _check(
        [*BROKEN_SERVER, "deaf-after-cancel"],
        schema_dir,
        protocol_versions=["2025-06-18"],
        seed=1,
    )
    [violation] = report.by_property("stateful")
    assert "after cancelling tools/call echo got no answer" in violation.message
    methods = [
        json.loads(line[2:]).get("method")
        for line in violation.transcript[3:]
        if line.startswith(">")
    ]
    # A deaf server fails every later sequence at once, so shrinking cannot help:
    # the sequence that first failed is reported; it ends with the call, its
    # cancellation and the unanswered ping (cancelled in turn when it timed out).
    assert methods[-4:] == [
        "tools/call",
        "notifications/cancelled",
        "ping",
        "notifications/cancelled",
    ]
    assert "first one seen" in violation.details["note"]


async def test_respects_safety_settings(schema_dir: str) -> None:
    report = await _check(
        BROKEN_SERVER,
        schema_dir,
        protocol_versions=["2025-06-18"],
        properties=["initialize", "stateful"],
    )
    assert "destructiveHint" in {s.what: s.reason for s in report.skipped}["tool wipe"]
    assert report.properties["stateful"].checks > 0
    assert not any('"name":"wipe"' in line for v in report.violations for line in v.transcript)
