"""The core stays sans-IO: no I/O or concurrency modules, no clock reads, and
no ``async def`` or ``await`` outside :mod:`sansio_mcp.runtime` (the async layer).

The applications (:mod:`sansio_mcp_apps`) keep the same split: each one's pure half
is a state machine, its ``runtime`` subpackage is async without I/O modules, and only
its ``adapters`` subpackage touches an event loop."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "sansio_mcp"
RUNTIME = CORE / "runtime"
APPS = ROOT / "sansio_mcp_apps"

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


def _app_layer(path: Path) -> str:
    """``adapters`` (an event loop's), ``runtime`` (async) or ``pure``, by the
    subpackage the application module lies in."""
    parts = path.relative_to(APPS).parts[:-1]
    if "adapters" in parts:
        return "adapters"
    if "runtime" in parts or path.name == "example_server.py":
        return "runtime"
    return "pure"


def _app_modules(*layers: str) -> list[Path]:
    return [p for p in sorted(APPS.rglob("*.py")) if _app_layer(p) in layers]


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
    core = [p for p in _core_modules() if RUNTIME not in p.parents]
    return core + _app_modules("pure")


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


def test_the_applications_have_their_layers() -> None:
    names = {p.relative_to(APPS).as_posix() for p in _app_modules("pure")}
    assert {"a2e/_host.py", "a2a/_envelope.py", "gateway/_router.py"} <= names
    assert "a2e/runtime/_runner.py" not in names
    assert {p.name for p in _app_modules("adapters")} >= {"trio_bridge.py", "asyncio_bridge.py"}


@pytest.mark.parametrize(
    "path", _core_modules() + _app_modules("pure", "runtime"), ids=lambda p: p.name
)
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


def _module_path(name: str, root: Path = ROOT) -> Path | None:
    """The project file that defines module ``name``, or None if it is not the project's."""
    relative = Path(*name.split("."))
    for candidate in (root / relative / "__init__.py", root / relative.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(path: Path, module: str) -> set[str]:
    """Absolute names of every module ``path`` imports, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            names.add(stem)
            # ``from . import _json`` imports a module, not a name.
            names.update(f"{stem}.{alias.name}" for alias in node.names)
    return names


def import_closure(entry: str, root: Path = ROOT) -> dict[str, set[str]]:
    """For each project module reachable from ``entry``, the outside modules it imports.

    This judges the project by its own import statements, followed within the project (an
    application's into the library too), and not by what a third-party package (attrs,
    say) happens to load internally.
    """
    outside: dict[str, set[str]] = {}
    todo = [entry]
    while todo:
        module = todo.pop()
        path = _module_path(module, root)
        if path is None or module in outside:
            continue
        outside[module] = set()
        for name in _imported_names(path, module):
            if _module_path(name, root) is not None:
                todo.append(name)
                # Importing a submodule runs its package's __init__ too.
                parts = name.split(".")
                todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
            elif name.split(".")[0] not in {entry.split(".")[0], "sansio_mcp"}:
                outside[module].add(name.split(".")[0])
    return outside


@pytest.mark.parametrize(
    "entry", ["sansio_mcp", "sansio_mcp_apps.a2e", "sansio_mcp_apps.a2a", "sansio_mcp_apps.gateway"]
)
def test_importing_the_core_reaches_no_io_modules(entry: str) -> None:
    closure = import_closure(entry)
    assert "sansio_mcp._jsonrpc" in closure
    bad = {
        module: sorted(names & FORBIDDEN_MODULES)
        for module, names in closure.items()
        if names & FORBIDDEN_MODULES
    }
    assert bad == {}, f"importing {entry} reaches I/O modules: {bad}"


def test_import_closure_follows_the_project(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from . import front\n")
    (package / "front.py").write_text("import json\nfrom .inner.deep import f\n")
    (package / "inner").mkdir()
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "deep.py").write_text("def f():\n    import threading\n")
    (package / "unused.py").write_text("import socket\n")
    closure = import_closure("pkg", tmp_path)
    assert closure == {
        "pkg": set(),
        "pkg.front": {"json"},
        "pkg.inner": set(),
        "pkg.inner.deep": {"threading"},
    }
