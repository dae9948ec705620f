"""2025-11-25 handshake sessions (``Mcp-Session-Id``) through nginx in front of 2 and 3
replicas of ``sansio-mcp example-server`` on one Redis store, plain round-robin with no
affinity: the official Python SDK client, the TypeScript SDK v2 client and this
library's own client (Trio and asyncio) initialize,
list the tools, call tools and answer elicitations (asked on one replica, answered at
another) for several rounds.  The negative control: without a shared store the
session is unknown to the second replica (404)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp
import pytest
from mcp import types as sdk
from mcp.client.streamable_http import streamable_http_client
from nginx_service import Nginx, nginx_in_front
from peers import NPM, REPO, node_for
from replica_service import example_replicas, write_key_file

from sansio_mcp.runtime import ClientHandlers
from sansio_mcp_apps.example_server import TOOL_NAMES

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

HANDSHAKE = "2025-11-25"
ROUNDS = 3
#: Seconds for one SDK session, start to end.
BUDGET = 90
TS_CLIENT = Path(__file__).with_name("ts_handshake_round_robin_client.mjs")


def run_python_sdk(nginx: Nginx) -> list[str]:
    """ROUNDS rounds of tools/list, add, elicit and sample; the questions asked."""
    asked: list[str] = []

    async def elicitation(context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        asked.append(params.message)
        return sdk.ElicitResult(action="accept", content={"answer": f"sdk: {params.message}"})

    async def sampling(context: Any, params: sdk.CreateMessageRequestParams) -> Any:
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text="forty-two"),
            model="replica-test-model",
        )

    async def session() -> None:
        with anyio.fail_after(BUDGET):
            async with mcp.Client(
                streamable_http_client(f"{nginx.base}/mcp"),
                mode="legacy",
                elicitation_callback=elicitation,
                sampling_callback=sampling,
            ) as client:
                assert client.protocol_version == HANDSHAKE
                for n in range(ROUNDS):
                    assert {t.name for t in (await client.list_tools()).tools} == set(TOOL_NAMES)
                    added = await client.call_tool("add", {"a": n, "b": 1})
                    assert added.structured_content == {"sum": n + 1}
                    elicited = await client.call_tool("elicit", {"question": f"round {n}?"})
                    assert elicited.structured_content == {
                        "action": "accept",
                        "answer": f"sdk: round {n}?",
                    }
                    sampled = await client.call_tool("sample", {"prompt": "6 x 7?"})
                    assert "".join(getattr(c, "text", "") for c in sampled.content) == "forty-two"

    anyio.run(session, backend="asyncio")
    return asked


def run_own_client(nginx: Nginx, backend: str) -> list[str]:
    """This library's client on ``backend``: ROUNDS rounds, as the SDK's; the questions."""
    if backend == "trio":
        from trio_adapters import BACKEND
        from trio_adapters.http_client import open_http_client
    else:
        from asyncio_adapters import BACKEND  # type: ignore[assignment]
        from asyncio_adapters.http_client import open_http_client  # type: ignore[assignment]
    asked: list[str] = []

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"answer": f"own: {params['message']}"}}

    def sampling(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}

    handlers = ClientHandlers(elicitation=elicitation, sampling=sampling)

    async def session() -> None:
        async with BACKEND.fail_after(BUDGET):
            async with open_http_client(
                f"{nginx.base}/mcp", protocol_version=HANDSHAKE, handlers=handlers
            ) as client:
                assert client.protocol_version == HANDSHAKE
                for n in range(ROUNDS):
                    tools = await client.list_tools()
                    assert {t["name"] for t in tools} == set(TOOL_NAMES)
                    added = await client.call_tool("add", {"a": n, "b": 1})
                    assert added["structuredContent"] == {"sum": n + 1}
                    elicited = await client.call_tool("elicit", {"question": f"round {n}?"})
                    assert elicited["structuredContent"]["answer"] == f"own: round {n}?"
                    sampled = await client.call_tool("sample", {"prompt": "6 x 7?"})
                    assert sampled["content"][0]["text"] == "42"

    BACKEND.run(session)
    return asked


def run_ts_client(nginx: Nginx) -> dict[str, Any]:
    node = node_for(NPM / "client" / "package.json")
    done = subprocess.run(
        [node, str(TS_CLIENT), f"{nginx.base}/mcp", str(ROUNDS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BUDGET,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize("count", [2, 3])
def test_sdk_clients_keep_a_handshake_session_across_round_robin_replicas(
    count: int, redis_url: str, tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])
    store = ["--store", redis_url]
    with (
        example_replicas(tmp_path, [ring] * count, extra=store) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        asked = run_python_sdk(nginx)
        assert asked == [f"round {n}?" for n in range(ROUNDS)]
        for backend in ("trio", "asyncio"):
            assert run_own_client(nginx, backend) == [f"round {n}?" for n in range(ROUNDS)]
        report = run_ts_client(nginx)
        assert report["protocolVersion"] == HANDSHAKE, report
        assert report["asked"] == [f"round {n}?" for n in range(ROUNDS)]
        for n, done in enumerate(report["rounds"]):
            assert set(done["tools"]) == set(TOOL_NAMES), done
            assert done["add"]["structuredContent"] == {"sum": n + 1}, done
            assert done["elicit"]["structuredContent"] == {
                "action": "accept",
                "answer": f"ts: round {n}?",
            }, done
        # Every replica served the sessions (nginx kept no affinity).
        assert set(nginx.upstreams()) == {r.upstream for r in replicas}
        # The TS client's DELETE ended its session at every replica.
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-session-id": report["sessionId"],
            "mcp-protocol-version": HANDSHAKE,
        }
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for replica in replicas:
            gone = httpx.post(replica.url, json=ping, headers=headers, timeout=30)
            assert gone.status_code == 404, (replica.replica_id, gone.text)


def test_without_a_shared_store_the_second_replica_does_not_know_the_session(
    tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])
    with (
        example_replicas(tmp_path, [ring, ring]) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        url = f"{nginx.base}/mcp"
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "control", "version": "0"},
            },
        }
        begun = httpx.post(url, json=initialize, headers=headers, timeout=30)
        assert begun.status_code == 200
        session = {
            **headers,
            "mcp-session-id": begun.headers["mcp-session-id"],
            "mcp-protocol-version": HANDSHAKE,
        }
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        statuses = [httpx.post(url, json=ping, headers=session, timeout=30).status_code]
        statuses.append(httpx.post(url, json=ping, headers=session, timeout=30).status_code)
        assert sorted(statuses) == [200, 404]  # the replica that began it, and the other
        assert len(set(nginx.upstreams())) == 2
