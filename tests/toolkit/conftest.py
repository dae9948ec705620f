"""Shared pieces of the toolkit tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from peers import FILESYSTEM, node_for

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


@pytest.fixture(scope="session")
def schema_dir() -> str:
    found = find_schema_dir()
    if found is None:
        pytest.skip("the official MCP schemas are absent; set MCP_SCHEMA_DIR")
    return str(found)


@pytest.fixture(scope="session")
def filesystem_server() -> str:
    """The path of server-filesystem's entry point (skips when it is not installed)."""
    node_for(FILESYSTEM)
    return str(FILESYSTEM)
