"""The documentation's examples run, and its generated parts are current."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sansio_mcp.state_tables import (
    page_block,
    render_auth_table,
    render_state_tables,
    render_task_table,
)
from sansio_mcp_apps.a2e import render_link_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks(name: str) -> list[str]:
    return BLOCK.findall((ROOT / name).read_text(encoding="utf-8"))


GUIDE_BLOCKS = _blocks("docs/guide.md")
AUTH_BLOCKS = _blocks("docs/authorization.md")


@pytest.mark.parametrize("code", GUIDE_BLOCKS, ids=[f"guide-{i}" for i in range(len(GUIDE_BLOCKS))])
def test_guide_example_runs(code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("code", AUTH_BLOCKS, ids=[f"auth-{i}" for i in range(len(AUTH_BLOCKS))])
def test_authorization_example_runs(code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "steps: ['metadata', 'register', 'authorize', 'token']" in done.stdout


def test_readme_core_example_runs() -> None:
    first = _blocks("README.md")[0]
    done = subprocess.run(
        [sys.executable, "-c", first], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "ResponseReceived(request_id=1, method='tools/list'" in done.stdout


def test_readme_server_answers_the_command_it_names(tmp_path: Path) -> None:
    """The README's server example, talked to as the README says."""
    (server,) = [b for b in _blocks("README.md") if "serve_stdio, server" in b]
    (tmp_path / "server.py").write_text(server, encoding="utf-8")
    call = ["call", "forecast", "--args", '{"city": "Oslo", "days": 2}']
    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", *call, "--", sys.executable, "server.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Oslo: sunny for 2 days" in done.stdout


@pytest.mark.parametrize(
    "render",
    [render_state_tables, render_task_table, render_link_table, render_auth_table],
    ids=["session-lifecycle", "task-statuses", "bridge-links", "auth-flow"],
)
def test_state_tables_in_architecture_page_are_current(render: Callable[[], str]) -> None:
    page = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    assert page_block(page, render()) == render(), (
        "docs/architecture.md is stale: paste `python -m sansio_mcp_cli.docs_tables` into it"
    )


def _public_modules() -> list[str]:
    """Every module of the library and the applications with no ``_`` part, with an ``__all__``."""
    found = []
    for top in ("sansio_mcp", "trio_adapters", "asyncio_adapters", "sansio_mcp_apps"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if not any(part.startswith("_") for part in parts):
                found.append(".".join(parts))
    return [m for m in found if hasattr(importlib.import_module(m), "__all__")]


API_MODULES = _public_modules()


def _api_sections() -> dict[str, str]:
    text = (ROOT / "docs/api.md").read_text(encoding="utf-8")
    parts = re.split(r"^### `([\w.]+)`$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("module", API_MODULES)
def test_the_api_reference_names_every_exported_name(module: str) -> None:
    section = _api_sections().get(module)
    assert section is not None, f"docs/api.md has no section for {module}"
    exported = importlib.import_module(module).__all__
    assert [name for name in exported if f"`{name}`" not in section] == []


_PRIVATE_IMPORT = re.compile(
    r"^\s*(?:from\s+(?:sansio_mcp|trio_adapters|asyncio_adapters)\w*(?:\.\w+)*\._\w+\s+import"
    r"|import\s+(?:sansio_mcp|trio_adapters|asyncio_adapters)\w*(?:\.\w+)*\._\w+)",
    re.MULTILINE,
)


def test_no_doc_imports_from_a_private_module() -> None:
    """What the docs teach is public: no example imports from a ``_`` module."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}: {match.group(0).strip()}"
        for page in pages
        for match in _PRIVATE_IMPORT.finditer(page.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_docs_tables_command_prints_every_table() -> None:
    """The CLI only prints what the library and the applications render."""
    from sansio_mcp_cli.docs_tables import TABLES

    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli.docs_tables"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == "\n\n".join(render() for render in TABLES) + "\n"
    assert len(TABLES) == 6
