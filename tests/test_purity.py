"""The core stays sans-IO: no I/O or concurrency modules, no clock reads, and
no ``async def`` or ``await`` outside :mod:`sansio_mcp.runtime` (the async layer)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "sansio_mcp"
RUNTIME = CORE / "runtime"

FORBIDDEN_MODULES = frozenset(
    {
        "trio",
        "asyncio",
        "anyio",
        "socket",
        "ssl",
        "subprocess",
        "threading",
        "select",
        "selectors",
    }
)
FORBIDDEN_TIME_CALLS = frozenset({"sleep", "time", "monotonic"})


def _core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def forbidden_imports(source: str) -> list[str]:
    """Imports of forbidden modules (``import x``, ``import x.y``, ``from x import y``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            if name.split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"line {node.lineno}: {name}")
    return found


def clock_calls(source: str) -> list[str]:
    """Calls of time.sleep/time.time/time.monotonic, however ``time`` was imported."""
    tree = ast.parse(source)
    module_aliases = {"time"}
    function_aliases: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "time":
                    module_aliases.add(alias.asname or "time")
        elif isinstance(node, ast.ImportFrom) and node.module == "time" and node.level == 0:
            for alias in node.names:
                if alias.name in FORBIDDEN_TIME_CALLS or alias.name == "*":
                    function_aliases[alias.asname or alias.name] = alias.name
                    found.append(f"line {node.lineno}: from time import {alias.name}")
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Call, ast.Attribute)):
            continue
        target = node.func if isinstance(node, ast.Call) else node
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id in module_aliases
            and target.attr in FORBIDDEN_TIME_CALLS
        ):
            found.append(f"line {node.lineno}: {target.value.id}.{target.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(target, ast.Name)
            and target.id in function_aliases
        ):
            found.append(f"line {node.lineno}: {target.id}()")
    return sorted(set(found))


def _state_machine_modules() -> list[Path]:
    return [p for p in _core_modules() if RUNTIME not in p.parents]


def async_sites(source: str) -> list[str]:
    """Every ``async def``, ``await``, ``async for`` and ``async with`` in ``source``."""
    kinds = (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)
    return [
        f"line {node.lineno}: {type(node).__name__}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, kinds)
    ]


def test_the_core_exists() -> None:
    modules = {p.name for p in _core_modules()}
    assert {"__init__.py", "_session.py", "_jsonrpc.py", "_ndjson.py"} <= modules


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: p.name)
def test_core_module_is_pure(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert forbidden_imports(source) == [], f"{path.name} imports an I/O or concurrency module"
    assert clock_calls(source) == [], f"{path.name} reads the clock or sleeps"


@pytest.mark.parametrize("path", _state_machine_modules(), ids=lambda p: p.name)
def test_state_machines_never_await(path: Path) -> None:
    """Only the runtime is async: a state machine is driven, it never waits."""
    assert async_sites(path.read_text(encoding="utf-8")) == [], f"{path.name} is async"


@pytest.mark.parametrize(
    "source",
    [
        "async def f(): pass",
        "def f():\n    async def g(): pass",
        "async def f():\n    await g()",
        "x = [await y for y in z]",
    ],
)
def test_async_scan_catches(source: str) -> None:
    assert async_sites(source)


@pytest.mark.parametrize(
    "source",
    [
        "import trio",
        "import asyncio.events",
        "import os, socket as s",
        "from ssl import SSLContext",
        "from selectors import DefaultSelector",
        "from subprocess import run as r",
        "def f():\n    import threading",
        "try:\n    import anyio\nexcept ImportError:\n    pass",
    ],
)
def test_import_scan_catches(source: str) -> None:
    assert forbidden_imports(source)


@pytest.mark.parametrize(
    "source",
    [
        "import time\ntime.sleep(1)",
        "import time\nx = time.monotonic()",
        "import time as t\nt.time()",
        "from time import monotonic\nmonotonic()",
        "from time import sleep as nap\nnap(1)",
        "import time\nclock = time.monotonic",
    ],
)
def test_clock_scan_catches(source: str) -> None:
    assert clock_calls(source)


@pytest.mark.parametrize(
    "source",
    [
        "from . import _json",
        "import json, re, attrs",
        "from .selectors import x",  # a relative module is not the stdlib one
        "def handle_timer(now): return now + 1",
        "session.time = 3",
    ],
)
def test_scans_allow(source: str) -> None:
    assert forbidden_imports(source) == []
    assert clock_calls(source) == []


def _modules_after(code: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def test_importing_the_core_loads_no_io_modules() -> None:
    # attrs (a dependency) may load threading itself (attrs 26 does): that is not the core's doing.
    baseline = _modules_after("import attrs")
    loaded = _modules_after("import sansio_mcp")
    assert "sansio_mcp" in loaded and "sansio_mcp._session" in loaded
    new = loaded - baseline
    bad = sorted(name for name in new if name.split(".")[0] in FORBIDDEN_MODULES)
    assert bad == [], f"importing sansio_mcp loads {bad}"
