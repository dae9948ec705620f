"""docs/gateway.md: its connector table is the code's, its config parses, and its
Python example runs and prints what it says."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from sansio_mcp.state_tables import page_block
from sansio_mcp_apps.gateway import parse_config, render_connector_table

from .conftest import REPO

PAGE = (REPO / "docs" / "gateway.md").read_text(encoding="utf-8")


def test_connector_table_is_current() -> None:
    assert page_block(PAGE, render_connector_table()) == render_connector_table(), (
        "docs/gateway.md is stale: paste `python -m sansio_mcp_cli.docs_tables`'s last table"
    )


def test_config_example_parses() -> None:
    block = re.search(r"```json\n(.*?)```", PAGE, re.DOTALL)
    assert block is not None
    config = parse_config(json.loads(block.group(1).replace('"..."', '"a-key"')))
    assert [c.name for c in config.connectors] == ["github", "files"]
    assert config.connectors[0].tools["write_file"].enabled is False


def test_python_example_runs() -> None:
    block = re.search(r"```python\n(.*?)```", PAGE, re.DOTALL)
    assert block is not None
    done = subprocess.run(
        [sys.executable, "-c", block.group(1)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'sum': 5}"
