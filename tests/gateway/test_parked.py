"""Questions across eras (docs/gateway.md): a handshake-era upstream asks mid-call,
a 2026-07-28 client answers by MRTR.  The gateway parks the upstream call, returns
``input_required`` whose sealed ``requestState`` names it, and answers the upstream
when the retry brings the client's answer; a retry that never comes releases the
call after ``parked_call_timeout``.  In process, on each backend."""

from __future__ import annotations

import contextlib
import importlib
import json
import secrets
import uuid
from typing import Any

import pytest

from sansio_mcp.http import StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import ConnectorConfig, parse_config

from .conftest import BACKENDS, serve_gateway, serve_router_on, wait_ready

ADAPTERS = [f"{name}_adapters" for name in BACKENDS]
STATELESS = {"mcp-protocol-version": "2026-07-28"}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }


async def _with_gateway(backend: Any, adapters: str, scenario: Any, **config: Any) -> Any:
    """Run ``scenario(gateway, url, example)`` against a gateway whose one connector,
    ``ex``, is the example server spoken to at a handshake revision (it asks by
    requests of its own)."""
    async with backend.open_task_group() as group:
        parsed = await _example_upstream(backend, group, adapters, config)
        opener = _handshake_opener(adapters)
        gateway, url = await serve_gateway(backend, group, adapters, parsed, opener)
        async with backend.fail_after(30):
            outcome = await scenario(gateway, url, None)
        group.cancel()
    return outcome


def _handshake_opener(adapters: str) -> Any:
    """An opener speaking to each upstream at a handshake revision."""
    http_client = importlib.import_module(f"{adapters}.http_client")

    def opener(connector: ConnectorConfig, **options: Any) -> Any:
        return http_client.open_http_client(connector.url, mode="legacy", **options)

    return opener


async def _example_upstream(backend: Any, group: Any, adapters: str, config: dict[str, Any]) -> Any:
    """The example server served in ``group``; a gateway config (keys ``alice`` and
    ``bob``, and ``config``) whose one connector, ``ex``, it is."""
    example = build_server()
    router = StreamableHTTPServer(example.create_session)
    port = await serve_router_on(backend, group, adapters, example, router)
    return parse_config(
        {
            "connectors": {"ex": {"transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}},
            "api_keys": ["alice", "bob"],
            **config,
        }
    )


async def _two_rounds(backend: Any, adapters: str) -> Any:
    http_client = importlib.import_module(f"{adapters}.http_client")
    handlers_type = importlib.import_module(adapters).ClientHandlers
    asked: list[str] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"answer": "yes to " + params["message"]}}

    async def scenario(gateway: Any, url: str, example: Any) -> Any:
        async with http_client.open_http_client(
            url,
            headers={"authorization": "Bearer alice"},
            protocol_version="2026-07-28",
            handlers=handlers_type(elicitation=answer),
        ) as client:
            result = await client.call_tool("ex.survey", {"questions": ["one?", "two?"]})
        return result, len(gateway.parking)

    return await _with_gateway(backend, adapters, scenario)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_stateless_client_answers_two_questions_of_a_handshake_upstream(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    result, left = backend.run(_two_rounds, backend, adapters)
    assert result["structuredContent"] == {
        "answers": {"one?": "yes to one?", "two?": "yes to two?"},
        "completed": True,
    }
    assert left == 0  # nothing stays parked


async def _post(http: Any, url: str, key: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = HEADERS | STATELESS | {"mcp-method": "tools/call", "mcp-name": params["name"]}
    headers["authorization"] = f"Bearer {key}"
    return _decode(await http.post(url, json=body, headers=headers))


def _decode(got: Any) -> dict[str, Any]:
    """The JSON-RPC answer of an HTTP response (JSON, or the answer on an SSE stream)."""
    text = got.text
    if got.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(
            line[5:] for line in text.splitlines() if line.startswith("data:") and '"id"' in line
        )
    return json.loads(text)  # type: ignore[no-any-return]


async def _release_and_principals(backend: Any, adapters: str) -> Any:
    import httpx

    seen: dict[str, Any] = {}

    async def scenario(gateway: Any, url: str, example: Any) -> Any:
        call = {"name": "ex.elicit", "arguments": {"question": "colour?"}}
        can = _meta({"elicitation": {}})
        async with httpx.AsyncClient(timeout=20) as http:
            # A client that did not declare elicitation is told so, as before.
            seen["undeclared"] = await _post(http, url, "alice", {**call, "_meta": _meta({})})
            first = await _post(http, url, "alice", {**call, "_meta": can})
            seen["first"] = first
            assert "result" in first, first
            state = first["result"]["requestState"]
            (key,) = first["result"]["inputRequests"]
            retry = {
                **call,
                "_meta": can,
                "requestState": state,
                "inputResponses": {key: {"action": "accept", "content": {"colour": "red"}}},
            }
            # Bob cannot answer (or see the outcome of) alice's parked call.
            seen["bob"] = await _post(http, url, "bob", retry)
            seen["other_request"] = await _post(
                http, url, "alice", {**retry, "arguments": {"question": "size?"}}
            )
            seen["parked"] = gateway.parking.parked()
            # No retry from alice: the call is released after parked_call_timeout.
            while len(gateway.parking):
                await backend.sleep(0.02)
            seen["late"] = await _post(http, url, "alice", retry)
        return seen

    return await _with_gateway(backend, adapters, scenario, parked_call_timeout=0.5)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_parked_call_is_its_principals_and_released_when_no_retry_comes(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    seen = backend.run(_release_and_principals, backend, adapters)
    assert seen["undeclared"]["error"]["code"] == -32021
    assert seen["undeclared"]["error"]["data"]["requiredCapabilities"] == {"elicitation": {}}
    first = seen["first"]["result"]
    assert first["resultType"] == "input_required"
    (request,) = first["inputRequests"].values()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "colour?"
    assert seen["bob"]["error"]["code"] == -32602
    assert "another principal" in seen["bob"]["error"]["message"]
    assert seen["other_request"]["error"]["code"] == -32602
    assert "different request" in seen["other_request"]["error"]["message"]
    assert seen["parked"] == 1  # neither refused retry touched it
    assert seen["late"]["error"]["code"] == -32602
    assert "no longer parked" in seen["late"]["error"]["message"]


async def _two_replicas(
    backend: Any, adapters: str, stores_url: str | None, scenario: Any, **options: Any
) -> Any:
    """Run ``scenario(urls)`` against two gateways (replicas "a" and "b", their URLs
    in ``urls``) over one upstream, the example server, sharing stores: the Redis at
    ``stores_url``, else one in-memory event bus and owners store.  ``handshake``:
    the upstream spoken to at a handshake revision; the rest is config."""
    from sansio_mcp.runtime import MemoryEventBus, MemoryReplayCache, Stores, open_stores
    from sansio_mcp_apps.gateway.runtime import Gateway, MemoryParkedCallOwners, transport_opener

    handshake = options.pop("handshake", True)
    opener = _handshake_opener(adapters) if handshake else transport_opener(backend)
    async with backend.open_task_group() as group:
        config = await _example_upstream(backend, group, adapters, options)
        bus, owners = MemoryEventBus(), MemoryParkedCallOwners(backend.clock)
        namespace = f"test-{uuid.uuid4().hex}"  # tests share one redis-server
        urls: dict[str, str] = {}
        async with contextlib.AsyncExitStack() as stack:
            for replica in ("a", "b"):
                if stores_url is None:
                    stores = Stores(
                        "memory", bus, MemoryReplayCache(backend.clock), replica_id=replica
                    )
                    shared = {"stores": stores, "parked_owners": owners}
                else:
                    stores = await stack.enter_async_context(
                        open_stores(stores_url, backend, replica_id=replica, namespace=namespace)
                    )
                    shared = {"stores": stores}
                gateway = Gateway(config, backend, opener, **shared)
                group.start_soon(gateway.run)
                await wait_ready(backend, gateway)
                served = await serve_router_on(
                    backend, group, adapters, gateway.server, gateway.router()
                )
                urls[replica] = f"http://127.0.0.1:{served}/mcp"
            async with backend.fail_after(30):
                outcome = await scenario(urls)
            group.cancel()
    return outcome


async def _across_replicas(backend: Any, adapters: str, stores_url: str | None) -> Any:
    """Round 1 at a, each retry at b."""
    import httpx

    seen: dict[Any, Any] = {}

    async def scenario(urls: dict[str, str]) -> Any:
        call = {"name": "ex.survey", "arguments": {"questions": ["one?", "two?"]}}
        can = _meta({"elicitation": {}})
        async with httpx.AsyncClient(timeout=20) as http:
            got = await _post(http, urls["a"], "alice", {**call, "_meta": can})
            for round in range(3):
                seen[round] = got
                result = got.get("result", {})
                if result.get("resultType") != "input_required":
                    break
                (key,) = result["inputRequests"]
                message = result["inputRequests"][key]["params"]["message"]
                retry = {
                    **call,
                    "_meta": can,
                    "requestState": result["requestState"],
                    "inputResponses": {
                        key: {"action": "accept", "content": {"answer": "b: " + message}}
                    },
                }
                if round == 0:  # bob, at b, cannot reach alice's call at a either
                    seen["bob"] = await _post(http, urls["b"], "bob", retry)
                got = await _post(http, urls["b"], "alice", retry)
        return seen

    return await _two_replicas(backend, adapters, stores_url, scenario)


@pytest.mark.parametrize("stores", ["memory", "redis"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_retry_at_another_replica_reaches_the_parked_call(
    adapters: str, stores: str, request: pytest.FixtureRequest
) -> None:
    # Round 1 at replica a, each retry at b: b forwards it to a, which holds the call.
    backend = importlib.import_module(adapters).BACKEND
    url = None if stores == "memory" else str(request.getfixturevalue("redis_url"))
    seen = backend.run(_across_replicas, backend, adapters, url)
    assert [r["result"]["resultType"] for r in (seen[0], seen[1])] == ["input_required"] * 2
    assert seen[2]["result"]["structuredContent"] == {
        "answers": {"one?": "b: one?", "two?": "b: two?"},
        "completed": True,
    }
    assert seen["bob"]["error"]["code"] == -32602
    assert "another principal" in seen["bob"]["error"]["message"]


async def _bounded(backend: Any, adapters: str) -> Any:
    import httpx

    seen: dict[str, Any] = {}

    async def scenario(gateway: Any, url: str, example: Any) -> Any:
        can = _meta({"elicitation": {}})

        def call(question: str) -> dict[str, Any]:
            return {"name": "ex.elicit", "arguments": {"question": question}, "_meta": can}

        async with httpx.AsyncClient(timeout=20) as http:
            seen["first"] = await _post(http, url, "alice", call("one?"))
            seen["second"] = await _post(http, url, "alice", call("two?"))
            seen["bob"] = await _post(http, url, "bob", call("three?"))
            seen["parked"] = gateway.parking.parked()
        return seen

    return await _with_gateway(
        backend, adapters, scenario, max_parked_calls_per_principal=1, max_parked_calls=5
    )


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_parked_calls_are_bounded_per_principal(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    seen = backend.run(_bounded, backend, adapters)
    assert seen["first"]["result"]["resultType"] == "input_required"
    assert seen["second"]["error"]["code"] == -32603
    assert "max_parked_calls_per_principal" in seen["second"]["error"]["message"]
    assert seen["bob"]["result"]["resultType"] == "input_required"  # another principal
    assert seen["parked"] == 2


def test_replicas_of_the_command_share_parked_calls(tmp_path: Any, redis_url: str) -> None:
    """Two ``sansio-mcp gateway --store REDIS`` processes (one on Trio, one on
    asyncio) over a handshake-era stdio upstream: round 1 at the first, the retries
    at the second, which forwards them to the first."""

    import httpx

    from .conftest import gateway, handshake_example_connector

    config = {"connectors": {"old": handshake_example_connector()}, "api_keys": ["alice"]}
    keys = tmp_path / "state.keys"
    keys.write_text(secrets.token_hex(32) + "\n")
    store = ["--store", redis_url, "--state-key-file", str(keys)]
    with (
        gateway(config, "trio", tmp_path, *store, "--replica-id", "a") as a,
        gateway(config, "asyncio", tmp_path, *store, "--replica-id", "b") as b,
        httpx.Client(timeout=20) as http,
    ):
        call = {
            "name": "old.survey",
            "arguments": {"questions": ["one?", "two?"]},
            "_meta": _meta({"elicitation": {}}),
        }
        headers = HEADERS | STATELESS | {"mcp-method": "tools/call", "mcp-name": "old.survey"}
        headers["authorization"] = "Bearer alice"
        url, params, answers = a, call, []
        for _ in range(3):
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            got = http.post(url, json=body, headers=headers)
            answer = _decode(got)
            assert "result" in answer, answer
            result = answer["result"]
            if result.get("resultType") != "input_required":
                break
            ((key, asked),) = result["inputRequests"].items()
            answers.append(asked["params"]["message"])
            response = {"action": "accept", "content": {"answer": "via b"}}
            params = {**call, "requestState": result["requestState"]}
            params["inputResponses"] = {key: response}
            url = b
    assert answers == ["one?", "two?"]
    assert result["structuredContent"] == {
        "answers": {"one?": "via b", "two?": "via b"},
        "completed": True,
    }


async def _handshake_answer_elsewhere(backend: Any, adapters: str, stores_url: str | None) -> Any:
    """A handshake-era client's call at a, asked a question on its POST's stream
    (relay_questions_to_handshake_clients); its answer POSTed to b."""
    import httpx

    seen: dict[str, Any] = {}
    headers = HEADERS | {"mcp-protocol-version": "2025-06-18", "authorization": "Bearer alice"}

    async def scenario(urls: dict[str, str]) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "ex.elicit", "arguments": {"question": "colour?"}},
        }
        async with (
            httpx.AsyncClient(timeout=20) as http,
            http.stream("POST", urls["a"], json=body, headers=headers) as stream,
        ):
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "elicitation/create":
                    seen["question_id"] = message["id"]
                    answer = {"action": "accept", "content": {"answer": "red, via b"}}
                    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                    wrong = await http.post(
                        urls["b"], json=reply, headers=headers | {"authorization": "Bearer bob"}
                    )
                    seen["wrong_key"] = wrong.status_code  # accepted there, dropped at a
                    posted = await http.post(urls["b"], json=reply, headers=headers)
                    seen["posted"] = posted.status_code
                elif message.get("id") == 7:
                    seen["result"] = message["result"]
                    break
        return seen

    return await _two_replicas(
        backend,
        adapters,
        stores_url,
        scenario,
        handshake=False,
        relay_questions_to_handshake_clients=True,
    )


@pytest.mark.parametrize("stores", ["memory", "redis"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_handshake_clients_answer_at_another_replica_reaches_its_question(
    adapters: str, stores: str, request: pytest.FixtureRequest
) -> None:
    # Before, b answered 404 and the call at a hung until its client gave up.
    backend = importlib.import_module(adapters).BACKEND
    url = None if stores == "memory" else str(request.getfixturevalue("redis_url"))
    seen = backend.run(_handshake_answer_elsewhere, backend, adapters, url)
    assert seen["question_id"].startswith("gateway-")
    assert seen["wrong_key"] == seen["posted"] == 202
    assert seen["result"]["structuredContent"] == {"action": "accept", "answer": "red, via b"}


async def _ends_while_parked(backend: Any) -> Any:
    from sansio_mcp_apps.gateway.runtime import ParkingLimits, ParkingLot

    lot = ParkingLot(backend, ParkingLimits(timeout=60))

    async def work(call: Any) -> dict[str, Any]:
        async with backend.move_on_after(0.1):  # the upstream gives up its question
            await lot.ask(call, "roots/list", {})
        return {"content": []}

    async with backend.open_task_group() as group:
        group.start_soon(lot.run)
        while not lot.running:
            await backend.sleep(0)
        call = lot.start("alice", ("t", {}), work)
        question = await lot.next_step(call)
        asked = (question.method if question else None, len(lot))
        async with backend.fail_after(10):
            while len(lot):
                await backend.sleep(0.01)
        group.cancel()
    return asked, lot.get(call.id)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_call_that_ends_while_parked_is_forgotten(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    asked, left = backend.run(_ends_while_parked, backend)
    assert asked == ("roots/list", 1)
    assert left is None


async def _client_leaves(backend: Any, adapters: str) -> Any:
    import httpx

    seen: dict[str, Any] = {}

    async def scenario(gateway: Any, url: str, example: Any) -> Any:
        call = {"name": "ex.slow", "arguments": {"seconds": 120, "steps": 2}}
        async with httpx.AsyncClient(timeout=20) as http, backend.open_task_group() as calls:
            calls.start_soon(_post, http, url, "alice", {**call, "_meta": _meta({})})
            while not len(gateway.parking):  # the upstream call runs in the lot
                await backend.sleep(0.01)
            seen["running"] = len(gateway.parking)
            calls.cancel()  # the client goes away
        while len(gateway.parking):
            await backend.sleep(0.01)
        seen["left"] = len(gateway.parking)
        return seen

    return await _with_gateway(backend, adapters, scenario)


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_client_that_leaves_releases_its_call(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    assert backend.run(_client_leaves, backend, adapters) == {"running": 1, "left": 0}


class _DownOwners:
    """A parked-call owners store whose Redis is down."""

    async def record(self, call_id: str, replica_id: str, ttl: float) -> None:
        from sansio_mcp.runtime import StoreUnavailable

        raise StoreUnavailable("redis://127.0.0.1:1/0", "cannot connect (refused)")

    async def owner(self, call_id: str) -> str | None:
        raise AssertionError("not asked: nothing was parked")


async def _store_down(backend: Any, adapters: str) -> Any:
    import httpx

    from sansio_mcp.runtime import Stores
    from sansio_mcp_apps.gateway.runtime import Gateway

    async with backend.open_task_group() as group:
        config = await _example_upstream(backend, group, adapters, {})
        stores = Stores.memory(backend.clock, replica_id="a")
        gateway = Gateway(
            config, backend, _handshake_opener(adapters), stores=stores, parked_owners=_DownOwners()
        )
        group.start_soon(gateway.run)
        await wait_ready(backend, gateway)
        port = await serve_router_on(backend, group, adapters, gateway.server, gateway.router())
        call = {"name": "ex.elicit", "arguments": {"question": "colour?"}}
        async with backend.fail_after(30), httpx.AsyncClient(timeout=20) as http:
            url = f"http://127.0.0.1:{port}/mcp"
            got = await _post(http, url, "alice", {**call, "_meta": _meta({"elicitation": {}})})
            added = await _post(
                http,
                url,
                "alice",
                {"name": "ex.add", "arguments": {"a": 1, "b": 2}, "_meta": _meta({})},
            )
            while len(gateway.parking):
                await backend.sleep(0.01)
        group.cancel()
    return got, added


@pytest.mark.parametrize("adapters", ADAPTERS)
def test_a_store_down_fails_the_parking_round_precisely(adapters: str) -> None:
    backend = importlib.import_module(adapters).BACKEND
    got, added = backend.run(_store_down, backend, adapters)
    assert got["error"]["code"] == -32603
    assert "the store redis://127.0.0.1:1/0 is unavailable" in got["error"]["message"]
    assert added["result"]["structuredContent"] == {"sum": 3}  # plain calls go on
