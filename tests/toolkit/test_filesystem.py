"""The checker against @modelcontextprotocol/server-filesystem in a temporary
directory, safety defaults on (findings: docs/testing-servers.md)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from sansio_mcp_testing.checker import CheckOptions, check_server

#: What the checker finds in server-filesystem (see docs/testing-servers.md).
FILESYSTEM_FINDINGS = {
    ("malformed-jsonrpc", "error"),  # the TS SDK answers no malformed input at all
    ("pagination", "warning"),  # a bogus cursor is accepted (tools/list is not paginated)
}
DESTRUCTIVE = {"write_file", "edit_file", "move_file"}


async def test_server_filesystem_findings(
    filesystem_server: str, schema_dir: str, tmp_path: Path
) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "keep.txt").write_text("untouched\n")
    node = shutil.which("node")
    assert node is not None
    report = await check_server(
        [node, filesystem_server, str(sandbox)],
        CheckOptions(
            examples=3,
            timeout=5.0,
            seed=3,
            schema_dir=schema_dir,
            protocol_versions=["2025-06-18"],
        ),
    )
    assert report.revisions_checked == ["2025-06-18"], report.to_markdown()
    # Safety defaults: the write/edit/move tools are annotated destructive and skipped.
    skipped = {s.what: s.reason for s in report.skipped}
    for tool in DESTRUCTIVE:
        assert "destructiveHint: true" in skipped[f"tool {tool}"], skipped
    called = {
        line for v in report.violations for line in v.transcript if '"method":"tools/call"' in line
    }
    assert not any(f'"name":"{tool}"' in line for tool in DESTRUCTIVE for line in called)
    assert (sandbox / "keep.txt").read_text() == "untouched\n"
    # The findings are the known ones, and nothing else.
    found = Counter((v.property, v.severity) for v in report.violations)
    assert set(found) <= FILESYSTEM_FINDINGS, report.to_markdown()
    assert found[("malformed-jsonrpc", "error")] == 7
    for prop in (
        "initialize",
        "schema",
        "tool-schemas",
        "valid-arguments",
        "invalid-arguments",
        "unknown-method",
        "stateful",
        "responsive",
        "survival",
    ):
        assert report.properties[prop].status == "passed", report.to_markdown()
    assert report.properties["stateful"].checks > 10
