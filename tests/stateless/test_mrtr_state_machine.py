"""A Hypothesis state machine for multi round-trip requests (2026-07-28 MRTR).

An in-memory stateless :class:`ClientSession` and :class:`ServerSession` exchange
NDJSON lines through two queues that deliver in any order.  Rules send
requests, let the server answer (complete, ``input_required`` with or without
``inputRequests`` / ``requestState``, errors, progress), let the client provide
or fail input, cancel (also between rounds) and advance the clock.  The model
predicts the exact events every delivery must produce, so the checks are:

* every logical request (the id ``send_request`` returned) ends exactly once,
  unless the client cancelled it, and then nothing more is reported for it;
* events always carry the original id, whatever round the wire is on;
* ``requestState`` comes back exactly as the server sent it (and only then);
* every retry uses a JSON-RPC id never used before;
* ``max_input_rounds`` ends a chain with :class:`InputRoundsExceeded`;
* ``pending_requests`` / ``open_requests`` match the model, and are empty once
  everything settled; neither side ever reports a protocol violation.

Example-based tests at the end pin the same properties on fixed scenarios.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import event as note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from sansio_mcp import (
    CancelRequested,
    ClientSession,
    ErrorCode,
    LocalProtocolError,
    MCPError,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    RequestTimeout,
    ResponseReceived,
    ServerSession,
    SessionState,
)
from sansio_mcp._errors import InputRoundsExceeded
from sansio_mcp._events import InputRequired

from .helpers import (
    CLIENT_CAPS,
    ELICIT_REQUEST,
    ROOTS_REQUEST,
    SAMPLING_REQUEST,
    SERVER_CAPS,
    answers_for,
    drain,
    lines,
)

MAX_ROUNDS = 2
PARAMS: dict[str, dict[str, Any] | None] = {
    "tools/call": {"name": "t", "arguments": {"x": [1, "ü"]}},
    "prompts/get": {"name": "p", "arguments": {"a": "b"}},
    "resources/read": {"uri": "file:///r"},
    "tools/list": None,
}
COMPLETE: dict[str, dict[str, Any]] = {
    "tools/call": {"content": [{"type": "text", "text": "ok"}]},
    "prompts/get": {"messages": []},
    "resources/read": {"contents": []},
    "tools/list": {"tools": []},
}
MRTR = ("tools/call", "prompts/get", "resources/read")
TRICKY_STATES = [
    "",
    " padded ",
    'quo"te\\back\\slash',
    "ünïcødé ✓ 😀",
    "=?base64?aGk=?=",
    "line\nbreak\ttab\u0000nul",
    "x" * 300,
]

states = st.one_of(st.sampled_from(TRICKY_STATES), st.text(max_size=12))
input_requests = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.sampled_from([ELICIT_REQUEST, SAMPLING_REQUEST, ROOTS_REQUEST]),
    min_size=1,
    max_size=3,
)


@attrs.define
class Logical:
    """One request as the application sees it, across all its rounds."""

    id: Any
    method: str
    params: dict[str, Any] | None
    progress: bool
    deadline: float | None
    wire: Any
    status: str = "wire"  # wire | paused | ended | cancelled
    rounds: int = 1
    asked: dict[str, Any] = attrs.field(factory=dict)
    state: str | None = None
    ends: int = 0


def summary(event: Any) -> tuple[Any, ...]:
    """An event as comparable data (RequestFailed's error is eq=False)."""
    if isinstance(event, RequestFailed):
        return ("failed", event.request_id, event.method, type(event.error), int(event.error.code))
    if isinstance(event, ResponseReceived):
        return ("response", event.request_id, event.method, event.result)
    if isinstance(event, InputRequired):
        return (
            "input",
            event.request_id,
            event.method,
            event.input_requests,
            event.request_state,
            event.round,
        )
    if isinstance(event, ProgressReceived):
        return ("progress", event.request_id, event.progress_token, event.progress, event.total)
    return ("other", event)


class MRTRMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.client = ClientSession(
            mode="modern", capabilities=CLIENT_CAPS, max_input_rounds=MAX_ROUNDS
        )
        self.server = ServerSession(capabilities=SERVER_CAPS)
        self.client.start()
        self.server.receive_data(self.client.data_to_send())
        assert drain(self.server) == []
        self.client.receive_data(self.server.data_to_send())
        drain(self.client)
        assert self.client.state is SessionState.STATELESS
        self.to_server: list[bytes] = []
        self.to_client: list[bytes] = []
        self.logical: dict[Any, Logical] = {}
        self.by_wire: dict[Any, Logical] = {}
        self.used_wire_ids: set[Any] = {0}  # server/discover
        #: server-side: open wire id -> (method, next progress value, expected requestState)
        self.server_open: dict[Any, list[Any]] = {}
        self.expected_state: dict[Any, str | None] = {}

    # Plumbing -----------------------------------------------------------------

    def client_output(self) -> list[dict[str, Any]]:
        chunks = lines(self.client.data_to_send())
        self.to_server.extend(chunks)
        return [json.loads(c) for c in chunks]

    def server_output(self) -> None:
        self.to_client.extend(lines(self.server.data_to_send()))

    def expect_client_events(self, expected: list[tuple[Any, ...]]) -> None:
        events = drain(self.client)
        assert not [e for e in events if isinstance(e, ProtocolViolation)], events
        got = [summary(e) for e in events]
        for item in got:
            note(f"client event: {item[0]} {item[3].__name__ if item[0] == 'failed' else ''}")
        assert sorted(map(repr, got)) == sorted(map(repr, expected)), (got, expected)
        for item in got:
            if item[0] in ("failed", "response"):
                logical = self.logical[item[1]]
                logical.ends += 1
                assert logical.ends == 1, f"request {logical.id} ended twice"

    def live(self, *statuses: str) -> list[Logical]:
        return [lg for lg in self.logical.values() if lg.status in statuses]

    @initialize(data=st.data())
    def some_requests_in_flight(self, data: st.DataObject) -> None:
        """Start with a few MRTR-capable requests already at the server."""
        for _ in range(data.draw(st.integers(0, 3), label="initial requests")):
            self.send(data, methods=MRTR)
            self.deliver_server_line(len(self.to_server) - 1)

    # Rules ----------------------------------------------------------------------------
    # Few, broad rules: Hypothesis switches whole rules off per example (swarm
    # testing), and a chain needs sending, delivering and both sides acting.

    @precondition(lambda self: len(self.live("wire", "paused")) < 4)
    @rule(data=st.data())
    def send(self, data: st.DataObject, methods: tuple[str, ...] = tuple(PARAMS)) -> None:
        method = data.draw(st.sampled_from(sorted(methods)), label="method")
        progress = data.draw(st.booleans(), label="progress")
        timeout = data.draw(st.sampled_from([None, None, None, 5.0, 30.0]), label="timeout")
        params = PARAMS[method]
        rid = self.client.send_request(
            method, params, now=self.now, timeout=timeout, progress=progress
        )
        assert rid not in self.used_wire_ids
        self.used_wire_ids.add(rid)
        deadline = None if timeout is None else self.now + timeout
        logical = Logical(rid, method, params, progress, deadline, rid)
        self.logical[rid] = logical
        self.by_wire[rid] = logical
        [message] = self.client_output()
        assert message["id"] == rid and message["method"] == method
        assert "requestState" not in message["params"]
        assert "inputResponses" not in message["params"]
        self.expected_state[rid] = None
        self.expect_client_events([])

    @precondition(lambda self: self.to_server or self.to_client or self.server_open)
    @rule(data=st.data())
    def network(self, data: st.DataObject) -> None:
        """Deliver one queued message (either way, in any order), or let the
        server act on an open request."""
        choices = [q for q in (self.to_server, self.to_client) if q]
        if self.server_open:
            choices.append("server")
        choice = data.draw(st.sampled_from(choices), label="what")
        if choice == "server":
            self.server_acts(data)
            return
        index = data.draw(st.integers(0, len(choice) - 1), label="index")
        if choice is self.to_server:
            self.deliver_server_line(index)
        else:
            self.deliver_client_line(index)

    @precondition(lambda self: self.live("wire", "paused"))
    @rule(data=st.data())
    def user_acts(self, data: st.DataObject) -> None:
        """The client application provides input, fails it, or cancels (on the
        wire or between rounds)."""
        action = data.draw(
            st.sampled_from(["provide", "provide", "fail", "cancel"]), label="action"
        )
        paused = self.live("paused")
        if action != "cancel" and paused:
            logical = data.draw(st.sampled_from(paused), label="paused request")
            if action == "provide":
                self.provide(logical)
            else:
                self.fail(logical)
        else:
            candidates = paused if paused and data.draw(st.booleans(), label="paused") else None
            candidates = candidates or self.live("wire", "paused")
            logical = data.draw(st.sampled_from(candidates), label="request")
            self.cancel(logical, data.draw(st.sampled_from([None, "bored"]), label="reason"))

    def server_acts(self, data: st.DataObject) -> None:
        """Answer an open request: complete, input_required, error; or report progress."""
        wire = data.draw(st.sampled_from(self.open_ids()), label="server request")
        action = data.draw(
            st.sampled_from(["complete", "input", "input", "input", "error", "progress"]),
            label="action",
        )
        asked = data.draw(st.one_of(st.none(), input_requests), label="inputRequests")
        state = data.draw(st.one_of(st.none(), states), label="requestState")
        code = data.draw(st.sampled_from([-32603, -32602, -32601, -32000, 1234]), label="code")
        method, step, token = self.server_open[wire]
        if action == "progress" and token is not None:
            assert self.server.send_progress(wire, step, 10)
            self.server_open[wire][1] += 1
        elif action == "input" and method in MRTR:
            self.needs_input(wire, asked, state)
        elif action == "error":
            del self.server_open[wire]
            self.server.respond_error(wire, code, "boom")
        else:
            del self.server_open[wire]
            self.server.respond(wire, COMPLETE[method])
        self.server_output()

    @precondition(lambda self: self.live("paused"))
    @rule(data=st.data())
    def whole_round(self, data: st.DataObject) -> None:
        """Provide input and carry the retry straight through (deep chains)."""
        logical = data.draw(st.sampled_from(self.live("paused")), label="paused request")
        finish = data.draw(st.sampled_from([False, False, True]), label="finish")
        asked = data.draw(st.one_of(st.none(), input_requests), label="inputRequests")
        state = data.draw(st.one_of(st.none(), states), label="requestState")
        self.provide(logical)
        self.deliver_server_line(len(self.to_server) - 1)
        if finish:
            method = self.server_open.pop(logical.wire)[0]
            self.server.respond(logical.wire, COMPLETE[method])
        else:
            self.needs_input(logical.wire, asked, state)
        self.server_output()
        self.deliver_client_line(len(self.to_client) - 1)

    @precondition(lambda self: any(lg.deadline is not None for lg in self.live("wire", "paused")))
    @rule(data=st.data())
    def tick(self, data: st.DataObject) -> None:
        """Advance the clock and let the client expire requests."""
        self.now += data.draw(st.sampled_from([0.5, 1.0, 4.0]), label="dt")
        due = [
            lg
            for lg in self.live("wire", "paused")
            if lg.deadline is not None and lg.deadline <= self.now
        ]
        expired = self.client.handle_timer(self.now)
        assert sorted(expired) == sorted(lg.id for lg in due)
        on_wire = {lg.wire for lg in due if lg.status == "wire"}
        for lg in due:
            lg.status = "ended"
        out = self.client_output()
        assert {m["params"]["requestId"] for m in out} == on_wire
        assert all(m["method"] == "notifications/cancelled" for m in out)
        self.expect_client_events(
            [("failed", lg.id, lg.method, RequestTimeout, int(RequestTimeout.code)) for lg in due]
        )

    # Actions ----------------------------------------------------------------------------

    def provide(self, logical: Logical) -> None:
        responses = answers_for(logical.asked)
        wire = self.client.provide_input(logical.id, responses)
        assert wire not in self.used_wire_ids, "a retry reused a JSON-RPC id"
        self.used_wire_ids.add(wire)
        logical.wire, logical.status = wire, "wire"
        logical.rounds += 1
        self.by_wire[wire] = logical
        [message] = self.client_output()
        params = message["params"]
        assert message["id"] == wire and message["method"] == logical.method
        for key, value in (logical.params or {}).items():
            assert params[key] == value, "the retry changed the original params"
        assert params["inputResponses"] == responses
        if logical.state is None:
            assert "requestState" not in params
        else:
            assert params["requestState"] == logical.state
        if logical.progress:
            assert params["_meta"]["progressToken"] == logical.id
        self.expected_state[wire] = logical.state
        self.expect_client_events([])

    def fail(self, logical: Logical) -> None:
        self.client.fail_input(logical.id, MCPError(ErrorCode.INTERNAL_ERROR, "no handler"))
        logical.status = "ended"
        assert self.client_output() == []
        self.expect_client_events(
            [("failed", logical.id, logical.method, type(MCPError(-32603)), -32603)]
        )

    def cancel(self, logical: Logical, reason: str | None) -> None:
        was = logical.status
        self.client.cancel(logical.id, reason)
        logical.status = "cancelled"
        out = self.client_output()
        if was == "paused":
            note("cancel between rounds")
            assert out == [], "nothing is on the wire between rounds"
        else:
            [message] = out
            assert message["method"] == "notifications/cancelled"
            assert message["params"]["requestId"] == logical.wire
        self.expect_client_events([])

    def needs_input(self, wire: Any, asked: dict[str, Any] | None, state: str | None) -> None:
        if asked is None and state is None:
            state = "load-shed"
        result: dict[str, Any] = {"resultType": "input_required"}
        if asked is not None:
            result["inputRequests"] = asked
        if state is not None:
            result["requestState"] = state
        del self.server_open[wire]
        self.server.respond(wire, result)

    def deliver_server_line(self, index: int) -> None:
        chunk = self.to_server.pop(index)
        message = json.loads(chunk)
        self.server.receive_data(chunk)
        events = drain(self.server)
        assert not [e for e in events if isinstance(e, ProtocolViolation)], events
        if "id" in message:
            [received] = events
            assert isinstance(received, RequestReceived)
            assert received.request_id == message["id"] and received.meta is not None
            assert received.params.get("requestState") == self.expected_state[message["id"]]
            self.server_open[received.request_id] = [received.method, 1, received.progress_token]
        else:
            cancelled = message["params"]["requestId"]
            if cancelled in self.server_open:
                assert events == [CancelRequested(cancelled, message["params"].get("reason"))]
                del self.server_open[cancelled]
            else:
                note("server ignores a cancel for an unknown or answered request")
                assert events == []  # unknown or already answered: ignored

    def deliver_client_line(self, index: int) -> None:
        chunk = self.to_client.pop(index)
        message = json.loads(chunk)
        expected: list[tuple[Any, ...]] = []
        if message.get("method") == "notifications/progress":
            params = message["params"]
            logical = self.logical[params["progressToken"]]
            if logical.status in ("wire", "paused"):
                expected.append(
                    ("progress", logical.id, logical.id, params["progress"], params.get("total"))
                )
        else:
            logical = self.by_wire[message["id"]]
            if logical.status == "wire":
                assert logical.wire == message["id"]
                expected.append(self.outcome(logical, message))
            else:
                note(f"late response dropped ({logical.status})")
        self.client.receive_data(chunk)
        self.expect_client_events(expected)

    def outcome(self, logical: Logical, message: dict[str, Any]) -> tuple[Any, ...]:
        """What the client must report for the response ``message``."""
        if "error" in message:
            logical.status = "ended"
            code = message["error"]["code"]
            return ("failed", logical.id, logical.method, type(MCPError(code)), code)
        result = message["result"]
        if result["resultType"] == "complete":
            logical.status = "ended"
            return ("response", logical.id, logical.method, result)
        if logical.rounds > MAX_ROUNDS:  # the limit counts rounds the client answered
            logical.status = "ended"
            note("max_input_rounds reached")
            return (
                "failed",
                logical.id,
                logical.method,
                InputRoundsExceeded,
                int(InputRoundsExceeded.code),
            )
        logical.status = "paused"
        logical.asked = result.get("inputRequests", {})
        logical.state = result.get("requestState")
        note(f"input_required round {logical.rounds}")
        return ("input", logical.id, logical.method, logical.asked, logical.state, logical.rounds)

    def open_ids(self, *methods: str) -> list[Any]:
        return sorted(w for w, (m, _, _) in self.server_open.items() if not methods or m in methods)

    # Invariants ----------------------------------------------------------------------

    @invariant()
    def bookkeeping_matches_the_model(self) -> None:
        assert self.client.pending_requests == {lg.id for lg in self.live("wire", "paused")}
        assert self.server.open_requests == set(self.server_open)
        for lg in self.logical.values():
            assert lg.ends == (1 if lg.status == "ended" else 0), lg

    def settle(self) -> None:
        """Let everything finish: fail paused chains, deliver, answer, repeat."""
        for _ in range(4 * MAX_ROUNDS + 4):
            for logical in self.live("paused"):
                self.client.fail_input(logical.id, MCPError(ErrorCode.INTERNAL_ERROR, "end"))
                logical.status = "ended"
                self.expect_client_events(
                    [("failed", logical.id, logical.method, MCPError(-32603).__class__, -32603)]
                )
            while self.to_server:
                self.deliver_server_line(0)
            for wire in self.open_ids():
                method = self.server_open.pop(wire)[0]
                self.server.respond(wire, COMPLETE[method])
            self.server_output()
            while self.to_client:
                self.deliver_client_line(0)
            if not (self.live("wire", "paused") or self.server_open or self.to_server):
                break
        assert self.client.pending_requests == frozenset()
        assert self.server.open_requests == frozenset()
        for lg in self.logical.values():
            assert lg.ends == (0 if lg.status == "cancelled" else 1), lg

    def teardown(self) -> None:
        # Skipped when a step already failed: a second failure here would hide it.
        if sys.exc_info()[0] is None:
            self.settle()


MRTRMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMRTR = MRTRMachine.TestCase


# ----------------------------------------------------------------- fixed scenarios


def _pair(**client_options: Any) -> tuple[ClientSession, ServerSession]:
    client_options.setdefault("capabilities", CLIENT_CAPS)
    client = ClientSession(mode="modern", **client_options)
    server = ServerSession(capabilities=SERVER_CAPS)
    client.start()
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    drain(client)
    return client, server


def _to_server(client: ClientSession, server: ServerSession) -> list[Any]:
    server.receive_data(client.data_to_send())
    return drain(server)


def _to_client(client: ClientSession, server: ServerSession) -> list[Any]:
    client.receive_data(server.data_to_send())
    return drain(client)


def test_max_input_rounds_bound() -> None:
    """``max_input_rounds=3``: three rounds are answered, the fourth ask fails."""
    client, server = _pair(max_input_rounds=3)
    rid = client.send_request("tools/call", {"name": "t"})
    rounds = []
    wire_requests = 0
    for _ in range(10):
        wire_requests += 1
        [received] = _to_server(client, server)
        server.respond(received.request_id, {"resultType": "input_required", "requestState": "s"})
        [event] = _to_client(client, server)
        if isinstance(event, RequestFailed):
            break
        rounds.append(event.round)
        client.provide_input(rid, {})
    assert rounds == [1, 2, 3] and wire_requests == 4
    assert isinstance(event, RequestFailed) and event.request_id == rid
    assert isinstance(event.error, InputRoundsExceeded)
    assert client.pending_requests == frozenset() and server.open_requests == frozenset()


def test_cancel_between_rounds_sends_nothing_and_drops_everything_after() -> None:
    client, server = _pair()
    rid = client.send_request("prompts/get", {"name": "p"}, progress=True)
    [received] = _to_server(client, server)
    server.send_progress(received.request_id, 1)
    server.respond(received.request_id, {"resultType": "input_required", "requestState": "s"})
    progress_line, response_line = lines(server.data_to_send())
    client.receive_data(response_line)
    [event] = drain(client)
    assert isinstance(event, InputRequired)
    client.cancel(rid)
    assert client.data_to_send() == b""
    client.receive_data(progress_line)  # late progress of the cancelled chain
    assert drain(client) == []
    assert client.pending_requests == frozenset()
    try:
        client.provide_input(rid, {})
    except Exception as exc:  # the chain is gone: nothing to retry
        assert "not waiting for input" in str(exc)
    else:
        raise AssertionError("provide_input after cancel must fail")


def test_late_response_after_cancel_on_the_wire_is_dropped() -> None:
    client, server = _pair()
    rid = client.send_request("tools/call", {"name": "t"})
    [received] = _to_server(client, server)
    server.respond(received.request_id, {"content": []})
    client.cancel(rid)  # crosses the response on the wire
    assert _to_server(client, server) == []  # the server already answered: ignored
    assert _to_client(client, server) == []
    assert client.pending_requests == frozenset() and server.open_requests == frozenset()


def test_timeout_spans_all_rounds_and_fires_while_paused() -> None:
    client, server = _pair()
    rid = client.send_request("tools/call", {"name": "t"}, now=0.0, timeout=10.0)
    [received] = _to_server(client, server)
    server.respond(received.request_id, {"resultType": "input_required", "requestState": "s"})
    [first] = _to_client(client, server)
    assert isinstance(first, InputRequired) and first.round == 1
    client.provide_input(rid, {})
    [retry] = _to_server(client, server)
    assert retry.params["requestState"] == "s"
    server.respond(retry.request_id, {"resultType": "input_required", "requestState": "s2"})
    [second] = _to_client(client, server)
    assert isinstance(second, InputRequired) and second.round == 2
    assert client.next_deadline() == 10.0
    assert client.handle_timer(9.9) == []
    assert client.handle_timer(10.0) == [rid]
    [failed] = drain(client)
    assert isinstance(failed, RequestFailed) and isinstance(failed.error, RequestTimeout)
    assert failed.request_id == rid
    assert client.data_to_send() == b""  # paused: nothing to cancel on the wire
    assert client.pending_requests == frozenset()


@pytest.mark.parametrize("params", ["oops", ["x"], 3])
def test_an_input_request_whose_params_are_no_object_is_refused_not_a_crash(params: Any) -> None:
    """A handler's (or, through a gateway, an upstream's) input_required asking with
    params that are no object cannot be sent: a LocalProtocolError naming it (it
    was an AttributeError, which took a whole gateway down), and the session goes on."""
    client, server = _pair()
    client.send_request("tools/call", {"name": "t"})
    [received] = _to_server(client, server)
    bad = {"a": {"method": "elicitation/create", "params": params}}
    with pytest.raises(LocalProtocolError, match="params of input request 'a' must be an object"):
        server.respond(received.request_id, {"resultType": "input_required", "inputRequests": bad})
    server.respond(received.request_id, {"content": [], "isError": False})
    [event] = _to_client(client, server)
    assert isinstance(event, ResponseReceived)


def test_a_result_whose_meta_is_no_object_is_refused_not_a_crash() -> None:
    client, server = _pair()
    client.send_request("tools/call", {"name": "t"})
    [received] = _to_server(client, server)
    with pytest.raises(LocalProtocolError, match="_meta must be an object"):
        server.respond(received.request_id, {"content": [], "_meta": "oops"})
    server.respond(received.request_id, {"content": [], "_meta": {"k": 1}})
    [event] = _to_client(client, server)
    assert isinstance(event, ResponseReceived) and event.result["_meta"]["k"] == 1


def test_an_input_request_invalid_in_itself_is_refused() -> None:
    """A form whose properties are no object (or a sampling request without
    messages) asks what no client can answer: not sent, and refused on receipt."""
    client, server = _pair()
    rid = client.send_request("tools/call", {"name": "t"})
    [received] = _to_server(client, server)
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": []}}
    for asked, problem in [
        ({"method": "elicitation/create", "params": form}, "needs an object 'properties'"),
        ({"method": "sampling/createMessage", "params": {"maxTokens": 5}}, "'messages'"),
    ]:
        result = {"resultType": "input_required", "inputRequests": {"a": asked}}
        with pytest.raises(LocalProtocolError, match=problem):
            server.respond(received.request_id, result)
    # A server that sends it anyway: the client fails the request, naming it.
    line = {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "input_required"}}
    line["result"]["inputRequests"] = {"a": {"method": "elicitation/create", "params": form}}
    client.receive_message(line)
    [event] = drain(client)
    assert isinstance(event, RequestFailed) and "'properties'" in event.error.message
