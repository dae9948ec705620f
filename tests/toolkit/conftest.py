"""Shared pieces of the toolkit tests."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from sansio_mcp_testing.schemas import find_schema_dir

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BROKEN_SERVER = [sys.executable, str(HERE / "broken_server.py")]
#: The example server of this checkout (a stdio child gets a minimal environment,
#: so without the path it would run whichever copy the interpreter has installed).
EXAMPLE_SERVER = [
    sys.executable,
    "-c",
    f"import sys; sys.path.insert(0, {str(REPO)!r}); from sansio_mcp_cli.main import main; "
    "sys.exit(main(['example-server']))",
]
EVERYTHING = REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"


@pytest.fixture(scope="session")
def schema_dir() -> str:
    found = find_schema_dir()
    if found is None:
        pytest.skip("the official MCP schemas are absent; set MCP_SCHEMA_DIR")
    return str(found)


@pytest.fixture(scope="session")
def everything_command() -> list[str]:
    node = shutil.which("node")
    if node is None or not (EVERYTHING / "index.js").is_file():
        pytest.skip("server-everything is not installed (run `npm ci`) or node is missing")
    return [node, str(EVERYTHING / "index.js"), "stdio"]


FILESYSTEM = REPO / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist"


@pytest.fixture(scope="session")
def filesystem_server() -> str:
    """The path of server-filesystem's entry point (skips when it is not installed)."""
    node = shutil.which("node")
    if node is None or not (FILESYSTEM / "index.js").is_file():
        pytest.skip("server-filesystem is not installed (run `npm ci`) or node is missing")
    return str(FILESYSTEM / "index.js")
