"""Importing an adapter loads only what every program needs (import time, issue 37):
the HTTP machinery (h11) and its transports, the WebSocket transport's wsproto, the
OAuth client and server, the JWT machinery and the Redis stores load when first used;
``sansio_mcp``, ``sansio_mcp.runtime`` and the adapters import each name's module (and
the event loop) on first use; the CLI's parser loads no application.  Every public name
still imports as before."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

#: Modules a program that never speaks WebSocket nor OAuth never needs.
LAZY = (
    "wsproto",
    "jwt",
    "cryptography",
    "httpx",
    "sansio_mcp._websocket",
    "sansio_mcp.auth._client",
    "sansio_mcp.auth._types",
    "sansio_mcp.auth._jwt_verifier",
    "sansio_mcp.runtime._oauth",
)

#: What a stdio program (server or client) never needs: HTTP, SSE, OAuth's resource
#: server, the Redis stores, a stateless client's result cache.
NOT_FOR_STDIO = (
    "h11",
    "sansio_mcp._http",
    "sansio_mcp._streamable_http",
    "sansio_mcp._streamable_http_client",
    "sansio_mcp._legacy_sse",
    "sansio_mcp._cache",
    "sansio_mcp.auth",
    "sansio_mcp.runtime._http_service",
    "sansio_mcp.runtime._http_client",
    "sansio_mcp.runtime._http_openers",
    "sansio_mcp.runtime._redis",
    "sansio_mcp.runtime._stores",
)

#: The public packages whose names are imported from their modules on first use.
LAZY_PACKAGES = (
    "sansio_mcp",
    "sansio_mcp.runtime",
    "sansio_mcp.runtime.hosting",
    "sansio_mcp.auth",
    "trio_adapters",
    "asyncio_adapters",
)


def _loaded_after(statement: str, watched: tuple[str, ...] = LAZY, stdin: str = "") -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {watched!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], input=stdin, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_importing_an_adapter_leaves_the_rarely_used_modules_unloaded(adapter: str) -> None:
    assert _loaded_after(f"import {adapter}") == []


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_a_stdio_program_loads_no_http_oauth_nor_redis(adapter: str) -> None:
    statement = (
        f"from {adapter} import BACKEND, open_stdio_client, serve_stdio\n"
        "from sansio_mcp.runtime import ClientHandlers, Server\n"
        "server = Server('s')"
    )
    assert _loaded_after(statement, NOT_FOR_STDIO + LAZY) == []


#: What a client never needs: the server's half (its handlers' context, the tool
#: registry, the task runner and its stores).
SERVER_HALF = (
    "sansio_mcp._registry",
    "sansio_mcp._server_session",
    "sansio_mcp.runtime._server",
    "sansio_mcp.runtime._serving",
    "sansio_mcp.runtime._tasks",
    "sansio_mcp.runtime._task_store",
)


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_a_stdio_client_loads_no_server(adapter: str) -> None:
    statement = f"from {adapter} import ClientHandlers, open_stdio_client"
    assert _loaded_after(statement, SERVER_HALF + NOT_FOR_STDIO + LAZY) == []


#: What a server never needs: the client's half.
CLIENT_HALF = (
    "sansio_mcp._http_headers",
    "sansio_mcp.runtime._client",
    "sansio_mcp.runtime._client_options",
    "sansio_mcp.runtime._open_client",
    "sansio_mcp.runtime._task_client",
)


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_a_stdio_server_loads_no_client(adapter: str) -> None:
    statement = (
        f"from {adapter} import serve_stdio\n"
        "from sansio_mcp.runtime import Server\n"
        "server = Server('s')"
    )
    watched = (*CLIENT_HALF, f"{adapter}.client", *NOT_FOR_STDIO, *LAZY)
    assert _loaded_after(statement, watched) == []


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_the_transport_table_loads_neither_half_until_used(adapter: str) -> None:
    halves = (*SERVER_HALF, *CLIENT_HALF, f"{adapter}.client", f"{adapter}.server")
    assert _loaded_after(f"from {adapter} import BACKEND", halves) == []


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_the_network_transports_load_when_first_used(adapter: str) -> None:
    transports = tuple(f"{adapter}.{m}" for m in ("http_client", "http_server", "sse", "websocket"))
    assert _loaded_after(f"import {adapter}", transports) == []
    loaded = _loaded_after(
        f"from {adapter} import BACKEND\nBACKEND.servers.http\nBACKEND.clients.http('http://x/mcp')",
        (*transports, "h11"),
    )
    assert loaded == [f"{adapter}.http_client", "h11"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_importing_a_package_loads_none_of_its_modules(package: str) -> None:
    loaded = _loaded_after(
        f"import {package}",
        ("sansio_mcp._session", "sansio_mcp._events", "sansio_mcp.runtime._server", "attr"),
    )
    assert loaded == []


@pytest.mark.parametrize("adapter", ["trio_adapters", "asyncio_adapters"])
def test_importing_an_adapter_loads_no_event_loop(adapter: str) -> None:
    """The event loop loads with the first name that needs it, as anyio loads its Trio
    backend only when run on Trio; every name then works as before."""
    watched = ("trio", "asyncio", "sansio_mcp.runtime", "attr", "h11", "orjson")
    assert _loaded_after(f"import {adapter}", watched) == []
    loop = adapter.split("_")[0]
    loaded = _loaded_after(f"from {adapter} import BACKEND, serve_stdio", watched)
    assert {loop, "sansio_mcp.runtime", "attr"} <= set(loaded)
    assert "h11" not in loaded


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_dir_lists_the_names_not_yet_imported(package: str) -> None:
    statement = f"import {package} as m\nassert set(m.__all__) <= set(dir(m)), dir(m)"
    assert _loaded_after(statement, ("sansio_mcp._session", "sansio_mcp.runtime._server")) == []


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_of_a_lazy_package_imports(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert value is getattr(module, name)  # kept after the first use
        assert name in vars(module)


def test_the_lazy_names_still_import() -> None:
    loaded = _loaded_after(
        "from sansio_mcp.runtime import OAuthProvider, FileTokenStore\n"
        "from sansio_mcp.auth import OAuthClient, JWTVerifier, OAuthConfig\n"
        "from trio_adapters.websocket import open_ws_client\n"
        "assert OAuthProvider.__name__ == 'OAuthProvider' and OAuthClient and JWTVerifier\n"
        "import sansio_mcp.auth as auth\n"
        "assert all(getattr(auth, name) is not None for name in auth.__all__)"
    )
    assert {"sansio_mcp.runtime._oauth", "sansio_mcp.auth._client", "wsproto"} <= set(loaded)


def test_an_unknown_name_is_an_attribute_error() -> None:
    for package in LAZY_PACKAGES:
        module = importlib.import_module(package)
        with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such'"):
            getattr(module, "no_such")  # noqa: B009


#: What ``sansio-mcp --help`` (every command builds the parser) must not load.
APPLICATIONS = (
    "trio",
    "asyncio_adapters",
    "trio_adapters",
    "h11",
    "importlib.metadata",
    "sansio_mcp_apps.a2e",
    "sansio_mcp_apps.a2a",
    "sansio_mcp_apps.gateway",
    "sansio_mcp_apps.example_server",
    *LAZY,
)


def test_the_cli_parser_loads_no_application() -> None:
    statement = (
        "import contextlib, io\n"
        "from sansio_mcp_cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])"
    )
    assert _loaded_after(statement, APPLICATIONS) == []


def test_a_stdio_example_server_loads_no_client_http_oauth_nor_redis() -> None:
    statement = "from sansio_mcp_cli.main import main\nassert main(['example-server']) == 0"
    # It opens its stores (memory, the ``--store`` default), never the Redis client.
    stores = "sansio_mcp.runtime._stores"
    watched = (
        tuple(m for m in NOT_FOR_STDIO if m != stores) + LAZY + CLIENT_HALF + ("asyncio_adapters",)
    )
    assert _loaded_after(statement, watched, stdin="") == []
