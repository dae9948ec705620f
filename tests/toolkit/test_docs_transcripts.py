"""The transcripts in docs/testing-servers.md cannot go stale: each documented
command is run for real and the transcript's stable lines (the findings table,
the verdict, the findings' headings, a finding in full, a replay) are checked
against what it prints; only timing figures, check counts and paths may differ."""

from __future__ import annotations

import difflib
import re
import shlex
import subprocess
import sys
from pathlib import Path

from .conftest import REPO

DOC = REPO / "docs" / "testing-servers.md"
CLI = [sys.executable, "-m", "sansio_mcp_cli"]
SECTION = "## A real report: the many-defects server"


def blocks() -> list[list[str]]:
    """The fenced blocks of the many-defects section, as lines."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    found = re.findall(r"^(`{3,4})\n(.*?)^\1$", section, flags=re.S | re.M)
    return [body.splitlines() for _, body in found]


def command(lines: list[str]) -> list[str]:
    """The ``$ sansio-mcp …`` command a block starts with, made runnable here."""
    text = ""
    for line in lines:
        text += line.removeprefix("$ ").rstrip("\\").rstrip() + " "
        if not line.endswith("\\"):
            break
    words = shlex.split(text)
    assert words[0] == "sansio-mcp", words
    words = [*CLI, *words[1:]]
    return [sys.executable if w == "python" else str(REPO / w) if w.startswith("tests/") else w
            for w in words]  # fmt: skip


#: The defective server's answer to a notification: when it lands in a transcript
#: depends on timing (before or after the transcript starts), not on the code.
_RACY = re.compile(r'^< \{"jsonrpc": "2.0", "id": null')


def stable(line: str) -> str:
    """A line with what differs from run to run (durations, check counts) blanked."""
    line = re.sub(r"\d+ checks", "N checks", line)
    return re.sub(r"\d+(\.\d+)?s$", "Ts", line)


def same(documented: list[str], real: list[str]) -> None:
    want = [stable(x) for x in documented if not _RACY.match(x)]
    got = [stable(x) for x in real if not _RACY.match(x)]
    assert want == got, "docs/testing-servers.md is stale:\n" + "\n".join(
        difflib.unified_diff(want, got, "documented", "real", lineterm="")
    )


def test_the_many_defects_transcripts_are_what_the_commands_print(tmp_path: Path) -> None:
    run_block, headings_block, finding_block, replay_block = blocks()[:4]
    done = subprocess.run(
        command(run_block), capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr[-3000:]
    stderr = done.stderr.splitlines()
    # The findings table and the verdict, as they end stderr.
    table = [line for line in run_block if line.startswith(("|", "VIOLATIONS", "OK"))]
    same(table, stderr[-len(table) :])
    # The findings' headings, as the Markdown report lists them.
    same(headings_block, [line for line in done.stdout.splitlines() if line.startswith("### ")])
    # One finding in full (its replay line names this machine's paths: left out).
    body = done.stdout.splitlines()
    start = body.index(finding_block[0])
    end = next(i for i in range(start, len(body)) if body[i].startswith("Replay: "))
    same(finding_block[:-1], body[start:end])
    # The replay: its first line on stderr, the rest on stdout.
    replayed = subprocess.run(
        command(replay_block), capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    same(replay_block[1:], replayed.stderr.splitlines()[-1:] + replayed.stdout.splitlines())
