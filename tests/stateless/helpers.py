"""Shared helpers for the 2026-07-28 (stateless) tests.

* :class:`Schema` validates against ``$MCP_SCHEMA_DIR/<revision>/schema.json``
  (default ``../shared/mcp-schema`` next to the project root; never copied here).
* :class:`Link` joins a stateless :class:`ClientSession` and a :class:`ServerSession`
  in memory over real NDJSON bytes, records every message either side emits and,
  when given a :class:`Server`, answers the server's requests by running
  ``Server.handle(ctx)`` with :class:`HarnessContext`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from sansio_mcp import (
    NEED_DATA,
    ClientSession,
    Event,
    MCPError,
    ProtocolViolation,
    RequestId,
    RequestReceived,
    ServerSession,
    Session,
    SessionState,
)
from sansio_mcp._versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
)
from sansio_mcp.runtime._primitives import Cancellable, Signal
from sansio_mcp.runtime._server import Context, Server
from sansio_mcp_testing.schemas import find_schema, missing_schema_message

STATELESS = "2026-07-28"
PROJECT_ROOT = Path(__file__).resolve().parents[2]

CLIENT_CAPS: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
}
SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "logging": {},
    "completions": {},
}
CLIENT_INFO = {"name": "modern-test-client", "version": "1.0"}
SERVER_INFO = {"name": "modern-test-server", "version": "2.0", "title": "Modern test server"}

ELICIT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
ELICIT_REQUEST = {
    "method": "elicitation/create",
    "params": {"mode": "form", "message": "Your name?", "requestedSchema": ELICIT_SCHEMA},
}
SAMPLING_REQUEST = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
    },
}
ROOTS_REQUEST = {"method": "roots/list"}
#: A valid answer to each kind of input request, keyed by its method.
INPUT_ANSWERS: dict[str, dict[str, Any]] = {
    "elicitation/create": {"action": "accept", "content": {"name": "octocat"}},
    "sampling/createMessage": {
        "role": "assistant",
        "content": {"type": "text", "text": "hello"},
        "model": "test-model",
    },
    "roots/list": {"roots": [{"uri": "file:///work", "name": "work"}]},
}


def answers_for(input_requests: dict[str, Any]) -> dict[str, Any]:
    """Canned answers for every input request, keyed as asked."""
    return {key: INPUT_ANSWERS[req["method"]] for key, req in input_requests.items()}


# ------------------------------------------------------------------------- schema


class Schema:
    """One revision's schema, with validators for its named definitions."""

    def __init__(self, revision: str) -> None:
        path = find_schema(revision)
        if path is None:
            pytest.skip(missing_schema_message(revision))
        self.revision = revision
        self.document = json.loads(path.read_text(encoding="utf-8"))
        self.defs: dict[str, Any] = self.document["$defs"]
        self.uri = f"urn:mcp-schema:{revision}"
        self.registry = Registry().with_resource(self.uri, Resource.from_contents(self.document))
        self.validator_class = jsonschema.validators.validator_for(self.document)
        #: method name -> the Request / Notification definition that names it.
        self.method_defs: dict[str, str] = {}
        for name, definition in self.defs.items():
            method = definition.get("properties", {}).get("method", {}).get("const")
            if (
                method is not None
                and name.endswith(("Request", "Notification"))
                and not name.startswith(("Client", "Server"))  # the role-wide unions
            ):
                self.method_defs[method] = name

    @functools.cache  # noqa: B019 - one instance per revision, kept for the session
    def validator(self, name: str) -> Any:
        assert name in self.defs, f"{self.revision} has no definition {name}"
        return self.validator_class({"$ref": f"{self.uri}#/$defs/{name}"}, registry=self.registry)

    def validate(self, name: str, instance: Any) -> None:
        errors = sorted(self.validator(name).iter_errors(instance), key=lambda e: list(e.path))
        if errors:
            details = "\n".join(
                f"  at {list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5]
            )
            raise AssertionError(
                f"{self.revision}: {json.dumps(instance)[:800]}\n"
                f"does not validate against {name}:\n{details}"
            )

    def is_valid(self, name: str, instance: Any) -> bool:
        return bool(self.validator(name).is_valid(instance))


@functools.cache
def load_schema(revision: str = STATELESS) -> Schema:
    return Schema(revision)


# ------------------------------------------------------------------------ sessions


def drain(session: Session) -> list[Event]:
    """Every queued event, in order."""
    events: list[Event] = []
    while (event := session.next_event()) is not NEED_DATA:
        events.append(event)  # type: ignore[arg-type]
    return events


def lines(data: bytes) -> list[bytes]:
    """Split NDJSON output into its lines (each keeps its newline)."""
    assert not data or data.endswith(b"\n"), data
    return [chunk + b"\n" for chunk in data.split(b"\n")[:-1]]


def meta(
    version: str = STATELESS,
    capabilities: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A hand-written request ``_meta`` for the stateless revision."""
    out: dict[str, Any] = {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: {} if capabilities is None else capabilities,
        META_CLIENT_INFO: CLIENT_INFO,
    }
    out.update(extra)
    return out


def raw_request(id_: Any, method: str, params: Any = None) -> bytes:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        obj["params"] = params
    return json.dumps(obj).encode() + b"\n"


def raw_notification(method: str, params: Any = None) -> bytes:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        obj["params"] = params
    return json.dumps(obj).encode() + b"\n"


def violations(events: list[Event]) -> list[ProtocolViolation]:
    return [e for e in events if isinstance(e, ProtocolViolation)]


class HarnessHost:
    """A :class:`ContextHost` for tests: no I/O, no clock; server-to-client requests
    (handshake era only) are answered by ``answer`` and recorded in :attr:`sent`."""

    def __init__(
        self, answer: Callable[[str, dict[str, Any] | None], dict[str, Any]] | None = None
    ) -> None:
        self._answer = answer
        #: (method, params) of every request the handler sent the client.
        self.sent: list[tuple[str, dict[str, Any] | None]] = []

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request: RequestId | None = None,
    ) -> dict[str, Any]:
        self.sent.append((method, params))
        if self._answer is None:
            raise AssertionError(f"unexpected server-to-client request {method}")
        return self._answer(method, params)

    async def flush(self) -> None:
        pass  # the Link moves queued output when the test asks it to

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("handlers in these tests do not sleep")

    def now(self) -> float:
        return 0.0

    def new_signal(self) -> Signal:
        raise AssertionError("handlers in these tests do not wait")

    def start_cancellable(self, fn: Callable[[], Awaitable[Any]]) -> Cancellable:
        raise AssertionError("handlers in these tests start no tasks")


class HarnessContext(Context):
    """A handler context for tests, run by a :class:`HarnessHost` (``answer``
    answers its server-to-client requests; :attr:`sent` records them)."""

    def __init__(
        self,
        event: RequestReceived,
        session: ServerSession,
        *,
        now: float,
        answer: Callable[[str, dict[str, Any] | None], dict[str, Any]] | None = None,
    ) -> None:
        host = HarnessHost(answer)
        super().__init__(
            request_id=event.request_id,
            method=event.method,
            params=event.params,
            progress_token=event.progress_token,
            session=session,
            host=host,
            meta=event.meta,
            now=now,
        )
        #: (method, params) of every send_request the handler made.
        self.sent = host.sent


async def run_handler(
    app: Server, session: ServerSession, event: RequestReceived, now: float
) -> None:
    """Answer one request the way the adapters do: result, or the MCPError raised."""
    ctx = HarnessContext(event, session, now=now)
    try:
        result = await app.handle(ctx)
    except MCPError as error:
        session.respond_error(event.request_id, error)
    else:
        session.respond(event.request_id, result)


class Link:
    """A client and a server joined in memory (NDJSON bytes), recording every
    message each side emits as ``(sender, decoded message)``."""

    def __init__(
        self,
        client: ClientSession,
        server: ServerSession,
        app: Server | None = None,
        *,
        now: float = 1_000_000.0,
    ) -> None:
        self.client = client
        self.server = server
        self.app = app
        self.now = now
        self.emitted: list[tuple[str, Any]] = []
        #: server events other than the requests the app answered
        self.server_events: list[Event] = []

    def _move(self, sender: str, src: Session, dst: Session) -> None:
        data = src.data_to_send()
        for chunk in lines(data):
            self.emitted.append((sender, json.loads(chunk)))
        if data:
            dst.receive_data(data)

    def c2s(self) -> list[Event]:
        """Deliver the client's output; return the server's events."""
        self._move("client", self.client, self.server)
        return drain(self.server)

    def s2c(self) -> list[Event]:
        """Deliver the server's output; return the client's events."""
        self._move("server", self.server, self.client)
        return drain(self.client)

    def raw_to_server(self, data: bytes) -> list[Event]:
        """Hand-written bytes to the server (not recorded: we did not emit them)."""
        self.server.receive_data(data)
        return drain(self.server)

    async def serve(self) -> list[Event]:
        """Deliver the client's output, let the app answer, deliver the answers;
        return the client's events."""
        for event in self.c2s():
            if isinstance(event, RequestReceived) and self.app is not None:
                await run_handler(self.app, self.server, event, self.now)
            else:
                self.server_events.append(event)
        return self.s2c()

    def sent_by(self, sender: str) -> list[Any]:
        return [m for s, m in self.emitted if s == sender]


def stateless_client(**kwargs: Any) -> ClientSession:
    kwargs.setdefault("capabilities", CLIENT_CAPS)
    kwargs.setdefault("client_info", CLIENT_INFO)
    kwargs.setdefault("mode", "modern")
    return ClientSession(**kwargs)


def discovered(link: Link) -> Link:
    """Run server/discover over ``link``; the client ends STATELESS."""
    link.client.start()
    assert link.c2s() == []  # the core answers server/discover itself
    link.s2c()
    assert link.client.state is SessionState.STATELESS, link.client.state
    return link
