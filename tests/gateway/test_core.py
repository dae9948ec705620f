"""The gateway's pure part: config, names, overrides, freshness, the status
table, the store and the sessionless HTTP machine (no I/O)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import InvalidParams
from sansio_mcp._http import HTTPRequest
from sansio_mcp._registry import decode_state_cursor, encode_cursor, encode_state_cursor
from sansio_mcp_apps.gateway import (
    CONNECTOR_TRANSITIONS,
    DEFAULT_MAX_TOOLS_PER_CONNECTOR,
    Backoff,
    Catalog,
    CatalogView,
    ConfigError,
    ConnectorStatus,
    ConnectorTools,
    GatewayConfig,
    GatewayHTTPServer,
    IllegalConnectorTransition,
    MemoryStore,
    StatusTrigger,
    ToolOverride,
    apply_overrides,
    backoff_delay,
    catalog_of,
    list_freshness,
    move,
    next_status,
    parse_config,
    split_tool_name,
    status_report,
)
from sansio_mcp_apps.gateway._catalog import encode_position
from sansio_mcp_apps.gateway.runtime import Gateway, Upstream, UpstreamSettings

names = st.from_regex(r"\A[a-zA-Z0-9_-]{1,48}\Z")
tool_names = st.text(min_size=1, max_size=30).filter(lambda t: "\x00" not in t)

CONFIG: dict[str, Any] = {
    "connectors": {
        "github": {
            "transport": "stdio",
            "cmd": ["node", "server.js"],
            "env": {"TOKEN": "x"},
            "cwd": "",
            "tools": {
                "read_file": {"enabled": True, "description": "Read a file"},
                "write_file": {"enabled": False},
            },
        },
        "files": {"transport": "http", "url": "http://127.0.0.1:9000/mcp", "headers": {}},
    },
    "api_keys": ["k1"],
    "allowed_hosts": [],
}


def test_the_issue_config_parses() -> None:
    config = parse_config(CONFIG)
    assert [c.name for c in config.connectors] == ["github", "files"]
    github = config.connectors[0]
    assert github.cmd == ("node", "server.js") and github.env == {"TOKEN": "x"}
    assert github.tools["write_file"] == ToolOverride(enabled=False)
    assert github.tools["read_file"].description == "Read a file"
    assert config.connectors[1].url == "http://127.0.0.1:9000/mcp"
    assert config.api_keys == ("k1",)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c["connectors"].update({"a.b": {"transport": "ws", "url": "ws://h/"}}), "a.b"),
        (lambda c: c["connectors"].update({"x" * 49: {"transport": "ws", "url": "ws://h"}}), "x"),
        (lambda c: c["connectors"]["files"].update(transport="grpc"), "transport"),
        (lambda c: c["connectors"]["files"].update(url="ftp://x"), "connectors.files.url"),
        (lambda c: c["connectors"]["files"].update(cmd=["x"]), "unknown key(s) for http: 'cmd'"),
        (lambda c: c["connectors"]["github"].update(cmd=[]), "connectors.github.cmd"),
        (lambda c: c["connectors"]["github"]["tools"].update(t={"enabled": "no"}), "enabled"),
        (lambda c: c["connectors"]["github"]["tools"].update(t={"x": 1}), "unknown key(s): 'x'"),
        (lambda c: c.update(api_keys="k"), "api_keys"),
        (lambda c: c.update(api_keys=[""]), "empty key"),
        (lambda c: c.update(connectors={}), "at least one"),
        (lambda c: c.update(extra=1), "unknown key(s): 'extra'"),
        (lambda c: c.update(api_keys=["two words"]), "visible ASCII"),
        (lambda c: c.update(api_keys=["clé"]), "visible ASCII"),
        (lambda c: c["connectors"]["files"].update(url="http://"), "has no host"),
        (lambda c: c["connectors"]["files"].update(url="http://:9/mcp"), "has no host"),
        (lambda c: c["connectors"]["files"].update(url="http://h:99999/"), "invalid port"),
        (lambda c: c["connectors"]["files"].update(url="http://h:x/"), "invalid port"),
        (lambda c: c["connectors"]["files"].update(headers={"A": "b\r\nC: d"}), "'A'"),
        (lambda c: c["connectors"]["files"].update(headers={"A B": "c"}), "'A B'"),
    ],
)
def test_bad_configs_name_the_problem(mutate: Any, message: str) -> None:
    config = json.loads(json.dumps(CONFIG))
    mutate(config)
    with pytest.raises(ConfigError, match=None) as info:
        parse_config(config)
    assert message in str(info.value)


@given(names, tool_names)
def test_names_split_on_the_first_dot(connector: str, tool: str) -> None:
    assert split_tool_name(f"{connector}.{tool}") == (connector, tool)


@given(st.text(max_size=60))
def test_split_never_crashes(name: str) -> None:
    try:
        connector, tool = split_tool_name(name)
    except InvalidParams as exc:
        assert repr(name) in exc.message
    else:
        assert f"{connector}.{tool}" == name and "." not in connector


def test_overrides_disable_and_describe_and_keep_schemas() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string"}}, "x-extra": [1]}
    tools = [
        {"name": "read_file", "description": "old", "inputSchema": schema, "outputSchema": schema},
        {"name": "write_file", "inputSchema": schema},
        {"name": "other", "inputSchema": schema},
    ]
    overrides = parse_config(CONFIG).connectors[0].tools
    listed = apply_overrides("github", tools, overrides)
    assert [t["name"] for t in listed] == ["github.read_file", "github.other"]
    assert listed[0]["description"] == "Read a file"
    assert listed[0]["inputSchema"] is schema and listed[0]["outputSchema"] is schema
    assert tools[0]["name"] == "read_file"  # the upstream's listing is not changed


@given(st.lists(st.one_of(st.none(), st.integers(-5, 10**6)), max_size=6), st.integers(0, 10**6))
def test_freshness_is_the_shortest_ttl(ttls: list[int | None], default: int) -> None:
    assert list_freshness(ttls, ["down"], default) == 0
    got = list_freshness(ttls, [], default)
    given_ttls = [max(0, t) for t in ttls if t is not None]
    assert got == min([*given_ttls, default]) if given_ttls else got == default
    assert all(got <= t for t in given_ttls)


def test_status_table_allows_only_its_moves() -> None:
    status = ConnectorStatus.CONNECTING
    for trigger in (StatusTrigger.LISTED, StatusTrigger.LIST_CHANGED, StatusTrigger.FAILED):
        status = next_status(status, trigger)
    assert status is ConnectorStatus.BACKOFF
    assert next_status(status, StatusTrigger.RETRY) is ConnectorStatus.CONNECTING
    for status in ConnectorStatus:
        for trigger in StatusTrigger:
            if (status, trigger) not in CONNECTOR_TRANSITIONS:
                with pytest.raises(IllegalConnectorTransition):
                    next_status(status, trigger)


@given(st.integers(0, 200))
def test_backoff_grows_to_its_cap(attempt: int) -> None:
    backoff = Backoff(base=0.5, cap=20.0)
    assert backoff_delay(attempt, backoff) <= 20.0
    assert backoff_delay(attempt + 1, backoff) >= backoff_delay(attempt, backoff)
    assert backoff_delay(0, backoff) == 0.5


def test_store_catalog_and_version() -> None:
    config = parse_config(CONFIG)
    store = MemoryStore(["github", "files"])
    catalog = catalog_of(store, config)
    assert catalog.missing == ["github", "files"] and catalog.tools() == []
    v0 = store.version
    tools = ConnectorTools(({"name": "read_file"}, {"name": "write_file"}), ttl_ms=5_000)
    move(store, "github", StatusTrigger.LISTED, tools=tools)
    assert store.version > v0
    catalog = catalog_of(store, config)
    assert [t["name"] for t in catalog.tools()] == ["github.read_file"]
    assert catalog.missing == ["files"] and catalog.ttl_ms() == 0
    move(store, "files", StatusTrigger.LISTED, tools=ConnectorTools(({"name": "read_file"},)))
    catalog = catalog_of(store, config)
    # Sorted by connector, then tool: the order pages and their cursors follow.
    assert [t["name"] for t in catalog.tools()] == ["files.read_file", "github.read_file"]
    assert catalog.ttl_ms() == 5_000
    assert catalog.resolve("files.read_file") == ("files", "read_file")
    for bad, named in [
        ("nope.read_file", "unknown connector 'nope'"),
        ("github.write_file", "unknown tool 'write_file'"),
        ("github.missing", "unknown tool 'missing'"),
        ("noprefix", "'noprefix'"),
    ]:
        with pytest.raises(InvalidParams) as info:
            catalog.resolve(bad)
        assert named in info.value.message
    record = move(store, "files", StatusTrigger.FAILED, error="boom")
    assert record.attempts == 1 and record.error == "boom" and record.tools is None
    assert catalog_of(store, config).missing == ["files"]


@given(st.lists(st.text(alphabet="abc_.", min_size=1, max_size=8), max_size=30))
def test_a_resolved_name_is_kept_for_a_listed_tool_alone(names: list[str]) -> None:
    """``Catalog.resolve`` remembers what it resolved (a relayed call resolves its tool
    per request), bounded by the catalog: only listed tools are kept, not the names that
    pass because their connector is down (any tool name does), and a refusal stays one."""
    config = parse_config(CONFIG)
    store = MemoryStore(["github", "files"])
    tools = ConnectorTools(({"name": "read_file"}, {"name": "write_file"}))
    move(store, "github", StatusTrigger.LISTED, tools=tools)
    catalog = catalog_of(store, config)  # files is down
    for name in names:
        assert catalog.resolve(f"files.{name}") == ("files", name)
        for _ in range(2):
            assert catalog.resolve("github.read_file") == ("github", "read_file")
            with pytest.raises(InvalidParams):
                catalog.resolve("github.write_file")  # disabled by the config
    assert len(catalog._resolved) == (1 if names else 0)


# The HTTP machine -----------------------------------------------------------------------

HEADERS = {
    "host": "127.0.0.1:8931",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


def _post(router: GatewayHTTPServer, body: Any, **headers: str) -> Any:
    request = HTTPRequest("POST", "/mcp", {**HEADERS, **headers}, json.dumps(body).encode())
    return router.handle(request)


class _Offline:
    """An opener never used: these tests run no upstream."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no upstream in these tests")


def _router(config: dict[str, Any]) -> GatewayHTTPServer:
    from trio_adapters import BACKEND

    return Gateway(parse_config(config), BACKEND, _Offline()).router()


def test_api_keys_are_required() -> None:
    router = _router(CONFIG)
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic k1"}):
        refused = _post(router, body, **headers)
        assert refused.status == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert _post(router, body, authorization="Bearer k1").status != 401


def test_legacy_initialize_makes_no_session() -> None:
    router = _router({**CONFIG, "api_keys": []})
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    answer = _post(router, init)
    assert answer.status == 200 and "mcp-session-id" not in answer.headers
    result = json.loads(answer.take())["result"]
    assert result["capabilities"] == {"tools": {"listChanged": True}}
    assert router.sessions.ids == frozenset()
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(router, note, **{"mcp-protocol-version": "2025-06-18"}).status == 202
    # GET and DELETE have no session to serve.
    get = HTTPRequest("GET", "/mcp", {**HEADERS, "accept": "text/event-stream"})
    assert router.handle(get).status == 405


def test_hosts_beyond_loopback_only_when_allowed() -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    closed = _router({**CONFIG, "api_keys": []})
    assert _post(closed, body, host="gateway.example").status == 403
    assert _post(closed, body, origin="http://evil.example").status == 403
    opened = _router({**CONFIG, "api_keys": [], "allowed_hosts": ["gateway.example"]})
    assert _post(opened, body, host="gateway.example").status != 403


def test_an_answer_nobody_waits_for_is_404() -> None:
    router = _router({**CONFIG, "api_keys": []})
    answer = {"jsonrpc": "2.0", "id": "gateway-99", "result": {"action": "cancel"}}
    refused = _post(router, answer, **{"mcp-protocol-version": "2025-06-18"})
    assert refused.status == 404
    assert "no request is waiting" in json.loads(refused.take())["error"]["message"]


@given(
    st.dictionaries(
        names,
        st.tuples(
            st.lists(tool_names, max_size=6, unique=True),
            st.dictionaries(tool_names, st.booleans(), max_size=4),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_every_listed_name_resolves_to_its_upstream_tool(
    connectors: dict[str, tuple[list[str], dict[str, bool]]],
) -> None:
    config = parse_config(
        {
            "connectors": {
                name: {
                    "transport": "ws",
                    "url": "ws://127.0.0.1:1/mcp",
                    "tools": {t: {"enabled": on} for t, on in flags.items()},
                }
                for name, (_, flags) in connectors.items()
            }
        }
    )
    store = MemoryStore(list(connectors))
    for name, (tools, _) in connectors.items():
        move(
            store,
            name,
            StatusTrigger.LISTED,
            tools=ConnectorTools(tuple({"name": t} for t in tools)),
        )
    catalog = catalog_of(store, config)
    listed = [t["name"] for t in catalog.tools()]
    expected = sorted(
        (name, t)
        for name, (tools, flags) in connectors.items()
        for t in tools
        if flags.get(t, True)
    )
    assert listed == [f"{name}.{t}" for name, t in expected]
    for qualified in listed:
        connector, tool = catalog.resolve(qualified)
        assert f"{connector}.{tool}" == qualified


# Pages ------------------------------------------------------------------------------------

#: Few letters, so that names collide, prefix one another and sort across connectors
#: ("a-b" sorts before "a." as a string, after "a" as a connector).
page_connectors = st.sampled_from(["a", "a-b", "b", "Z", "c_1"])
page_tools = st.text(alphabet="ab.-_é", min_size=1, max_size=3)
catalogues = st.dictionaries(
    page_connectors, st.lists(page_tools, max_size=8, unique=True), max_size=4
)


def _catalog(tools: dict[str, list[str]]) -> Catalog:
    listed = {c: ConnectorTools(tuple({"name": t} for t in names)) for c, names in tools.items()}
    return Catalog(listed, ("a", "a-b", "b", "Z", "c_1"), {})


@given(st.lists(catalogues, min_size=1, max_size=6), st.integers(1, 5))
def test_a_walk_through_a_changing_catalogue_never_repeats_nor_skips(
    reads: list[dict[str, list[str]]], size: int
) -> None:
    # Each page is read from the next catalogue (a connector came or went, an
    # upstream's list changed), the last one staying.
    _walk_through_changes(reads, size, lambda read, cursor: _catalog(read).page(cursor, size))


def _walk_through_changes(
    reads: list[dict[str, list[str]]],
    size: int,
    page_of: Callable[[dict[str, list[str]], str | None], tuple[list[dict[str, Any]], str | None]],
) -> None:
    """Walk the pages, the next catalogue of ``reads`` in place for each (the last one
    staying): no tool is given twice, and every tool present at every read is given."""
    seen: list[str] = []
    cursor: str | None = None
    for page in range(200):
        tools, cursor = page_of(reads[min(page, len(reads) - 1)], cursor)
        assert len(tools) <= size
        seen += [t["name"] for t in tools]
        if cursor is None:
            break
    else:
        raise AssertionError("the walk did not end")
    read = [reads[min(p, len(reads) - 1)] for p in range(page + 1)]
    always = set.intersection(*({f"{c}.{t}" for c, ts in r.items() for t in ts} for r in read))
    assert len(seen) == len(set(seen)), seen
    assert always <= set(seen), always - set(seen)


@given(catalogues, st.integers(1, 5))
def test_a_walk_through_a_steady_catalogue_gives_it_all_in_order(
    tools: dict[str, list[str]], size: int
) -> None:
    catalog = _catalog(tools)
    seen: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page, cursor = catalog.page(cursor, size)
        seen += page
        if cursor is None:
            break
        assert len(page) == size and "gateway" not in cursor and "." not in cursor  # opaque
    assert seen == catalog.tools()


@given(
    st.one_of(
        st.text(),
        st.integers(),
        st.lists(st.text(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
        st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3).map(
            lambda state: encode_state_cursor("gateway-1", state)
        ),
    )
)
def test_a_cursor_no_gateway_made_is_invalid_params(cursor: Any) -> None:
    catalog = _catalog({"a": ["x", "y"], "b": ["z"]})
    try:
        catalog.page(cursor, 1)
    except InvalidParams as exc:
        assert "cursor" in exc.message
    else:  # only a well-formed cursor naming some position
        assert decode_state_cursor("gateway-1", cursor) is not None


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        encode_cursor(1),  # an offset cursor, as the gateway gave before
        encode_state_cursor("a2e-mcp-1", ["a", "x"]),  # another kind of cursor
        encode_state_cursor("gateway-1", ["a"]),
        encode_state_cursor("gateway-1", ["a", 1]),
    ],
)
def test_foreign_cursors_are_refused(cursor: str) -> None:
    with pytest.raises(InvalidParams, match="invalid cursor"):
        _catalog({"a": ["x"]}).page(cursor, 1)


def test_the_command_refuses_a_bad_config(tmp_path: Any) -> None:
    import subprocess
    import sys

    from .conftest import CLI, REPO

    path = tmp_path / "gateway.json"
    for text, named in [
        ('{"connectors": {"a.b": {"transport": "stdio", "cmd": ["x"]}}}', "'a.b'"),
        ('{"connectors": {"f": {"transport": "http"}}}', "connectors.f.url"),
        ("{not json", "not JSON"),
        (
            '{"connectors": {"a": {"transport": "stdio", "cmd": ["x"]},'
            ' "a": {"transport": "stdio", "cmd": ["y"]}}}',
            "'a' is given twice",
        ),
        (
            '{"connectors": {"a": {"transport": "stdio", "cmd": ["x"]}},'
            ' "virtual_mcps": {"v": {"connectors": ["a", "b"]}}}',
            "virtual_mcps.v.connectors: no connector named 'b'",
        ),
        (
            '{"connectors": {"a": {"transport": "stdio", "cmd": ["x"]}},'
            f' "call_log": "{tmp_path}/no/such/dir/calls.jsonl"}}',
            "call_log",
        ),
    ]:
        path.write_text(text)
        done = subprocess.run(
            [*CLI, "gateway", "--config", str(path), "--port", "0"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 2, done.stderr
        assert named in done.stderr and str(path) in done.stderr
    missing = tmp_path / "nowhere.json"
    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", "gateway", "--config", str(missing)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2 and "No such file" in done.stderr


def test_only_post_is_allowed_at_the_endpoint() -> None:
    router = _router({**CONFIG, "api_keys": []})
    for method in ("GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"):
        refused = router.handle(HTTPRequest(method, "/mcp", HEADERS))
        assert refused.status == 405 and refused.headers["allow"] == "POST", method


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"jsonrpc": "2.0"},
        {"jsonrpc": "2.0", "method": 5},
        {"jsonrpc": "2.0", "result": {}},
        {"jsonrpc": "1.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": []},
    ],
)
def test_what_is_no_message_is_refused_not_accepted(body: dict[str, Any]) -> None:
    router = _router({**CONFIG, "api_keys": []})
    refused = _post(router, body, **{"mcp-protocol-version": "2025-06-18"})
    assert refused.status == 400, body
    assert json.loads(refused.take())["error"]["code"] == -32600
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(router, note, **{"mcp-protocol-version": "2025-06-18"}).status == 202


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_the_command_says_why_it_cannot_listen(tmp_path: Any, backend: str) -> None:
    import socket
    import subprocess

    from .conftest import CLI, REPO

    path = tmp_path / "gateway.json"
    path.write_text('{"connectors": {"a": {"transport": "http", "url": "http://127.0.0.1:1/"}}}')

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, "gateway", "--config", str(path), "--backend", backend, *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("--port", str(port))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}:" in done.stderr
    # A port past 65535 is refused, not wrapped around onto another one.
    done = run("--port", str(65536 + 8931))
    assert done.returncode == 2 and "is not a port" in done.stderr


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", None])
@pytest.mark.parametrize("method", ["subscriptions/listen", "server/discover"])
def test_stateless_only_methods_are_not_found_for_a_handshake_client(
    version: str | None, method: str
) -> None:
    # Its revision has no such method: -32601 with HTTP 200, as its other errors go.
    router = _router({**CONFIG, "api_keys": []})
    params = {"notifications": {"toolsListChanged": True}} if method != "server/discover" else {}
    headers = {"mcp-protocol-version": version} if version else {}
    answer = _post(
        router, {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}, **headers
    )
    assert answer.status == 200
    error = json.loads(answer.take())["error"]
    assert error["code"] == -32601 and method in error["message"], error


# A big catalog -------------------------------------------------------------------------


def _offline_config(names: Iterable[str]) -> GatewayConfig:
    """A config of HTTP connectors named ``names`` (nothing connects to them here)."""
    url = "http://127.0.0.1:1/mcp"
    return parse_config({"connectors": {n: {"transport": "http", "url": url} for n in names}})


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each connector whose tools are qualified and sorted into a listing, as it is."""
    import sansio_mcp_apps.gateway._catalog as catalog_module

    built: list[str] = []
    real = catalog_module.apply_overrides

    def counted(connector: str, *args: Any) -> list[dict[str, Any]]:
        built.append(connector)
        return real(connector, *args)

    monkeypatch.setattr(catalog_module, "apply_overrides", counted)
    return built


def test_pages_of_a_big_catalog_are_cut_from_one_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: every page qualified and sorted the whole catalog again (400,000 tools:
    # more than a second per page, the loop blocked).
    built = _count_listings(monkeypatch)
    store = MemoryStore(["a", "b"])
    config = _offline_config(["a", "b"])
    for name in ("a", "b"):
        tools = tuple({"name": f"t{i:05d}"} for i in reversed(range(5_000)))
        move(store, name, StatusTrigger.LISTED, tools=ConnectorTools(tools))
    view = CatalogView(store, config)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page, cursor = view().page(cursor, 100)
        seen += [t["name"] for t in page]
        assert view().resolve(page[0]["name"])  # a call in between changes nothing
        if cursor is None:
            break
    assert seen == [f"{c}.t{i:05d}" for c in "ab" for i in range(5_000)]
    assert built == ["a", "b"]  # one listing for 100 pages
    move(store, "b", StatusTrigger.FAILED, error="gone")
    assert view().page(None, 10)[0][0]["name"] == "a.t00000"
    move(store, "b", StatusTrigger.RETRY)
    move(store, "b", StatusTrigger.LISTED, tools=ConnectorTools(({"name": "new"},)))
    assert [t["name"] for t in view().page(encode_position(("a", "t04999")), 10)[0]] == ["b.new"]
    # A new catalog for each change, but only the connector that changed sorted again.
    assert built == ["a", "b", "b"]


def _bring(store: MemoryStore, connector: str, tools: list[str] | None) -> None:
    """Make ``connector`` list ``tools`` (None: down), by the moves an upstream makes."""
    status = store.record(connector).status
    if tools is None:
        if status is ConnectorStatus.READY:
            move(store, connector, StatusTrigger.FAILED, error="down")
        return
    listed = ConnectorTools(tuple({"name": t} for t in tools))
    if status is ConnectorStatus.BACKOFF:
        move(store, connector, StatusTrigger.RETRY)
        status = ConnectorStatus.CONNECTING
    trigger = (
        StatusTrigger.LIST_CHANGED if status is ConnectorStatus.READY else StatusTrigger.LISTED
    )
    move(store, connector, trigger, tools=listed)


@given(st.lists(catalogues, min_size=1, max_size=6), st.integers(1, 5))
def test_a_walk_through_a_store_that_changes_gives_each_tool_once(
    reads: list[dict[str, list[str]]], size: int
) -> None:
    # Pages come from the view's one sorted listing per store version; a change between
    # two pages makes a new one, and the walk still repeats nothing and skips nothing.
    connectors = ("a", "a-b", "b", "Z", "c_1")
    store = MemoryStore(connectors)
    view = CatalogView(store, _offline_config(connectors))

    def page_of(
        read: dict[str, list[str]], cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        before, catalog = store.version, view()
        for connector in connectors:
            _bring(store, connector, read.get(connector))
        assert (view() is catalog) == (store.version == before)
        return view().page(cursor, size)

    _walk_through_changes(reads, size, page_of)


def test_tools_past_the_limit_are_left_out_and_the_status_says_so() -> None:
    assert parse_config(CONFIG).connectors[0].max_tools == DEFAULT_MAX_TOOLS_PER_CONNECTOR == 10_000
    config = parse_config({**CONFIG, "max_tools_per_connector": 3})
    assert {c.max_tools for c in config.connectors} == {3}
    store = MemoryStore(["github", "files"])
    many = [{"name": f"t{i}"} for i in range(5)]
    move(store, "github", StatusTrigger.LISTED, tools=ConnectorTools.capped(many, None, 3))
    move(store, "files", StatusTrigger.LISTED, tools=ConnectorTools.capped(many[:3], None, 3))
    names = [t["name"] for t in catalog_of(store, config).tools()]
    assert names == ["files.t0", "files.t1", "files.t2", "github.t0", "github.t1", "github.t2"]
    status = status_report(store, config)
    assert status["github"]["warning"] == (
        "the upstream lists more than 3 tools: only the first 3 are offered "
        "(max_tools_per_connector)"
    )
    assert "warning" not in status["files"]
    for bad in (0, -1, True, "10", 1.5):
        with pytest.raises(ConfigError, match="max_tools_per_connector must be a positive"):
            parse_config({**CONFIG, "max_tools_per_connector": bad})


class _PagedUpstream:
    """A client of an upstream listing ``total`` tools five a page, counting its pages."""

    def __init__(self, total: int) -> None:
        self.server_capabilities = {"tools": {}}
        self.total = total
        self.pages = 0
        self.session = type("Session", (), {"is_stateless": False})()

    async def request(self, method: str, params: Any, **options: Any) -> dict[str, Any]:
        assert method == "tools/list"
        self.pages += 1
        start = int(params["cursor"]) if params else 0
        page: dict[str, Any] = {
            "tools": [{"name": f"t{i:03d}"} for i in range(start, min(start + 5, self.total))]
        }
        if start + 5 < self.total:
            page["nextCursor"] = str(start + 5)
        return page


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize(("total", "pages", "kept"), [(400, 3, 12), (12, 3, 12), (10, 2, 10)])
def test_an_upstream_listing_stops_past_the_limit(
    backend: str, total: int, pages: int, kept: int
) -> None:
    # 400 tools and a limit of 12: three pages are fetched (15 tools), not eighty.
    config = parse_config({**CONFIG, "max_tools_per_connector": 12})
    store = MemoryStore(["github", "files"])
    offline, settings = _Offline(), UpstreamSettings()
    upstream = Upstream(
        config.connectors[0], offline, store, offline, settings, on_change=str, on_tried=str
    )
    client = _PagedUpstream(total)
    if backend == "trio":
        listed = trio.run(upstream._list, client)
    else:
        listed = asyncio.run(upstream._list(client))
    assert client.pages == pages
    assert [t["name"] for t in listed.tools] == [f"t{i:03d}" for i in range(kept)]
    assert listed.left_out_over == (12 if total > 12 else None)


def test_parked_call_bounds_parse() -> None:
    config = parse_config(CONFIG)
    assert (
        config.parked_call_timeout,
        config.max_parked_calls,
        config.max_parked_calls_per_principal,
    ) == (60.0, 1000, 100)
    config = parse_config(
        {
            **CONFIG,
            "parked_call_timeout": 5,
            "max_parked_calls": 0,
            "max_parked_calls_per_principal": 3,
        }
    )
    assert config.parked_call_timeout == 5.0 and config.max_parked_calls == 0
    assert config.max_parked_calls_per_principal == 3
    for bad in (0, -1, True, "10", float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="parked_call_timeout must be a positive"):
            parse_config({**CONFIG, "parked_call_timeout": bad})
    for key in ("max_parked_calls", "max_parked_calls_per_principal"):
        for bad in (-1, True, "10", 1.5):
            with pytest.raises(ConfigError, match=f"{key} must be a non-negative integer"):
                parse_config({**CONFIG, key: bad})


def test_host_and_origin_are_checked_once_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway checks Host and Origin before its API keys; the Streamable HTTP
    machine under it does not check them a second time (issue 37), and a bad Host
    is still refused."""
    from sansio_mcp import _streamable_http

    checked: list[str] = []
    real = _streamable_http.check_host_and_origin

    def counting(request: HTTPRequest, hosts: set[str], origins: set[str]) -> Any:
        checked.append(request.headers.get("host", ""))
        return real(request, hosts, origins)

    monkeypatch.setattr(_streamable_http, "check_host_and_origin", counting)
    router = _router({**CONFIG, "api_keys": []})
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert _post(router, body, **{"mcp-protocol-version": "2025-06-18"}).status == 200
    assert checked == ["127.0.0.1:8931"]
    assert _post(router, body, host="gateway.example").status == 403


def test_task_bounds_and_task_support_config() -> None:
    """The gateway's task bounds (docs/gateway.md, "Tasks") and a tool's task_support."""
    config = parse_config(CONFIG)
    assert (config.max_tasks, config.max_tasks_per_principal, config.task_max_ttl) == (
        10_000,
        1_000,
        86_400.0,
    )
    config = parse_config(
        {**CONFIG, "max_tasks": 5, "max_tasks_per_principal": 2, "task_max_ttl": 30}
    )
    assert (config.max_tasks, config.max_tasks_per_principal, config.task_max_ttl) == (5, 2, 30.0)
    for key in ("max_tasks", "max_tasks_per_principal"):
        for bad in (0, -1, True, "10", 1.5):
            with pytest.raises(ConfigError, match=f"{key} must be a positive integer"):
                parse_config({**CONFIG, key: bad})
    for bad in (0, True, "10", float("inf")):
        with pytest.raises(ConfigError, match="task_max_ttl must be a positive number"):
            parse_config({**CONFIG, "task_max_ttl": bad})
    name = next(iter(CONFIG["connectors"]))
    tools = {"t": {"task_support": "required"}}
    connectors = {name: {**CONFIG["connectors"][name], "tools": tools}}
    config = parse_config({**CONFIG, "connectors": connectors})
    assert config.connectors[0].tools["t"].task_support == "required"
    listed = apply_overrides(name, [{"name": "t", "inputSchema": {}}], config.connectors[0].tools)
    assert listed[0]["execution"] == {"taskSupport": "required"}
    for bad in ("always", True):
        tools = {"t": {"task_support": bad}}
        connectors = {name: {**CONFIG["connectors"][name], "tools": tools}}
        with pytest.raises(ConfigError, match="task_support must be one of"):
            parse_config({**CONFIG, "connectors": connectors})
