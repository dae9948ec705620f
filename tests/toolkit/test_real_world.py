"""Regressions found by running the checker against real-world servers
(server-everything, server-filesystem, an SDK server), each reproduced with a
real subprocess server (``real_world_server.py``)."""

from __future__ import annotations

import sys

from sansio_mcp_testing.checker import CheckOptions, check_server

from .conftest import HERE

REAL_WORLD = [sys.executable, str(HERE / "real_world_server.py")]
THREE_REVISIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]


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
    stateful = report.by_property("stateful")
    assert stateful, report.to_markdown()
    for violation in stateful:
        assert "schema-invalid" in violation.message
        assert '"no type"' in violation.details["line"]
