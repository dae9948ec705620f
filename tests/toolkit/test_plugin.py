"""The pytest plugin (registered by the package's pytest11 entry point): the
fixture and the --mcp-check option, each in a pytest run of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .conftest import BROKEN_SERVER, EXAMPLE_SERVER, REPO


def _pytest(tmp_path: Path, *args: str, env_schema: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "MCP_SCHEMA_DIR": env_schema}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )


def _counts(output: str) -> dict[str, int]:
    last = output.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped)", last)}


def test_fixture(tmp_path: Path, schema_dir: str) -> None:
    (tmp_path / "test_mine.py").write_text(
        f"""
def test_my_server(mcp_server_checker):
    report = mcp_server_checker(
        {EXAMPLE_SERVER!r}, examples=3, timeout=3, deny=["slow"],
        protocol_versions=["2025-06-18"],
    )
    report.assert_clean()
    assert report.revisions_checked == ["2025-06-18"]
""",
        encoding="utf-8",
    )
    done = _pytest(tmp_path, env_schema=schema_dir)
    assert _counts(done.stdout) == {"passed": 1}, done.stdout[-3000:] + done.stderr[-2000:]


def test_option_makes_a_test_per_property(tmp_path: Path, schema_dir: str) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    command = " ".join(BROKEN_SERVER)
    done = _pytest(
        tmp_path,
        "--mcp-check",
        command,
        "--mcp-check-examples",
        "3",
        "--mcp-check-timeout",
        "2",
        "--mcp-check-seed",
        "9",
        "-rA",
        env_schema=schema_dir,
    )
    out = done.stdout
    # 13 properties: the broken server fails all but initialize, tool-schemas, listings
    # and wire
    assert _counts(out) == {"passed": 5, "failed": 9}, out[-3000:] + done.stderr[-2000:]
    assert "mcp-check::valid-arguments" in out and "division by zero" in out
    assert "mcp-check::stateful" in out
    assert REPO.is_dir()


def test_option_takes_the_safety_options(tmp_path: Path, schema_dir: str) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    done = _pytest(
        tmp_path,
        "--mcp-check",
        " ".join(BROKEN_SERVER),
        "--mcp-check-examples",
        "3",
        "--mcp-check-timeout",
        "2",
        "--mcp-check-seed",
        "9",
        "--mcp-check-deny",
        "divide",
        "--mcp-check-schema-dir",
        schema_dir,
        "-rA",
        env_schema=str(tmp_path / "nowhere"),
    )
    out = done.stdout
    assert "mcp-check::valid-arguments" in out, out[-3000:] + done.stderr[-2000:]
    assert "division by zero" not in out  # divide was never called
    assert "schema was not found" not in out  # the schemas came from --mcp-check-schema-dir
