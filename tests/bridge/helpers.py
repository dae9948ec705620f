"""Helpers for the bridge tests: a pure in-memory harness (a :class:`BridgeHost`
and scripted MCP servers over real NDJSON bytes, on a fake clock) and the MCP
JSON schemas."""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from sansio_mcp import NEED_DATA, RequestReceived, ServerSession
from sansio_mcp._events import CancelRequested, ResponseReceived
from sansio_mcp_apps.a2e import (
    A2EMessage,
    BridgeHost,
    ConnectServer,
    DisconnectServer,
    FlushServer,
    SendToAgent,
    decode,
    to_obj,
)
from sansio_mcp_testing.schemas import find_schema, missing_schema_message

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

Handler = Callable[["FakeServer", RequestReceived], Any]


# Schemas ---------------------------------------------------------------------------------


class Schema:
    """One MCP revision's JSON schema, with validators for its named definitions."""

    def __init__(self, revision: str) -> None:
        path = find_schema(revision)
        if path is None:
            pytest.skip(missing_schema_message(revision))
        self.revision = revision
        self.document = json.loads(path.read_text(encoding="utf-8"))
        self.defs: dict[str, Any] = self.document.get("$defs") or self.document["definitions"]
        key = "$defs" if "$defs" in self.document else "definitions"
        self.uri = f"urn:mcp-schema:{revision}"
        self._pointer = f"{self.uri}#/{key}/"
        self.registry = Registry().with_resource(self.uri, Resource.from_contents(self.document))
        self.validator_class = jsonschema.validators.validator_for(self.document)
        self.method_defs: dict[str, str] = {}
        for name, definition in self.defs.items():
            method = definition.get("properties", {}).get("method", {}).get("const")
            if (
                method is not None
                and name.endswith(("Request", "Notification"))
                and not name.startswith(("Client", "Server"))
            ):
                self.method_defs[method] = name

    @functools.cache  # noqa: B019 - one instance per revision
    def validator(self, name: str) -> Any:
        return self.validator_class({"$ref": self._pointer + name}, registry=self.registry)

    def errors(self, name: str, instance: Any) -> list[str]:
        return [
            f"{list(e.absolute_path)}: {e.message[:200]}"
            for e in self.validator(name).iter_errors(instance)
        ]

    def is_valid(self, name: str, instance: Any) -> bool:
        return bool(self.validator(name).is_valid(instance))

    def check_message(self, message: dict[str, Any]) -> None:
        """A JSON-RPC request or notification validates against its method's definition."""
        method = message["method"]
        name = self.method_defs[method]
        problems = self.errors(name, message)
        assert not problems, f"{self.revision} {method}: {json.dumps(message)[:500]}\n{problems}"


@functools.cache
def load_schema(revision: str) -> Schema:
    return Schema(revision)


# A scripted MCP server -----------------------------------------------------------------------


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


class FakeServer:
    """An MCP server made of canned lists and handlers, over a real ServerSession."""

    def __init__(
        self,
        *,
        tools: list[dict[str, Any]] | None = None,
        resources: list[dict[str, Any]] | None = None,
        templates: list[dict[str, Any]] | None = None,
        prompts: list[dict[str, Any]] | None = None,
        capabilities: dict[str, Any] | None = None,
        page_size: int = 100,
        name: str = "fake-server",
        versions: tuple[str, ...] = HANDSHAKE,
    ) -> None:
        self.tools = list(tools or [])
        self.resources = list(resources or [])
        self.templates = list(templates or [])
        self.prompts = list(prompts or [])
        caps = capabilities
        if caps is None:
            caps = {}
            if tools is not None:
                caps["tools"] = {"listChanged": True}
            if resources is not None or templates is not None:
                caps["resources"] = {"subscribe": True, "listChanged": True}
            if prompts is not None:
                caps["prompts"] = {"listChanged": True}
        self.capabilities = caps
        self.page_size = page_size
        self.name = name
        self.versions = versions
        self.handlers: dict[str, Handler] = {}
        self.session: ServerSession | None = None
        #: Every JSON-RPC message the bridge sent this server (all connections).
        self.received: list[dict[str, Any]] = []
        #: Requests left unanswered on purpose (a handler returned None).
        self.held: list[RequestReceived] = []
        #: Results of our own requests to the client, by id.
        self.answers: dict[Any, Any] = {}
        self.on_answer: dict[Any, Callable[[Any], None]] = {}
        self.refuse = False
        self.connections = 0
        self.subscribed: list[str] = []

    def new_session(self) -> ServerSession:
        self.connections += 1
        self.session = ServerSession(
            capabilities=self.capabilities,
            server_info={"name": self.name, "version": "9.9"},
            supported_versions=self.versions,
        )
        return self.session

    def _page(
        self, items: list[dict[str, Any]], key: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        start = int(params.get("cursor") or 0)
        page = items[start : start + self.page_size]
        result: dict[str, Any] = {key: page}
        if start + self.page_size < len(items):
            result["nextCursor"] = str(start + self.page_size)
        return result

    def handle(self, event: RequestReceived) -> Any:
        handler = self.handlers.get(event.method)
        if handler is not None:
            return handler(self, event)
        params = event.params
        if event.method == "tools/list":
            return self._page(self.tools, "tools", params)
        if event.method == "resources/list":
            return self._page(self.resources, "resources", params)
        if event.method == "resources/templates/list":
            return self._page(self.templates, "resourceTemplates", params)
        if event.method == "prompts/list":
            return self._page(self.prompts, "prompts", params)
        if event.method == "resources/subscribe":
            self.subscribed.append(params["uri"])
            return {}
        if event.method == "resources/read":
            return {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": "hi"}]}
        if event.method == "prompts/get":
            if not any(p["name"] == params["name"] for p in self.prompts):
                from sansio_mcp import MCPError

                return MCPError(-32602, f"unknown prompt {params['name']}")
            return {"messages": [{"role": "user", "content": text(f"prompt {params['name']}")}]}
        if event.method == "tools/call":
            return {"content": [text(f"called {params['name']}")]}
        from sansio_mcp import MCPError

        return MCPError(-32601, f"no {event.method}")

    def respond(self, event: RequestReceived, result: Any) -> None:
        from sansio_mcp import MCPError

        assert self.session is not None
        if isinstance(result, MCPError):
            self.session.respond_error(event.request_id, result)
        else:
            self.session.respond(event.request_id, result)

    def step(self) -> None:
        """Handle whatever the session has received."""
        assert self.session is not None
        while (event := self.session.next_event()) is not NEED_DATA:
            if isinstance(event, RequestReceived):
                result = self.handle(event)
                if result is None:
                    self.held.append(event)
                else:
                    self.respond(event, result)
            elif isinstance(event, ResponseReceived):
                self.answers[event.request_id] = event.result
                callback = self.on_answer.pop(event.request_id, None)
                if callback is not None:
                    callback(event.result)
            elif isinstance(event, CancelRequested):
                self.held = [h for h in self.held if h.request_id != event.request_id]
            else:
                failed = getattr(event, "error", None)
                if failed is not None and getattr(event, "request_id", None) is not None:
                    self.answers[event.request_id] = failed


# The harness ---------------------------------------------------------------------------------


class Harness:
    """A :class:`BridgeHost` whose actions are carried out in memory.

    Servers are found by ``config.cmd[0]`` (or ``config.url``) in ``servers``.
    Everything the agent gets is collected in :attr:`inbox`.
    """

    def __init__(self, **host_options: Any) -> None:
        counter = itertools.count(1)
        host_options.setdefault("new_id", lambda: f"{next(counter):032x}")
        host_options.setdefault("rng", random.Random(7))
        host_options.setdefault("ping_interval", None)
        self.host = BridgeHost(**host_options)
        self.now = 1_700_000_000.0
        self.servers: dict[str, FakeServer] = {}
        self.links: dict[int, FakeServer] = {}
        self.inbox: list[A2EMessage] = []
        #: Connections the harness leaves pending (not opened yet).
        self.hold_connect: set[str] = set()
        self.pending_connects: list[ConnectServer] = []
        self.disconnected: list[DisconnectServer] = []
        self.actions_seen: list[Any] = []
        self._ids = itertools.count(1)
        self._server_ids: dict[int, str] = {}
        self._sessions: dict[int, Any] = {}

    # Agent ---------------------------------------------------------------

    def send(self, message: A2EMessage | dict[str, Any]) -> list[A2EMessage]:
        """Feed one agent message; return what the agent got as a result."""
        before = len(self.inbox)
        self.host.receive_agent_message(message, self.now)
        self.run()
        return self.inbox[before:]

    def send_line(self, line: bytes) -> list[A2EMessage]:
        before = len(self.inbox)
        self.host.receive_agent_data(line, self.now)
        self.run()
        return self.inbox[before:]

    def request(self, cls: type[A2EMessage], **fields: Any) -> A2EMessage:
        """Send a request and return the one reply answering it."""
        message = cls(id=f"req{next(self._ids)}", ts=self.now, **fields)
        replies = [
            m
            for m in self.send(message)
            if getattr(m, "req_id", None) == message.id and m.type != "tool/event"
        ]
        assert len(replies) == 1, [to_obj(m) for m in self.inbox[-10:]]
        return replies[0]

    def reply_to(self, message_id: str) -> A2EMessage:
        replies = [
            m
            for m in self.inbox
            if getattr(m, "req_id", None) == message_id and m.type != "tool/event"
        ]
        assert len(replies) == 1, replies
        return replies[0]

    def of_type(self, cls: type[A2EMessage]) -> list[Any]:
        return [m for m in self.inbox if isinstance(m, cls)]

    # Servers -------------------------------------------------------------

    def add_server(self, key: str, server: FakeServer) -> FakeServer:
        self.servers[key] = server
        return server

    def register(self, server_id: str, key: str, **config: Any) -> A2EMessage:
        from sansio_mcp_apps.a2e import MCPServerRegisterRequest

        config = {"server_id": server_id, "cmd": [key], **config}
        return self.request(MCPServerRegisterRequest, config=config)

    def run(self) -> None:
        """Carry out actions until nothing moves."""
        for _ in range(10_000):
            assert self.host.internal_errors == []
            actions = self.host.actions()
            if not actions:
                return
            for action in actions:
                self.actions_seen.append(action)
                if isinstance(action, SendToAgent):
                    # Every message survives the wire.
                    again = decode(json.loads(json.dumps(to_obj(action.message))))
                    assert again == action.message, (again, action.message)
                    self.inbox.append(action.message)
                elif isinstance(action, ConnectServer):
                    self._connect(action)
                elif isinstance(action, FlushServer):
                    self._flush(action.connection)
                elif isinstance(action, DisconnectServer):
                    self.disconnected.append(action)
                    self.links.pop(action.connection, None)
        raise AssertionError("the harness did not settle")

    def _connect(self, action: ConnectServer) -> None:
        key = action.config.cmd[0] if action.config.cmd else action.config.url
        fake = self.servers.get(key)
        if key in self.hold_connect:
            self.pending_connects.append(action)
            return
        if fake is None or fake.refuse:
            self.host.connection_lost(action.connection, f"cannot start {key!r}", self.now)
            return
        fake.new_session()
        self.links[action.connection] = fake
        self._server_ids[action.connection] = action.server_id
        self._sessions[action.connection] = action.session
        self.host.connection_opened(action.connection, self.now)

    def _flush(self, conn: int) -> None:
        fake = self.links.get(conn)
        session = self._sessions.get(conn)
        if fake is None or session is None or fake.session is None:
            return
        for _ in range(100):
            data = session.data_to_send()
            if data:
                for line in data.splitlines():
                    fake.received.append(json.loads(line))
                fake.session.receive_data(data)
                fake.step()
            back = fake.session.data_to_send()
            if back:
                session.receive_data(back)
                self.host.connection_input(conn, self.now)
            if not data and not back:
                return

    def server_push(self, server_id: str, fn: Callable[[ServerSession], Any]) -> Any:
        """Let a server act on its own (notify, ask), then deliver what it sent."""
        conn = self.conn_of(server_id)
        fake = self.links[conn]
        assert fake.session is not None
        value = fn(fake.session)
        self._flush(conn)
        self.run()
        return value

    def answer_held(self, server_id: str, result: Any, index: int = 0) -> None:
        conn = self.conn_of(server_id)
        fake = self.links[conn]
        event = fake.held.pop(index)
        fake.respond(event, result)
        self._flush(conn)
        self.run()

    def conn_of(self, server_id: str) -> int:
        conns = [c for c, s in self._server_ids.items() if s == server_id and c in self.links]
        assert conns, f"{server_id} is not connected"
        return conns[-1]

    def kill(self, server_id: str, reason: str = "killed") -> None:
        """The server's transport dies (the process exits)."""
        conn = self.conn_of(server_id)
        self._sessions[conn].receive_data(b"")  # end of input
        self.host.connection_input(conn, self.now)
        self.host.connection_lost(conn, reason, self.now)
        self.links.pop(conn, None)
        self.run()

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.host.handle_timer(self.now)
        self.run()

    def advance_to_deadline(self) -> float:
        deadline = self.host.next_deadline()
        assert deadline is not None
        self.now = max(self.now, deadline)
        self.host.handle_timer(self.now)
        self.run()
        return deadline


def tool(name: str, **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"the {name} tool",
        "inputSchema": {"type": "object", **schema},
    }
