"""The registry of servers: registering (from the agent or a config file),
unregistering, and listing them with their status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from sansio_mcp import ALL_REVISIONS, STATELESS_REVISIONS

from ._failures import Failure, Refused
from ._fields import FieldProblem
from ._host_state import HostState, ServerRecord
from ._link_lifecycle import LinkLifecycle
from ._link_states import LinkTrigger
from ._messages import (
    MCPServerListRequest,
    MCPServerListResponse,
    MCPServerRegisterRequest,
    MCPServerUnregisterRequest,
    MCPServerUnregisterResponse,
)
from ._models import A2EErrorCode, MCPErrorCode, MCPServerConfig, MCPServerStatus, MCPTransport

__all__ = ["Registry"]

_STATUSES = tuple(status.value for status in MCPServerStatus)


class Registry:
    """Adds and removes servers; ``links`` connects and disconnects them."""

    def __init__(self, state: HostState, links: LinkLifecycle) -> None:
        self._state = state
        self._links = links

    def on_server_list(self, request: MCPServerListRequest) -> None:
        state = self._state
        wanted = request.status_filter
        if wanted and wanted not in _STATUSES:
            raise Refused(
                Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    f"unknown status {wanted!r}: use one of {', '.join(_STATUSES)} (or empty)",
                    {"field": "status_filter"},
                )
            )
        servers = [
            state.info(s).to_dict()
            for s in state.servers.values()
            if not wanted or s.status == wanted
        ]
        state.send(MCPServerListResponse(**state.envelope(), req_id=request.id, servers=servers))

    def parse_config(self, raw: MCPServerConfig | Mapping[str, Any]) -> MCPServerConfig | Failure:
        """A server's config checked, with its id (a fresh one when it has none)."""
        servers = self._state.servers
        try:
            config = (
                raw
                if isinstance(raw, MCPServerConfig)
                else MCPServerConfig.from_dict(raw, prefix="config.")
            )
        except FieldProblem as problem:
            return Failure(
                A2EErrorCode.SCHEMA_VIOLATION, f"invalid config: {problem}", problem.detail
            )
        problems = config.problems()
        version = config.protocol_version
        if config.transport == MCPTransport.SSE and (
            version in ("stateless", "modern") or version in STATELESS_REVISIONS
        ):
            problems.append(
                FieldProblem(
                    "config.protocol_version",
                    "a handshake revision",
                    version,
                    message="the legacy HTTP+SSE transport has no stateless (2026-07-28) era",
                )
            )
        if version not in ("auto", "handshake", "stateless", "legacy", "modern", *ALL_REVISIONS):
            problems.append(
                FieldProblem(
                    "config.protocol_version",
                    "auto, handshake, stateless or a revision",
                    version,
                    message=f"unknown protocol_version {version!r}",
                )
            )
        if problems:
            return Failure(
                A2EErrorCode.SCHEMA_VIOLATION,
                "invalid config: " + "; ".join(str(p) for p in problems),
                {"problems": [p.detail | {"message": str(p)} for p in problems]},
            )
        server_id = config.server_id
        # A server given up on may be registered again (the way back with
        # auto_reconnect off): the new registration takes its place.
        if server_id and server_id in servers and not servers[server_id].given_up:
            return Failure(
                A2EErrorCode.SCHEMA_VIOLATION,
                f"a server with id {server_id!r} is already registered",
                {"field": "config.server_id", "server_id": server_id, "reason": "duplicate"},
            )
        if not server_id:
            while not server_id or server_id in servers:
                server_id = self._state.new_id()[:8]
            config = attrs.evolve(config, server_id=server_id)
        return config

    def on_register(self, request: MCPServerRegisterRequest) -> None:
        parsed = self.parse_config(request.config)
        if isinstance(parsed, Failure):
            raise Refused(parsed)
        self.add(parsed, request)

    def add(
        self, config: MCPServerConfig, request: MCPServerRegisterRequest | None
    ) -> ServerRecord:
        """Keep a server and connect it; ``request`` is answered once it is ready."""
        server = ServerRecord(config=config, server_id=config.server_id, registering=request)
        self._state.servers[server.server_id] = server
        self._links.connect(server)
        return server

    def on_unregister(self, request: MCPServerUnregisterRequest) -> None:
        state = self._state
        server = state.servers.get(request.server_id)
        if server is None:
            raise Refused(state.not_found(request.server_id))
        self.remove(server, "unregistered by the agent")
        state.send(
            MCPServerUnregisterResponse(
                **state.envelope(), req_id=request.id, ok=True, server_id=server.server_id
            )
        )

    def remove(self, server: ServerRecord, reason: str) -> None:
        state = self._state
        server.reconnect_at = None
        state.servers.pop(server.server_id, None)
        if server.registering is not None:
            request, server.registering = server.registering, None
            state.reply_failure(
                request,
                Failure(
                    MCPErrorCode.MCP_SERVER_UNAVAILABLE,
                    f"server {server.server_id!r} was removed before it was ready: {reason}",
                    {"server_id": server.server_id},
                ),
            )
        if server.link is not None:
            self._links.drop(server.link, reason, LinkTrigger.REMOVED)

    def remove_all(self, reason: str) -> None:
        for server in list(self._state.servers.values()):
            self.remove(server, reason)
