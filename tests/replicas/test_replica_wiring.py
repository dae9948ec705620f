"""What the replica options reach: the key ring and the opened stores end on the server
of each serving command, and on the Python API's objects alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replica_service import serving_command, write_key_file

from sansio_mcp import RequestStateSealer
from sansio_mcp.runtime import Server, Stores
from sansio_mcp_apps.a2a import parse_config as a2a_config
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import parse_config as gateway_config
from sansio_mcp_cli.main import _parse, _run
from trio_adapters import BACKEND


def ring_ids(*keys: bytes) -> tuple[str, ...]:
    return RequestStateSealer(keys).key_ids


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("command", ["example-server", "gateway", "a2a-bridge"])
def test_each_command_hands_its_ring_and_stores_to_its_server(
    command: str,
    backend: str,
    tmp_path: Path,
    keys: tuple[bytes, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sansio_mcp_cli.main import backend_named

    ring = write_key_file(tmp_path / "ring", *keys)
    args = [*serving_command(command, tmp_path), "--backend", backend]
    served: list[Server] = []

    async def serve_network(listener: Any, server: Server, *rest: Any) -> None:
        served.append(server)  # instead of listening: the server as it would be served

    transports = backend_named(backend)
    monkeypatch.setattr(transports, "serve_network", serve_network)
    parsed = _parse([*args, "--state-key-file", str(ring), "--replica-id", "replica-7"])
    assert _run(parsed, []) == 0
    (server,) = served
    assert server.sealer.key_ids == ring_ids(*keys)
    assert isinstance(server.stores, Stores)
    assert (server.stores.url, server.stores.replica_id) == ("memory", "replica-7")


async def test_the_python_api_takes_state_keys_and_stores(keys: tuple[bytes, bytes]) -> None:
    from sansio_mcp_apps.a2a.runtime import A2ABridge
    from sansio_mcp_apps.gateway.runtime import Gateway, transport_opener

    stores = Stores.memory(BACKEND.clock, replica_id="api")
    server = build_server(state_keys=keys, stores=stores)
    assert (server.sealer.key_ids, server.stores) == (ring_ids(*keys), stores)
    connector = {"transport": "http", "url": "http://127.0.0.1:1/mcp"}
    gateway = Gateway(
        gateway_config({"connectors": {"x": connector}}),
        BACKEND,
        transport_opener(BACKEND),
        state_keys=keys,
        stores=stores,
    )
    assert (gateway.server.sealer.key_ids, gateway.server.stores) == (ring_ids(*keys), stores)
    config = a2a_config({"agents": {"x": {"url": "http://127.0.0.1:1"}}})
    bridge = A2ABridge(config, BACKEND, state_keys=keys, stores=stores)
    try:
        assert (bridge.server.sealer.key_ids, bridge.server.stores) == (ring_ids(*keys), stores)
    finally:
        await bridge.aclose()
    # Without a ring each keeps a random key of its own, as before.
    assert build_server().sealer.key_ids != build_server().sealer.key_ids
