"""Shared helpers for the core (sans-IO) tests: drive sessions in memory."""

from __future__ import annotations

import json
from typing import Any

from sansio_mcp import (
    NEED_DATA,
    ClientSession,
    Event,
    ProtocolViolation,
    ServerSession,
    Session,
    SessionState,
)

ALL_CLIENT_CAPS: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
}
ALL_SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "logging": {},
    "completions": {},
}
CLIENT_INFO = {"name": "test-client", "version": "1.0"}


def drain(session: Session) -> list[Event]:
    """Every queued event, in order."""
    events: list[Event] = []
    while (event := session.next_event()) is not NEED_DATA:
        events.append(event)  # type: ignore[arg-type]
    return events


def wire(data: bytes) -> list[Any]:
    """Decode NDJSON output; every line must be JSON and end with a newline."""
    if not data:
        return []
    assert data.endswith(b"\n"), data
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def out(session: Session) -> list[Any]:
    """Take a session's queued output as decoded JSON values."""
    return wire(session.data_to_send())


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def request(id_: Any, method: str, params: Any = None) -> dict:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        obj["params"] = params
    return obj


def notification(method: str, params: Any = None) -> dict:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        obj["params"] = params
    return obj


def initialize_params(version: str, capabilities: dict | None = None) -> dict:
    return {
        "protocolVersion": version,
        "capabilities": capabilities if capabilities is not None else {},
        "clientInfo": CLIENT_INFO,
    }


def pump(src: Session, dst: Session) -> list[Any]:
    """Move everything ``src`` queued into ``dst``; return what moved (decoded)."""
    data = src.data_to_send()
    if data:
        dst.receive_data(data)
    return wire(data)


def make_pair(
    version: str | None = None,
    *,
    client_caps: dict | None = None,
    server_caps: dict | None = None,
    **server_kwargs: Any,
) -> tuple[ClientSession, ServerSession]:
    """A client and a server that completed the handshake (events drained)."""
    client = ClientSession(
        capabilities=ALL_CLIENT_CAPS if client_caps is None else client_caps,
        client_info=CLIENT_INFO,
        protocol_version=version,
    )
    server = ServerSession(
        capabilities=ALL_SERVER_CAPS if server_caps is None else server_caps, **server_kwargs
    )
    client.initialize()
    pump(client, server)
    pump(server, client)
    pump(client, server)
    assert client.state is SessionState.READY, client.state
    assert server.state is SessionState.READY, server.state
    drain(client)
    drain(server)
    return client, server


def ready_server(
    version: str = "2025-11-25",
    *,
    capabilities: dict | None = None,
    client_caps: dict | None = None,
    **kwargs: Any,
) -> ServerSession:
    """A ServerSession initialized by raw messages (no ClientSession involved)."""
    server = ServerSession(
        capabilities=ALL_SERVER_CAPS if capabilities is None else capabilities, **kwargs
    )
    server.receive_data(
        line(request("init", "initialize", initialize_params(version, client_caps)))
    )
    [response] = out(server)
    assert response["result"]["protocolVersion"] == version
    server.receive_data(line(notification("notifications/initialized")))
    assert server.state is SessionState.READY
    drain(server)
    return server


def violations(events: list[Event]) -> list[ProtocolViolation]:
    return [e for e in events if isinstance(e, ProtocolViolation)]
