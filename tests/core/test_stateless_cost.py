"""What a stateless request reuses instead of recomputing (issue 37), and that
what it reuses follows changes to the server."""

from __future__ import annotations

import ast
import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import NEED_DATA, LocalProtocolError, ServerSession, _http_headers
from sansio_mcp._exchange import json_error as _json_error
from sansio_mcp._stateless import parse_request_meta
from sansio_mcp.http import HTTPRequest, StreamableHTTPServer
from sansio_mcp.runtime import Server
from sansio_mcp.runtime import _server as runtime_server

STATELESS = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def _schema(header: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": header}},
    }


def _call(machine: StreamableHTTPServer, header: str, request_id: int) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "t", "arguments": {"region": "eu"}, "_meta": META},
    }
    headers = {
        "host": "127.0.0.1",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "t",
        f"mcp-param-{header}": "eu",
    }
    exchange = machine.handle(HTTPRequest("POST", "/mcp", headers, json.dumps(body).encode()))
    exchange.disconnected()
    return exchange.status


def test_header_params_walked_once_per_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    schemas = {"t": _schema("Region")}
    machine = StreamableHTTPServer(ServerSession, tool_input_schema=schemas.get)
    walks = []
    real = _http_headers.x_mcp_header_problems

    def counting(schema: Any) -> list[str]:
        walks.append(schema)
        return real(schema)

    monkeypatch.setattr(_http_headers, "x_mcp_header_problems", counting)
    for i in range(3):
        assert _call(machine, "Region", i) != 400
    assert len(walks) == 1
    # The tool registered again, with another header: its new schema is walked.
    schemas["t"] = _schema("Zone")
    assert _call(machine, "Region", 10) == 400  # Mcp-Param-Zone is now required
    assert _call(machine, "Zone", 11) != 400
    assert len(walks) == 2
    # The tool removed: no header of it is required any more.
    del schemas["t"]
    assert _call(machine, "Other", 12) != 400
    assert machine.header_params._cache == {}


def test_session_capabilities_follow_the_server() -> None:
    server = Server("s")
    assert "prompts" not in server.create_session().capabilities

    @server.prompt()
    def hello() -> str:
        return "hi"

    first, second = server.create_session(), server.create_session()
    assert first.capabilities == server.capabilities
    assert "prompts" in first.capabilities
    # Each session's capabilities are its own objects.
    first.capabilities["prompts"]["listChanged"] = False
    assert second.capabilities["prompts"] == {"listChanged": True}
    assert server.create_session().capabilities["prompts"] == {"listChanged": True}
    server.logging = False
    assert "logging" not in server.create_session().capabilities
    server.logging = True
    assert "logging" in server.create_session().capabilities


def test_session_key_unique_and_stable() -> None:
    sessions = [ServerSession() for _ in range(50)]
    keys = {s.key for s in sessions}
    assert len(keys) == 50
    assert all(s.key == s.key for s in sessions)


def test_a_session_copy_has_the_settings_and_bookkeeping_of_its_own() -> None:
    template = ServerSession(
        capabilities={"tools": {"listChanged": True}},
        server_info={"name": "s", "version": "1"},
        instructions="read me",
        max_message_size=1234,
    )
    copy = template._fresh_copy()
    # Every attribute a built session has, a copy has too.
    assert set(vars(ServerSession())) <= set(vars(copy))
    assert (copy.capabilities, copy.info, copy.instructions, copy.max_message_size) == (
        template.capabilities,
        template.info,
        "read me",
        1234,
    )
    copy.capabilities["tools"]["listChanged"] = False
    copy.info["name"] = "other"
    assert template.capabilities["tools"] == {"listChanged": True}
    assert template.info["name"] == "s"
    # Nor does a change to the original reach a copy, made before or after it.
    second = template._fresh_copy()
    template.capabilities["tools"]["listChanged"] = "changed"
    template.capabilities["logging"] = {}
    assert second.capabilities == {"tools": {"listChanged": True}}
    assert copy.capabilities == {"tools": {"listChanged": False}}
    assert template._fresh_copy().capabilities["tools"] == {"listChanged": "changed"}
    for name in ("_events", "_outbox", "_requests", "subscriptions", "_listens"):
        assert getattr(copy, name) is not getattr(template, name), name
    # A used session is not copied.
    copy.receive_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    with pytest.raises(LocalProtocolError, match="only a fresh session is copied"):
        copy._fresh_copy()
    # Nor is one that asked something of its peer (a request of ours on the wire).
    asking = template._fresh_copy()
    asking.send_request("ping", None, now=0.0)
    with pytest.raises(LocalProtocolError, match="only a fresh session is copied"):
        asking._fresh_copy()


def test_server_sessions_follow_its_name_and_instructions() -> None:
    server = Server("s", instructions="first")
    assert server.create_session().instructions == "first"
    server.instructions = "second"
    server.title = "Titled"
    session = server.create_session()
    assert (session.instructions, session.info["title"]) == ("second", "Titled")
    assert server.create_session(max_message_size=99).max_message_size == 99


def _named(name: str) -> dict[str, Any]:
    params = {"name": name, "_meta": META}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    ("tool", "header", "problem"),
    [
        ("echo", "echo", None),
        ("a\tb", "a\tb", None),  # a tab may be carried as it is
        ("caf\u00e9", "caf\u00e9", None),
        ("caf\u00e9", "=?base64?Y2Fmw6k=?=", None),
        # Looks like the body, but it is a sentinel: decoded, it does not match.
        ("=?base64?YQ==?=", "=?base64?YQ==?=", "does not match the request body"),
        ("a\nb", "a\nb", "contains invalid characters"),
        ("echo", "=?base64?!!?=", "is not base64 of UTF-8 text"),
        ("echo", "Echo", "does not match the request body"),
    ],
)
def test_header_fast_comparison_keeps_every_rule(
    tool: str, header: str, problem: str | None
) -> None:
    """A header equal to the body's string is taken at once only when nothing in it
    needs a check (no control character, no base64 sentinel)."""
    headers = {
        "MCP-Protocol-Version": STATELESS,  # any case
        "mcp-method": "tools/call",
        "Mcp-Name": header,
    }
    mismatch = _http_headers.validate_request_headers(headers, _named(tool))
    if problem is None:
        assert mismatch is None
    else:
        assert mismatch is not None and problem in mismatch.message
        assert mismatch.message.startswith("the Mcp-Name header")
    del headers["Mcp-Name"]
    missing = _http_headers.validate_request_headers(headers, _named(tool))
    assert missing is not None and missing.message == "the Mcp-Name header is required"


def _advertised(session: ServerSession) -> tuple[Any, ...]:
    return (
        session.capabilities,
        session.info,
        session.instructions,
        session.supported_versions,
        vars(session.cache_hints),
        session.task_visible,
    )


def _tool(server: Server, name: str, task: str | None = None) -> None:
    @server.tool(name, task=task)
    def run() -> str:
        return name


_CHANGES = st.sampled_from(
    [
        "add tool",
        "add task tool",
        "pop tool",
        "del tool",
        "clear tools",
        "update tools",
        "setdefault tool",
        "ior tools",
        "popitem tools",
        "add prompt",
        "add completed prompt",
        "add completed template",
        "add resource",
        "assign plain tools",
        "mutate plain tools",
        "assign own registry",
        "toggle logging",
        "toggle handshake tasks",
        "retitle",
        "rename",
        "reinstruct",
    ]
)


def _change(server: Server, change: str, i: int) -> None:
    tools = server.tools
    if change == "add tool":
        _tool(server, f"t{i}")
    elif change == "add task tool":
        _tool(server, f"t{i}", task="optional")
    elif change == "pop tool" and tools:
        tools.pop(next(iter(tools)))
    elif change == "del tool" and tools:
        del tools[next(iter(tools))]
    elif change == "clear tools":
        tools.clear()
    elif change in ("update tools", "setdefault tool", "ior tools"):
        donor = Server("donor")
        _tool(donor, f"u{i}", task="required" if i % 2 else None)
        tool = donor.tools[f"u{i}"]
        if change == "update tools":
            tools.update({tool.name: tool})
        elif change == "setdefault tool":
            tools.setdefault(tool.name, tool)
        else:
            tools |= {tool.name: tool}
    elif change == "popitem tools" and tools:
        tools.popitem()
    elif change == "add prompt":

        @server.prompt(f"p{i}")
        def prompt() -> str:
            return "p"

    elif change == "add completed prompt":

        @server.prompt(f"cp{i}", completers={"topic": lambda value: [value]})
        def completed_prompt(topic: str) -> str:
            return topic

    elif change == "add completed template":

        @server.resource_template(f"mem://t{i}/{{name}}", completers={"name": lambda v: [v]})
        def completed_template(name: str) -> str:
            return name

    elif change == "add resource":

        @server.resource(f"mem://r{i}")
        def resource() -> str:
            return "r"

    elif change == "assign plain tools":
        server.tools = dict(tools)
    elif change == "mutate plain tools" and tools:
        # In place, uncounted when server.tools is a plain dict: the slow basis sees it.
        tools.pop(next(iter(tools)))
    elif change == "assign own registry":
        fresh = Server("fresh")
        server.tools = fresh.tools  # another server's registry: not counted by this one
    elif change == "toggle logging":
        server.logging = not server.logging
    elif change == "toggle handshake tasks":
        server.handshake_tasks = not server.handshake_tasks
    elif change == "retitle":
        server.title = f"T{i}"
    elif change == "rename":
        server.name = f"n{i}"
    elif change == "reinstruct":
        server.instructions = f"i{i}"


@settings(max_examples=150, deadline=None)
@given(st.lists(_CHANGES, max_size=12))
def test_a_copied_session_is_the_one_built_after_any_changes(changes: list[str]) -> None:
    """The template a stateless request's session is copied from is made again when
    anything it derives from changed (counted changes, or its inputs read in full when
    a registry is a plain dict): a copy always advertises what a session built from
    scratch would."""
    server = Server("s")
    for i, change in enumerate(changes):
        _change(server, change, i)
        assert _advertised(server.create_session()) == _advertised(server._build_session({}))


@settings(max_examples=60, deadline=None)
@given(st.lists(_CHANGES, max_size=6), st.lists(_CHANGES, min_size=1, max_size=6))
def test_a_shallow_copy_of_a_server_advertises_its_own_changes(
    before: list[str], after: list[str]
) -> None:
    """``copy.copy`` shares the original's registries (whose changes count on the
    original): the copy still makes sessions advertising what it has now."""
    server = Server("s")
    for i, change in enumerate(before):
        _change(server, change, i)
    server.create_session()
    duplicate = copy.copy(server)
    for i, change in enumerate(after, start=len(before)):
        _change(duplicate, change, i)
        assert _advertised(duplicate.create_session()) == _advertised(duplicate._build_session({}))


def test_a_registered_entrys_completers_cannot_be_edited_in_place() -> None:
    """A session template is made again when a registry changes, not when an entry in
    it is edited: a prompt's or a template's completers are read-only once registered
    (register the entry again to change them), so no session advertises stale
    completions."""
    server = Server("s")

    @server.resource_template("mem://t/{name}")
    def template(name: str) -> str:
        return name

    assert "completions" not in server.create_session().capabilities
    with pytest.raises(TypeError):
        server.templates["mem://t/{name}"].completers["name"] = lambda v: [v]  # type: ignore[index]
    assert "completions" not in server.create_session().capabilities

    given_completers = {"topic": lambda value: [value]}

    @server.prompt("p", completers=given_completers)
    def prompt(topic: str) -> str:
        return topic

    # The caller's own dict stays theirs: changing it changes nothing registered.
    given_completers["other"] = lambda value: []
    assert list(server.prompts["p"].completers) == ["topic"]
    assert server.create_session().capabilities["completions"] == {}


def test_registry_changes_are_counted_without_reading_the_registries() -> None:
    server = Server("s")
    _tool(server, "a")
    before = server._session_basis()
    assert isinstance(before, int)
    server.tools.pop("a")
    assert server._session_basis() != before
    # A plain dict's changes are not counted: the basis reads what it derives from.
    server.tools = {}
    assert isinstance(server._session_basis(), tuple)
    server.tools = Server("other").tools
    assert isinstance(server._session_basis(), tuple)


def test_the_values_whose_headers_skip_the_character_checks_need_none() -> None:
    """A header equal to a protocol version or a request method is taken without the
    checks for control characters and the base64 sentinel: none of them has either."""
    assert {STATELESS, "tools/call", "server/discover"} <= _http_headers._PLAIN_VALUES
    for value in _http_headers._PLAIN_VALUES:
        assert value.isprintable() and not value.startswith("=?"), value
        assert not _http_headers._CONTROL.search(value)
        assert _http_headers.decode_header_value(value) == value


# Most examples well formed (served), the rest each wrong in one way or more.
_VERSIONS = st.sampled_from([STATELESS] * 5 + ["2025-11-25", "1999-01-01", 7])
_ABSENT: Any = object()


@st.composite
def _stateless_posts(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, Any]]:
    """A stateless POST's headers and body: a _meta valid or not in each field, and
    headers that mirror the body or not."""
    meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": draw(_VERSIONS)}
    fields = {
        "io.modelcontextprotocol/clientCapabilities": [{}, {}, {}, {"elicitation": {}}, None, "x"],
        "io.modelcontextprotocol/clientInfo": [_ABSENT, {"name": "a", "version": "1"}, {"n": 1}],
        "io.modelcontextprotocol/logLevel": [_ABSENT, "info", "loud"],
    }
    for key, choices in fields.items():
        value = draw(st.sampled_from(choices))
        if value is not _ABSENT:
            meta[key] = value
    method = draw(
        st.sampled_from(["tools/call"] * 3 + ["tools/list", "ping", "server/discover", 5])
    )
    params: dict[str, Any] = {"_meta": meta}
    if draw(st.booleans()):
        params["name"] = draw(st.sampled_from(["t", "other", "é"]))
        params["arguments"] = {"region": draw(st.sampled_from(["eu", 3, None]))}
    body = {"jsonrpc": "2.0", "id": draw(st.integers(0, 3) | st.just("s")), "method": method}
    body["params"] = params
    jsonrpc = draw(st.sampled_from(["2.0"] * 8 + ["1.0", None]))
    if jsonrpc != "2.0":  # no JSON-RPC 2.0 message: refused the general way
        body["jsonrpc"] = jsonrpc
        if jsonrpc is None:
            del body["jsonrpc"]
    headers = {
        "host": "127.0.0.1",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    mirrored = {
        "mcp-protocol-version": meta["io.modelcontextprotocol/protocolVersion"],
        "mcp-method": method,
        "mcp-name": params.get("name"),
        "mcp-param-region": params.get("arguments", {}).get("region"),
    }
    for key, value in mirrored.items():
        choice = draw(st.sampled_from(["as is"] * 8 + ["other", "absent", "Cased", "base64"]))
        if choice == "other":
            headers[key] = "x"
        elif choice == "as is" and value is not None:
            headers[key] = str(value)
        elif choice == "Cased" and value is not None:  # a name in another case
            headers[key.title()] = str(value)
        elif choice == "base64" and value is not None:  # the same value, encoded
            encoded = base64.b64encode(str(value).encode()).decode()
            headers[key] = f"=?base64?{encoded}?="
    return headers, body


def _general_stateless(machine: StreamableHTTPServer, request: HTTPRequest) -> Any:
    """A stateless POST served as before the router read its _meta: the headers
    checked from the body alone, the session reading the _meta itself."""
    message = json.loads(request.body)
    found = machine.header_params.of(message)
    mismatch = _http_headers.validate_request_headers(request.headers, message, found=found)
    if mismatch is not None:
        return _json_error(400, message.get("id"), mismatch.code, mismatch.message)
    return machine.single_requests.serve_stateless(
        machine.new_session(), message, machine.json_response, machine.max_unread
    )


def _outcome(exchange: Any) -> tuple[Any, ...]:
    """What an exchange and its session show the client and the application."""
    session = exchange.session
    events = []
    if session is not None:
        while (event := session.next_event()) is not NEED_DATA:
            events.append(repr(event))
    return exchange.status, dict(exchange.headers), exchange.take(), events


@settings(max_examples=400, deadline=None)
@given(_stateless_posts())
def test_the_meta_read_by_the_router_serves_as_the_session_reading_it(
    post: tuple[dict[str, str], dict[str, Any]],
) -> None:
    """The router reads a stateless request's _meta once, for its header check and
    for the session (``_receive_stateless``): the same answer, status and events as
    the headers checked from the body and the session reading the _meta itself."""
    headers, body = post
    schemas = {"t": _schema("Region")}

    def machine() -> StreamableHTTPServer:
        def session() -> ServerSession:
            return ServerSession(capabilities={"tools": {}})

        return StreamableHTTPServer(session, tool_input_schema=schemas.get)

    request = HTTPRequest("POST", "/mcp", headers, json.dumps(body).encode())
    assert _outcome(machine().handle(request)) == _outcome(_general_stateless(machine(), request))


def _stateless_call(request_id: Any, method: str = "tools/call", **params: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {"_meta": meta, **params},
    }


def _used(how: str, trace: list[Any]) -> ServerSession:
    session = ServerSession(capabilities={"tools": {}})
    if how == "id in use":
        session.receive_message(_stateless_call(1, name="t"))
    elif how == "cancelled":
        session.receive_message(_stateless_call(1, name="t"))
        cancel = {"requestId": 1}  # (a cancelled id may not be used again)
        session.receive_message(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
        )
    elif how == "listening":
        listen = _stateless_call(1, "subscriptions/listen", notifications={})
        session.receive_message(listen)
    elif how == "closed":
        session.close()
    elif how == "traced":
        session.tracer = lambda *what: trace.append(what)
    return session


@pytest.mark.parametrize("how", ["id in use", "cancelled", "listening", "closed", "traced"])
def test_a_stateless_request_on_a_used_session_takes_the_general_way(how: str) -> None:
    """``_receive_stateless`` takes a request straight to the stateless era's rules only
    on a session with nothing in the way: on one with the id in use (a request, a
    subscription), a cancelled request, closed, or traced, the same as receive_message."""
    message = _stateless_call(1, name="t")
    meta = parse_request_meta(message["params"])
    outcomes = []
    for direct in (True, False):
        trace: list[Any] = []
        session = _used(how, trace)
        if direct:
            session._receive_stateless(message, meta)
        else:
            session.receive_message(message)
        events = []
        while (event := session.next_event()) is not NEED_DATA:
            events.append(repr(event))
        outcomes.append((session.messages_to_send(), events, trace))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] != ([], [], [])


def test_type_checkers_do_not_see_the_servers_setattr() -> None:
    """``Server.__setattr__`` (which counts changes) is defined only at run time: a class
    with a visible ``__setattr__`` lets mypy accept any attribute name, and a misspelled
    setting (``server.instrutions = ...``) must stay a type error."""
    source = Path(runtime_server.__file__).read_text()
    (server_class,) = (
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == "Server"
    )
    visible = [
        node.name
        for node in server_class.body
        if isinstance(node, ast.FunctionDef) and node.name == "__setattr__"
    ]
    hidden = [
        function.name
        for node in server_class.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "not TYPE_CHECKING"
        for function in node.body
        if isinstance(function, ast.FunctionDef)
    ]
    assert visible == [] and hidden == ["__setattr__"]
    assert "__setattr__" in vars(Server)
