"""The packages form layers, and a lower layer never imports a higher one:

    sansio_mcp  <-  sansio_mcp.runtime  <-  trio_adapters, asyncio_adapters
                <-  sansio_mcp_apps  <-  sansio_mcp_cli, sansio_mcp_testing

Every import counts: at the top, inside functions, under ``TYPE_CHECKING``,
relative ones resolved.  The runtime (the library's and each application's)
imports no event loop, the two adapters do not import each other, and no
module imports itself round a circle.  The applications are built from what
the library publishes: they import no ``_private`` module or name of it, and a
class of theirs that subclasses a library class neither overrides nor touches
(``self._x``, ``super()._x``) a ``_private`` name of that class.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "sansio_mcp",
    "trio_adapters",
    "asyncio_adapters",
    "sansio_mcp_apps",
    "sansio_mcp_cli",
    "sansio_mcp_testing",
)
LIBRARY = frozenset({"sansio_mcp", "trio_adapters", "asyncio_adapters"})
EVENT_LOOPS = frozenset({"trio", "asyncio", "anyio", "sniffio", "trio_websocket", "uvloop"})


def layer_of(module: str) -> int:
    """0 the state machines, 1 the runtime, 2 the adapters, 3 the applications,
    4 the command and toolkit."""
    if module == "sansio_mcp.runtime" or module.startswith("sansio_mcp.runtime."):
        return 1
    top = module.split(".")[0]
    layers = {"sansio_mcp": 0, "trio_adapters": 2, "asyncio_adapters": 2, "sansio_mcp_apps": 3}
    return layers.get(top, 4)


def is_async_layer(module: str) -> bool:
    """The library's runtime, or an application's ``runtime`` subpackage."""
    parts = module.split(".")
    return layer_of(module) == 1 or (parts[0] == "sansio_mcp_apps" and "runtime" in parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the code of ``module``) imports, anywhere in it;
    ``from pkg import name`` counts as ``pkg.name`` too (it may be a submodule)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _modules() -> dict[str, tuple[Path, set[str]]]:
    table = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = module_name(path)
            source = path.read_text(encoding="utf-8")
            table[name] = (path, imports_of(source, name, is_package=_is_package(path)))
    return table


MODULES = _modules()


def _ours(name: str) -> str | None:
    """The module of ours that ``name`` is (or lies in), if any."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module: str) -> None:
    _, imported = MODULES[module]
    own = layer_of(module)
    higher = sorted(
        target for name in imported if (target := _ours(name)) and layer_of(target) > own
    )
    assert higher == [], f"{module} (layer {own}) imports {higher}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if is_async_layer(m)))
def test_the_runtime_imports_no_event_loop(module: str) -> None:
    _, imported = MODULES[module]
    loops = sorted(name for name in imported if name.split(".")[0] in EVENT_LOOPS)
    assert loops == [], f"{module} imports {loops}"


@pytest.mark.parametrize(
    "adapter, other", [("trio_adapters", "asyncio_adapters"), ("asyncio_adapters", "trio_adapters")]
)
def test_the_adapters_do_not_import_each_other(adapter: str, other: str) -> None:
    prefix = adapter.partition("_")[0] + "_"  # an application's adapter modules: trio_*, asyncio_*
    crossing = sorted(
        f"{module} -> {name}"
        for module, (_, imported) in MODULES.items()
        if module.split(".")[0] == adapter
        or (module.startswith("sansio_mcp_apps.") and module.rpartition(".")[2].startswith(prefix))
        for name in imported
        if name.split(".")[0] in {other, other.partition("_")[0]}
    )
    assert crossing == []


def private_imports(module: str, imported: set[str]) -> list[str]:
    """What ``module`` imports from the library that the library keeps private: a
    module or name of ``sansio_mcp``, its runtime or an adapter with a ``_`` in front."""
    return sorted(
        name
        for name in imported
        if name.split(".")[0] in LIBRARY
        and any(part.startswith("_") and part != "__init__" for part in name.split("."))
    )


APPS = sorted(m for m in MODULES if m.split(".")[0] == "sansio_mcp_apps")


@pytest.mark.parametrize("module", APPS)
def test_the_applications_import_only_public_names(module: str) -> None:
    _, imported = MODULES[module]
    assert private_imports(module, imported) == [], f"{module} imports private names"


ADAPTERS = sorted(m for m in MODULES if m.split(".")[0] in {"trio_adapters", "asyncio_adapters"})


@pytest.mark.parametrize("module", ADAPTERS)
def test_the_adapters_import_only_public_names_of_the_core_and_runtime(module: str) -> None:
    """An adapter is built as a third party's would be: on what ``sansio_mcp`` and its
    runtime publish (its own package's private modules are its own)."""
    _, imported = MODULES[module]
    own = module.split(".")[0]
    foreign = [n for n in private_imports(module, imported) if n.split(".")[0] != own]
    assert foreign == [], f"{module} imports private names"


def _private_names_of(cls: type) -> set[str]:
    """The ``_private`` names a library class and its library bases define or set on
    ``self`` (dunder names are Python's, not the class's)."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] not in LIBRARY:
            continue
        names.update(n for n in vars(base) if n.startswith("_") and not n.startswith("__"))
        try:
            source = textwrap.dedent(inspect.getsource(base))
        except (OSError, TypeError):
            continue
        names.update(_self_attributes(ast.parse(source)))
    return names


def _self_attributes(tree: ast.AST) -> set[str]:
    """The ``_private`` names used on ``self`` or ``super()`` in ``tree``."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and (
            (isinstance(node.value, ast.Name) and node.value.id == "self")
            or (
                isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "super"
            )
        )
    }


def reached_privates(cls: type) -> list[str]:
    """The ``_private`` names of ``cls``'s library bases that ``cls``'s own code
    overrides (a method or attribute of its body) or uses on ``self``/``super()``."""
    library = _private_names_of(cls)
    if not library:
        return []
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    own = {n for n in vars(cls) if n.startswith("_") and not n.startswith("__")}
    return sorted((own | _self_attributes(body)) & library)


def _library_subclasses(module: str) -> list[type]:
    loaded = importlib.import_module(module)
    return [
        cls
        for cls in vars(loaded).values()
        if inspect.isclass(cls)
        and cls.__module__ == module
        and any(b.__module__.split(".")[0] in LIBRARY for b in cls.__mro__[1:])
    ]


@pytest.mark.parametrize("module", APPS)
def test_the_applications_extend_library_classes_through_public_names(module: str) -> None:
    """An application's subclass of a library class uses the extension points the
    library documents, never a private hook or private state of it."""
    found = {
        cls.__qualname__: reached
        for cls in _library_subclasses(module)
        if (reached := reached_privates(cls))
    }
    assert found == {}, f"{module} overrides or reaches private names of library classes"


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, (_, imported) in MODULES.items():
        targets = {t for name in imported if (t := _ours(name)) and t != module}
        # A package's __init__ re-exports its modules; a module importing a sibling
        # through its package is no circle of the code.
        graph[module] = {t for t in targets if not module.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    assert circles(_graph()) == []


# The scanners themselves -------------------------------------------------------------


def test_relative_imports_are_resolved() -> None:
    source = "from .. import _json\nfrom ._driver import Driver\nfrom ..a2e._host import BridgeHost"
    found = imports_of(source, "sansio_mcp.runtime._client")
    assert {"sansio_mcp._json", "sansio_mcp.runtime._driver", "sansio_mcp.a2e._host"} <= found


def test_hidden_imports_count() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from trio_adapters import BACKEND\n"
        "def f():\n    import sansio_mcp_cli.main\n"
    )
    found = imports_of(source, "sansio_mcp.runtime._x")
    assert {"trio_adapters", "sansio_mcp_cli.main"} <= found


def test_private_imports_are_found() -> None:
    source = (
        "from sansio_mcp import _json, Tool\nfrom sansio_mcp._http import HTTPRequest\n"
        "from trio_adapters.sse import _SSEClientHost\nimport sansio_mcp.runtime._backend\n"
        "from sansio_mcp.runtime import Server\nfrom . import _own\n"
    )
    found = private_imports("sansio_mcp_apps.x", imports_of(source, "sansio_mcp_apps.x"))
    assert found == [
        "sansio_mcp._http",
        "sansio_mcp._http.HTTPRequest",
        "sansio_mcp._json",
        "sansio_mcp.runtime._backend",
        "trio_adapters.sse._SSEClientHost",
    ]


def test_circles_are_found() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_layers() -> None:
    assert [
        layer_of(m)
        for m in (
            "sansio_mcp._session",
            "sansio_mcp.runtime._host",
            "trio_adapters.client",
            "sansio_mcp_apps.gateway.runtime",
            "sansio_mcp_cli.main",
        )
    ] == [0, 1, 2, 3, 4]
    assert is_async_layer("sansio_mcp_apps.a2e.runtime._runner")
    assert not is_async_layer("sansio_mcp_apps.a2e._host")


def test_reaching_a_private_name_of_a_library_class_is_found() -> None:
    from sansio_mcp.http import Exchange, HTTPRequest, StreamableHTTPServer

    class Overrides(StreamableHTTPServer):
        def _post(self, request: HTTPRequest) -> Exchange:  # a private hook of the base
            return super()._post(request)

        def _own_helper(self) -> object:  # the subclass's own name: allowed
            return self.single_requests, self._spare  # private state of the base: not

    assert reached_privates(Overrides) == ["_post", "_spare"]

    class Public(StreamableHTTPServer):
        def route(self, request: HTTPRequest) -> Exchange:
            return super().route(request)

    assert reached_privates(Public) == []
