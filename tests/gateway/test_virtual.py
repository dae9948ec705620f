"""Virtual MCPs (``/mcp/{id}``, each with its connectors and keys), the call log and
``GET /metrics``, and handshake-era clients asked nothing by default: in process,
on each backend, with our example server upstream."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from sansio_mcp import InvalidParams, MissingRequiredClientCapability
from sansio_mcp._http import HTTPRequest
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import (
    ConfigError,
    ConnectorConfig,
    GatewayHTTPServer,
    parse_config,
)

from .conftest import BACKENDS, serve_gateway, serve_router_on

ADAPTERS = [f"{name}_adapters" for name in BACKENDS]
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _config(upstream: str, tmp: Path, **more: Any) -> dict[str, Any]:
    return {
        "connectors": {
            "a": {"transport": "http", "url": upstream},
            "b": {"transport": "http", "url": upstream},
        },
        "api_keys": ["root"],
        "virtual_mcps": {
            "va": {"connectors": ["a"], "api_keys": ["ka"]},
            "vb": {"connectors": ["b"], "api_keys": ["kb"]},
        },
        "call_log": str(tmp / "calls.jsonl"),
        "metrics": True,
        **more,
    }


def _answering(adapters: str, asked: list[Any]) -> Any:
    """Client handlers that accept every elicitation, recording what was asked."""

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"answer": "yes"}}

    return importlib.import_module(adapters).ClientHandlers(elicitation=answer)


async def _scenario(backend: Any, adapters: str, tmp: Path, **more: Any) -> dict[str, Any]:
    http_client = importlib.import_module(f"{adapters}.http_client")
    asked: list[Any] = []
    handlers = _answering(adapters, asked)

    got: dict[str, Any] = {"asked": asked}
    async with backend.open_task_group() as group:
        example = build_server()
        upstream = await serve_router_on(
            backend, group, adapters, example, StreamableHTTPServer(example.create_session)
        )
        config = parse_config(_config(f"http://127.0.0.1:{upstream}/mcp", tmp, **more))
        _, url = await serve_gateway(backend, group, adapters, config)
        async with backend.fail_after(30):
            for mode in ("modern", "legacy"):
                for path, key in [("/va", "ka"), ("/vb", "kb"), ("", "root"), ("/va", "root")]:
                    async with http_client.open_http_client(
                        url + path,
                        headers={"authorization": f"Bearer {key}"},
                        mode=mode,
                        handlers=handlers,
                    ) as client:
                        names = sorted(t["name"] for t in await client.list_tools())
                        got[mode, path, key] = names
                        if path == "/va":
                            echoed = await client.call_tool("a.echo", {"message": "hi"})
                            got[mode, "echo", key] = echoed["content"][0]["text"]
                            with pytest.raises(InvalidParams) as outside:
                                await client.call_tool("b.echo", {"message": "hi"})
                            got[mode, "outside", key] = outside.value.message
                            failed = await client.call_tool("a.fail", {"message": "no"})
                            got[mode, "fail", key] = failed.get("isError")
                            try:
                                elicited = await client.call_tool("a.elicit", {"question": "ok?"})
                                got[mode, "elicit", key] = elicited["structuredContent"]
                            except MissingRequiredClientCapability as exc:
                                got[mode, "elicit", key] = (exc.code, exc.data)
            async with httpx.AsyncClient(timeout=10) as http:
                for path, key in [
                    ("/vb", "ka"),
                    ("", "ka"),
                    ("/va", None),
                    ("/va", "wrong"),
                    ("/nope", "root"),
                    ("/va/x", "root"),
                ]:
                    auth = {"authorization": f"Bearer {key}"} if key else {}
                    answer_ = await http.post(url + path, json=LIST, headers={**HEADERS, **auth})
                    got["status", path, key] = answer_.status_code
                base = url.removesuffix("/mcp")
                got["metrics", None] = (await http.get(base + "/metrics")).status_code
                got["metrics", "ka"] = (
                    await http.get(base + "/metrics", headers={"authorization": "Bearer ka"})
                ).status_code
                metrics = await http.get(
                    base + "/metrics", headers={"authorization": "Bearer root"}
                )
                got["metrics"] = (
                    metrics.status_code,
                    metrics.headers["content-type"],
                    metrics.text,
                )
        group.cancel()
    return got


@pytest.fixture(params=ADAPTERS)
def adapters(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_virtual_mcps_call_log_and_metrics(adapters: str, tmp_path: Path) -> None:
    backend = importlib.import_module(adapters).BACKEND
    got = backend.run(_scenario, backend, adapters, tmp_path)
    tools = {t for t in build_server().tools}
    for mode in ("modern", "legacy"):
        # Each endpoint lists its own connectors' tools; /mcp lists all; a global key
        # works on a virtual MCP's endpoint and sees what that one serves.
        assert got[mode, "/va", "ka"] == sorted(f"a.{t}" for t in tools), mode
        assert got[mode, "/vb", "kb"] == sorted(f"b.{t}" for t in tools), mode
        assert got[mode, "", "root"] == sorted(f"{c}.{t}" for c in "ab" for t in tools), mode
        assert got[mode, "/va", "root"] == got[mode, "/va", "ka"]
        for key in ("ka", "root"):
            assert got[mode, "echo", key] == "hi"
            assert "unknown connector 'b'" in got[mode, "outside", key]
            assert got[mode, "fail", key] is True
    # A 2026-07-28 client is asked by input_required; a handshake-era one, whose
    # declaration the gateway cannot know, is told what is needed: -32021, unasked.
    assert got["modern", "elicit", "ka"] == {"action": "accept", "answer": "yes"}
    assert got["legacy", "elicit", "ka"] == (-32021, {"requiredCapabilities": {"elicitation": {}}})
    assert len(got["asked"]) == 2  # the stateless client's two calls, no legacy one
    assert got["status", "/vb", "ka"] == 403  # another virtual MCP's key
    assert got["status", "", "ka"] == 403  # a virtual MCP's key on /mcp
    assert got["status", "/va", None] == 401
    assert got["status", "/va", "wrong"] == 401
    assert got["status", "/nope", "root"] == 404
    assert got["status", "/va/x", "root"] == 404
    assert got["metrics", None] == 401
    assert got["metrics", "ka"] == 403
    status, content_type, text = got["metrics"]
    assert status == 200 and content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    calls = {
        (s.labels["connector"], s.labels["tool"], s.labels["outcome"]): s.value
        for s in families["gateway_tool_calls"].samples
        if s.name == "gateway_tool_calls_total"
    }
    assert calls[("a", "echo", "ok")] == 4
    assert calls[("a", "fail", "tool_error")] == 4
    assert calls[("a", "elicit", "-32021")] == 2
    assert families["gateway_tool_call_duration_seconds"].type == "histogram"
    counts = [
        s.value
        for s in families["gateway_tool_call_duration_seconds"].samples
        if s.name.endswith("_count") and s.labels["connector"] == "a"
    ]
    # Each stateless elicit is two rounds: input_required, then the answer.
    assert calls[("a", "elicit", "input_required")] == 2
    assert counts == [14]
    up = {s.labels["connector"]: s.value for s in families["gateway_upstream_up"].samples}
    assert up == {"a": 1, "b": 1}

    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(lines) == 14  # one per call (or round) that reached a connector
    assert {line["endpoint"] for line in lines} == {"va"}
    assert {line["principal"] for line in lines} == {
        "virtual_mcps.va.api_keys[0]",
        "api_keys[0]",
    }
    assert not any("ka" == v or "root" == v for line in lines for v in line.values())
    outcomes = [(line["tool"], line["outcome"]) for line in lines]
    assert outcomes.count(("echo", "ok")) == 4
    assert outcomes.count(("fail", "tool_error")) == 4
    assert outcomes.count(("elicit", -32021)) == 2
    assert outcomes.count(("elicit", "ok")) == 2
    assert outcomes.count(("elicit", "input_required")) == 2
    first = lines[0]
    assert set(first) == {
        "time",
        "endpoint",
        "principal",
        "connector",
        "tool",
        "duration_ms",
        "outcome",
        "request_bytes",
        "response_bytes",
    }
    assert first["time"].endswith("+00:00") and first["duration_ms"] >= 0
    assert first["request_bytes"] > 0 and first["response_bytes"] > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"virtual_mcps": {"v": {"connectors": ["a", "zz"]}}},
            "virtual_mcps.v.connectors: no connector named 'zz'",
        ),
        ({"virtual_mcps": {"v": {"connectors": []}}}, "must name at least one connector"),
        ({"virtual_mcps": {"v/1": {"connectors": ["a"]}}}, "virtual MCP id 'v/1' must match"),
        ({"virtual_mcps": {"v": {"connectors": ["a"], "keys": []}}}, "virtual_mcps.v"),
        (
            {"virtual_mcps": {"v": {"connectors": ["a"], "api_keys": ["a b"]}}},
            "virtual_mcps.v.api_keys must be visible ASCII",
        ),
        ({"virtual_mcps": {"v": {"connectors": ["a"], "api_keys": ["k"]}}}, "api_keys is empty"),
        ({"virtual_mcps": []}, "virtual_mcps must be an object"),
        ({"call_log": 3}, "call_log must be the path of a file"),
        ({"metrics": "yes"}, "metrics must be true or false"),
        (
            {"relay_questions_to_handshake_clients": 1},
            "relay_questions_to_handshake_clients must be true or false",
        ),
    ],
)
def test_bad_virtual_mcps_and_records_are_refused_precisely(
    change: dict[str, Any], message: str
) -> None:
    config = {"connectors": {"a": {"transport": "http", "url": "http://127.0.0.1:1/mcp"}}}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_config({**config, **change})


async def _handshake_upstream_asks(backend: Any, adapters: str, relay: bool) -> Any:
    """A handshake-era upstream (our example server, opened at 2025-11-25) asks its
    ``elicit`` question mid-call; what a handshake-era client of the gateway gets."""
    http_client = importlib.import_module(f"{adapters}.http_client")
    asked: list[Any] = []
    handlers = _answering(adapters, asked)

    def handshake_opener(connector: ConnectorConfig, **options: Any) -> Any:
        return http_client.open_http_client(connector.url, mode="legacy", **options)

    async with backend.open_task_group() as group:
        example = build_server()
        upstream = await serve_router_on(
            backend, group, adapters, example, StreamableHTTPServer(example.create_session)
        )
        config = parse_config(
            {
                "connectors": {
                    "ex": {"transport": "http", "url": f"http://127.0.0.1:{upstream}/mcp"}
                },
                "relay_questions_to_handshake_clients": relay,
            }
        )
        _, url = await serve_gateway(backend, group, adapters, config, handshake_opener)
        async with backend.fail_after(15):
            async with http_client.open_http_client(
                url, mode="legacy", handlers=handlers
            ) as client:
                try:
                    got: Any = await client.call_tool("ex.elicit", {"question": "ok?"})
                except MissingRequiredClientCapability as exc:
                    got = (exc.code, exc.data, exc.message)
        group.cancel()
    return asked, got


@pytest.mark.parametrize("relay", [False, True])
def test_a_handshake_client_is_asked_only_when_relaying_is_on(adapters: str, relay: bool) -> None:
    backend = importlib.import_module(adapters).BACKEND
    asked, got = backend.run(_handshake_upstream_asks, backend, adapters, relay)
    if relay:  # outside the spec, on request: asked on assumed capabilities
        assert [a["message"] for a in asked] == ["ok?"]
        assert got["structuredContent"] == {"action": "accept", "answer": "yes"}
    else:  # the default: nothing asked, -32021 naming what the upstream needs
        assert asked == []
        code, data, message = got
        assert code == -32021 and data == {"requiredCapabilities": {"elicitation": {}}}
        assert "asks no handshake-era client" in message


KEYS = ["g0", "g1", "a0", "b0", "b1", "zz"]


@given(
    global_keys=st.lists(st.sampled_from(KEYS[:2]), unique=True),
    a_keys=st.lists(st.sampled_from(KEYS[2:3]), unique=True),
    b_keys=st.lists(st.sampled_from(KEYS[3:5]), unique=True),
    path=st.sampled_from(["/mcp", "/mcp/a", "/mcp/b"]),
    key=st.one_of(st.none(), st.sampled_from(KEYS)),
)
def test_a_key_opens_its_own_endpoints_only(
    global_keys: list[str], a_keys: list[str], b_keys: list[str], path: str, key: str | None
) -> None:
    """Global keys open every endpoint, a virtual MCP's keys its own alone (403
    elsewhere), anything else 401; with no key configured for an endpoint it is open.
    The session served gets the endpoint and the key's place, never the key."""
    router = GatewayHTTPServer(
        build_server().create_session,
        api_keys=global_keys,
        virtual_mcps={"a": a_keys, "b": b_keys},
    )
    headers = {**HEADERS, "host": "127.0.0.1"}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    exchange = router.handle(HTTPRequest("POST", path, headers, ping))
    virtual = path.removeprefix("/mcp").removeprefix("/") or None
    own = {"a": a_keys, "b": b_keys}.get(virtual or "", [])
    if not global_keys and not own:
        allowed = True
    else:
        allowed = key in global_keys or key in own
    if allowed:
        assert exchange.status not in (401, 403), (exchange.status, key)
        access = router.access[exchange.session]
        assert access.endpoint == virtual
        if key in global_keys:
            assert access.principal == f"api_keys[{global_keys.index(key)}]"
        elif key in own:
            assert access.principal == f"virtual_mcps.{virtual}.api_keys[{own.index(key)}]"
        assert key is None or key not in str(access)
    elif key in a_keys + b_keys:
        assert exchange.status == 403
    else:
        assert exchange.status == 401
        assert exchange.headers["www-authenticate"] == "Bearer"


async def _call_given_up(backend: Any, adapters: str, tmp: Path) -> list[dict[str, Any]]:
    """A stateless client calls ``slow`` and goes away before it ends: the call log."""
    http_client = importlib.import_module(f"{adapters}.http_client")
    async with backend.open_task_group() as group:
        example = build_server()
        upstream = await serve_router_on(
            backend, group, adapters, example, StreamableHTTPServer(example.create_session)
        )
        log = tmp / "calls.jsonl"
        url = f"http://127.0.0.1:{upstream}/mcp"
        config = parse_config(
            {"connectors": {"a": {"transport": "http", "url": url}}, "call_log": str(log)}
        )
        gateway, endpoint = await serve_gateway(backend, group, adapters, config)

        async def call() -> None:
            async with http_client.open_http_client(endpoint, mode="modern") as client:
                await client.call_tool("a.slow", {"seconds": 60, "steps": 2})

        async with backend.fail_after(20):
            async with backend.open_task_group() as calls:
                calls.start_soon(call)
                while not gateway.upstreams["a"]._in_flight:
                    await backend.sleep(0.01)
                calls.cancel()
            while not log.exists():
                await backend.sleep(0.01)
        group.cancel()
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_call_given_up_is_logged_as_cancelled(adapters: str, tmp_path: Path) -> None:
    backend = importlib.import_module(adapters).BACKEND
    lines = backend.run(_call_given_up, backend, adapters, tmp_path)
    assert [(line["tool"], line["outcome"]) for line in lines] == [("slow", "cancelled")]
    assert lines[0]["principal"] is None and lines[0]["endpoint"] is None


async def _hints_heard(backend: Any, adapters: str) -> dict[str, int]:
    """Connector ``a``'s upstream changes its tools, then ``b``'s: how many hints
    each listener (at ``/mcp/va``, ``/mcp/vb``, ``/mcp``) heard after each."""
    http_client = importlib.import_module(f"{adapters}.http_client")
    heard: dict[str, int] = {"/va": 0, "/vb": 0, "": 0}
    got: dict[str, Any] = {}
    async with backend.open_task_group() as group:
        upstreams = {}
        for name in ("a", "b"):
            example = build_server()
            port = await serve_router_on(
                backend, group, adapters, example, StreamableHTTPServer(example.create_session)
            )
            upstreams[name] = (example, f"http://127.0.0.1:{port}/mcp")
        config = parse_config(
            {
                "connectors": {
                    name: {"transport": "http", "url": url} for name, (_, url) in upstreams.items()
                },
                "api_keys": ["root"],
                "virtual_mcps": {
                    "va": {"connectors": ["a"], "api_keys": ["ka"]},
                    "vb": {"connectors": ["b"], "api_keys": ["kb"]},
                },
            }
        )
        gateway, url = await serve_gateway(backend, group, adapters, config)
        listening = backend.new_signal()
        opened: list[str] = []

        async def listen(path: str, key: str) -> None:
            async with http_client.open_http_client(
                url + path, headers={"authorization": f"Bearer {key}"}, mode="modern"
            ) as client:
                async with client.listen(tools_list_changed=True) as hints:
                    opened.append(path)
                    if len(opened) == len(heard):
                        listening.set()
                    async for method, _params in hints:
                        assert method == "notifications/tools/list_changed"
                        heard[path] += 1

        async def until(condition: Any) -> None:
            while not condition():
                await backend.sleep(0.01)

        async with backend.fail_after(30):
            # The start's hints are over before anyone listens.
            await backend.sleep(gateway.hint_interval)
            for path, key in [("/va", "ka"), ("/vb", "kb"), ("", "root")]:
                group.start_soon(listen, path, key)
            await listening.wait()
            # The upstream's listener is told; the gateway re-lists ``a`` and hints.
            upstreams["a"][0].hub.list_changed("tools")
            await until(lambda: heard[""] == 1 and heard["/va"] == 1)
            # Sent in the same round as theirs, a hint to /vb would be here by now.
            async with backend.move_on_after(1.0):
                await until(lambda: heard["/vb"] > 0)
            got["after a"] = dict(heard)
            upstreams["b"][0].hub.list_changed("tools")
            await until(lambda: heard[""] == 2 and heard["/vb"] >= 1)
            got["after b"] = dict(heard)
        group.cancel()
    return got


def test_a_virtual_mcp_hears_only_of_its_own_connectors_changes(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    got = backend.run(_hints_heard, backend, adapters)
    assert got["after a"] == {"/va": 1, "/vb": 0, "": 1}
    assert got["after b"]["/vb"] == 1 and got["after b"][""] == 2
    assert got["after b"]["/va"] == 1
