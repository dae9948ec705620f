"""Unit tests for the 2026-07-28 features: era probing (auto mode), stateless-only and
dual-era servers, sealed ``requestState``, ``Server.handle`` MRTR, the mirrored
HTTP headers (SEP-2243) and the client result cache (SEP-2549)."""

from __future__ import annotations

import base64
import json
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import (
    ClientSession,
    ErrorCode,
    HeaderMismatch,
    InvalidParams,
    LocalProtocolError,
    MCPError,
    NotificationReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    ServerSession,
    SessionInitialized,
    SessionState,
    UnsupportedProtocolVersion,
)
from sansio_mcp._cache import ResultCache
from sansio_mcp._events import InputRequired, RequestMeta, SubscriptionAcknowledged
from sansio_mcp._http_headers import (
    decode_header_value,
    encode_header_value,
    request_headers,
    validate_request_headers,
    x_mcp_header_problems,
)
from sansio_mcp._request_state import RequestStateSealer, request_binding
from sansio_mcp._stateless import CacheHints
from sansio_mcp._versions import (
    HANDSHAKE_REVISIONS,
    LATEST_HANDSHAKE_REVISION,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    REVISIONS,
    STATELESS_REVISIONS,
)
from sansio_mcp.runtime._server import Context, Server

from .helpers import (
    CLIENT_CAPS,
    ELICIT_SCHEMA,
    SERVER_CAPS,
    STATELESS,
    HarnessContext,
    Link,
    discovered,
    drain,
    lines,
    meta,
    raw_notification,
    raw_request,
    stateless_client,
    violations,
)

FUTURE = "2026-12-01"  # a made-up later stateless revision, patched in where needed


def legacy_only_server(**kwargs: Any) -> ServerSession:
    kwargs.setdefault("supported_versions", HANDSHAKE_REVISIONS)
    return ServerSession(capabilities=SERVER_CAPS, **kwargs)


def reply_error(client: ClientSession, code: int, data: Any = None) -> list[Any]:
    """Answer the client's only queued request with an error; return its events."""
    [chunk] = lines(client.data_to_send())
    request = json.loads(chunk)
    error: dict[str, Any] = {"code": code, "message": "no"}
    if data is not None:
        error["data"] = data
    client.receive_message({"jsonrpc": "2.0", "id": request["id"], "error": error})
    return drain(client)


def finish_handshake(link: Link) -> list[Any]:
    """Carry a queued initialize through; return the client's events."""
    link.c2s()
    events = link.s2c()
    link.c2s()  # notifications/initialized
    return events


@pytest.fixture
def future_revision(monkeypatch: pytest.MonkeyPatch) -> str:
    """A later stateless revision known to this process (not to default servers)."""
    monkeypatch.setitem(
        REVISIONS,  # type: ignore[arg-type]
        FUTURE,
        attrs.evolve(REVISIONS[STATELESS], name=FUTURE),
    )
    return FUTURE


# ----------------------------------------------------------------- auto-mode probing


def test_auto_probe_discover_result_goes_stateless() -> None:
    link = Link(stateless_client(mode="auto"), ServerSession(capabilities=SERVER_CAPS))
    start = link.client.start()
    assert link.c2s() == []  # the core answers server/discover itself
    events = link.s2c()
    [probe] = link.sent_by("client")
    assert probe["method"] == "server/discover"
    assert probe["params"]["_meta"][META_PROTOCOL_VERSION] == STATELESS
    assert [type(e) for e in events] == [SessionInitialized, ResponseReceived]
    assert events[0].protocol_version == STATELESS
    assert events[1].request_id == start and events[1].method == "server/discover"
    assert link.client.state is SessionState.STATELESS and link.client.is_stateless
    assert link.client.discovery == events[1].result
    assert link.server.state is SessionState.IDLE  # no session on the server side
    assert link.client.pending_requests == frozenset()


@pytest.mark.parametrize("code", [-32601, -32600, -32602, -32603, -32000, 4242])
def test_auto_probe_any_non_stateless_error_falls_back_to_initialize(code: int) -> None:
    client = stateless_client(mode="auto")
    start = client.start()
    assert reply_error(client, code) == []  # nothing to report yet: falling back
    assert client.state is SessionState.INITIALIZING and client.mode == "handshake"
    link = Link(client, legacy_only_server())
    events = finish_handshake(link)
    [initialize] = link.sent_by("client")[:1]
    assert initialize["method"] == "initialize" and initialize["id"] != start
    assert initialize["params"]["protocolVersion"] == LATEST_HANDSHAKE_REVISION
    assert [type(e) for e in events] == [SessionInitialized, ResponseReceived]
    assert events[1].request_id == start and events[1].method == "initialize"
    assert client.state is SessionState.READY and link.server.state is SessionState.READY
    assert client.revision is REVISIONS[LATEST_HANDSHAKE_REVISION]
    assert client.pending_requests == frozenset()


def test_auto_probe_against_a_real_legacy_only_server() -> None:
    """The legacy server answers server/discover with -32601; the client falls back."""
    server = legacy_only_server()
    link = Link(stateless_client(mode="auto"), server)
    start = link.client.start()
    refusal = link.c2s()
    assert [v.error.code for v in violations(refusal)] == [ErrorCode.METHOD_NOT_FOUND]
    assert link.s2c() == []
    events = finish_handshake(link)
    assert [m.get("method") for s, m in link.emitted if s == "client"] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
    ]
    assert isinstance(events[-1], ResponseReceived) and events[-1].request_id == start
    assert link.client.state is SessionState.READY and server.state is SessionState.READY
    # The handshake session works.
    link.client.send_request("tools/list")
    [received] = link.c2s()
    assert isinstance(received, RequestReceived) and received.meta is None


def test_auto_probe_timeout_falls_back_and_drops_the_late_answer() -> None:
    client = stateless_client(mode="auto")
    start = client.start(now=100.0, timeout=5.0)
    [probe] = lines(client.data_to_send())
    assert client.next_deadline() == 105.0
    assert client.handle_timer(104.0) == [] and client.data_to_send() == b""
    client.handle_timer(105.0)
    assert drain(client) == []  # the probe's expiry is not a failure in auto mode
    [initialize] = [json.loads(c) for c in lines(client.data_to_send())]
    assert initialize["method"] == "initialize"
    # The legacy server's late answer to the probe is dropped silently.
    late = {
        "jsonrpc": "2.0",
        "id": json.loads(probe)["id"],
        "error": {"code": -32601, "message": "x"},
    }
    client.receive_message(late)
    assert drain(client) == []
    server = legacy_only_server()
    server.receive_message(initialize)
    client.receive_data(server.data_to_send())
    events = drain(client)
    assert isinstance(events[-1], ResponseReceived) and events[-1].request_id == start
    assert client.state is SessionState.READY


def test_stateless_mode_probe_timeout_fails() -> None:
    client = stateless_client()
    start = client.start(now=0.0, timeout=1.0)
    client.data_to_send()
    assert client.handle_timer(1.0) == [start]
    [failed] = drain(client)
    assert isinstance(failed, RequestFailed) and failed.error.code == ErrorCode.REQUEST_TIMEOUT
    assert client.state is SessionState.FAILED and client.data_to_send() == b""


def test_auto_probe_discover_result_without_a_mutual_version_falls_back() -> None:
    client = stateless_client(mode="auto")
    client.start()
    [chunk] = lines(client.data_to_send())
    result = {
        "resultType": "complete",
        "supportedVersions": ["2030-01-01"],
        "capabilities": {},
        "ttlMs": 0,
        "cacheScope": "private",
    }
    client.receive_message({"jsonrpc": "2.0", "id": json.loads(chunk)["id"], "result": result})
    assert drain(client) == []
    [initialize] = [json.loads(c) for c in lines(client.data_to_send())]
    assert initialize["method"] == "initialize"


def test_unsupported_version_with_a_mutual_stateless_version_retries(future_revision: str) -> None:
    client = stateless_client(
        mode="auto", supported_versions=[*HANDSHAKE_REVISIONS, STATELESS, FUTURE]
    )
    assert client.stateless_version == FUTURE
    server = ServerSession(capabilities=SERVER_CAPS)  # knows STATELESS, not FUTURE
    link = Link(client, server)
    start = client.start()
    link.c2s()
    assert link.s2c() == []  # retried, not reported
    assert client.stateless_version == STATELESS
    link.c2s()
    events = link.s2c()
    probe, retry = [m for s, m in link.emitted if s == "client"]
    assert probe["params"]["_meta"][META_PROTOCOL_VERSION] == FUTURE
    assert retry["params"]["_meta"][META_PROTOCOL_VERSION] == STATELESS
    assert retry["id"] != probe["id"]
    assert isinstance(events[-1], ResponseReceived) and events[-1].request_id == start
    assert client.state is SessionState.STATELESS


def test_unsupported_version_mid_session_retries_requests_and_subscriptions(
    future_revision: str,
) -> None:
    """A server that stops accepting our version: the request is retried at a
    mutual one under a new id, and events (the listen acknowledgement too) keep
    reporting the original id."""
    client = stateless_client(supported_versions=[STATELESS, FUTURE])
    client.start()
    [chunk] = lines(client.data_to_send())
    discover = {
        "resultType": "complete",
        "supportedVersions": [STATELESS, FUTURE],
        "capabilities": SERVER_CAPS,
        "ttlMs": 0,
        "cacheScope": "private",
    }
    client.receive_message({"jsonrpc": "2.0", "id": json.loads(chunk)["id"], "result": discover})
    drain(client)
    assert client.stateless_version == FUTURE
    server = ServerSession(capabilities=SERVER_CAPS)
    link = Link(client, server)
    call = client.send_request("tools/call", {"name": "t", "arguments": {"k": 1}})
    listen = client.send_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    link.c2s()
    assert link.s2c() == []  # both refused with -32022 and retried
    events = link.c2s()
    [retried_call] = [e for e in events if isinstance(e, RequestReceived)]
    assert retried_call.request_id not in (call, listen)
    assert retried_call.params["arguments"] == {"k": 1}
    assert retried_call.meta.protocol_version == STATELESS
    assert server.open_subscriptions and listen not in server.open_subscriptions
    server.respond(retried_call.request_id, {"content": []})
    events = link.s2c()
    assert not violations(events), events
    assert [type(e) for e in events] == [SubscriptionAcknowledged, ResponseReceived]
    assert events[0].request_id == listen  # not the retry's wire id
    assert events[1].request_id == call
    server.send_list_changed("tools")
    [changed] = link.s2c()
    assert isinstance(changed, NotificationReceived) and changed.subscription_id == listen


def test_unsupported_version_naming_only_handshake_versions() -> None:
    data = {"supported": ["2025-06-18"], "requested": STATELESS}
    # auto: the server does not speak the stateless era -> initialize.
    auto = stateless_client(mode="auto")
    auto_start = auto.start()
    assert reply_error(auto, ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, data) == []
    link = Link(auto, legacy_only_server(supported_versions=["2025-06-18"]))
    events = finish_handshake(link)
    assert isinstance(events[-1], ResponseReceived) and events[-1].request_id == auto_start
    assert auto.state is SessionState.READY and auto.protocol_version == "2025-06-18"
    # stateless: nothing mutual -> the start fails.
    stateless = stateless_client()
    start = stateless.start()
    [failed] = reply_error(stateless, ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, data)
    assert isinstance(failed, RequestFailed) and failed.request_id == start
    assert isinstance(failed.error, UnsupportedProtocolVersion)
    assert stateless.state is SessionState.FAILED and stateless.data_to_send() == b""


def test_unsupported_version_naming_nothing_we_speak_fails_even_in_auto() -> None:
    """A recognised stateless error is not a reason to fall back (spec: era detection)."""
    client = stateless_client(mode="auto")
    client.start()
    data = {"supported": ["2030-01-01"], "requested": STATELESS}
    [failed] = reply_error(client, ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, data)
    assert isinstance(failed.error, UnsupportedProtocolVersion)
    assert client.state is SessionState.FAILED and client.data_to_send() == b""


def test_stateless_mode_never_falls_back() -> None:
    client = stateless_client()
    start = client.start()
    [failed] = reply_error(client, ErrorCode.METHOD_NOT_FOUND)
    assert isinstance(failed, RequestFailed) and failed.request_id == start
    assert client.state is SessionState.FAILED and client.data_to_send() == b""


# -------------------------------------------------------------------- stateless-only


def test_stateless_only_server_refuses_initialize_naming_its_versions() -> None:
    server = ServerSession(capabilities=SERVER_CAPS, supported_versions=STATELESS_REVISIONS)
    link = Link(ClientSession(capabilities=CLIENT_CAPS), server)
    start = link.client.start()
    assert [v.error.code for v in violations(link.c2s())] == [-32022]
    [failed] = link.s2c()
    assert isinstance(failed, RequestFailed) and failed.request_id == start
    assert isinstance(failed.error, UnsupportedProtocolVersion)
    assert failed.error.data == {
        "supported": list(STATELESS_REVISIONS),
        "requested": LATEST_HANDSHAKE_REVISION,
    }
    assert link.client.state is SessionState.FAILED and server.state is SessionState.IDLE


def test_stateless_only_server_refuses_requests_without_meta() -> None:
    server = ServerSession(capabilities=SERVER_CAPS, supported_versions=STATELESS_REVISIONS)
    for i, params in enumerate([None, {}, {"_meta": {}}, {"_meta": {"progressToken": 1}}]):
        server.receive_data(raw_request(i, "tools/list", params))
    server.receive_data(raw_request("p", "ping"))
    refused = violations(drain(server))
    assert [v.error.request_id for v in refused] == [0, 1, 2, 3, "p"]
    answers = [json.loads(c) for c in lines(server.data_to_send())]
    assert [a["error"]["code"] for a in answers] == [ErrorCode.INVALID_PARAMS] * 5
    assert all("2026-07-28" in a["error"]["message"] for a in answers)
    assert server.state is SessionState.IDLE and server.open_requests == frozenset()
    # A stateless client is served.
    link = discovered(Link(stateless_client(), server))
    link.client.send_request("tools/list")
    [received] = link.c2s()
    assert isinstance(received, RequestReceived) and received.meta is not None


def test_auto_client_against_a_stateless_only_server_goes_stateless() -> None:
    server = ServerSession(capabilities=SERVER_CAPS, supported_versions=STATELESS_REVISIONS)
    link = discovered(Link(stateless_client(mode="auto"), server))
    assert link.client.protocol_version == STATELESS


# ------------------------------------------------------------------------ dual era


def test_dual_era_server_serves_both_eras_at_once() -> None:
    server = ServerSession(capabilities=SERVER_CAPS)
    legacy = ClientSession(capabilities={"roots": {"listChanged": True}})
    link = Link(legacy, server)
    legacy.start()
    finish_handshake(link)
    assert server.state is SessionState.READY and server.revision.name == LATEST_HANDSHAKE_REVISION
    legacy.send_request("logging/setLevel", {"level": "error"})
    legacy_list = legacy.send_request("tools/list")
    early = link.c2s()  # setLevel is answered by the core; tools/list waits
    assert [e.request_id for e in early] == [legacy_list]
    link.s2c()

    # Stateless requests arrive on the same connection, interleaved with the legacy ones.
    server.receive_data(
        raw_request("m-list", "tools/list", {"_meta": meta(**{META_LOG_LEVEL: "debug"})})
    )
    server.receive_data(
        raw_request(
            "m-listen",
            "subscriptions/listen",
            {"_meta": meta(), "notifications": {"toolsListChanged": True}},
        )
    )
    legacy_call = legacy.send_request("tools/call", {"name": "t"})
    events = early + link.c2s()
    received = {e.request_id: e for e in events if isinstance(e, RequestReceived)}
    assert set(received) == {"m-list", legacy_list, legacy_call}
    assert received["m-list"].meta is not None and received[legacy_call].meta is None
    assert server.is_stateless_request("m-list") and not server.is_stateless_request(legacy_call)

    # Logging thresholds are per era: the request's _meta vs logging/setLevel.
    assert server.send_log_message("info", "modern", request_id="m-list")
    assert not server.send_log_message("info", "legacy")
    server.respond("m-list", {"tools": []})
    server.respond(legacy_list, {"tools": []})
    server.send_list_changed("tools")
    out = [json.loads(c) for c in lines(server.data_to_send())]
    by_id = {m["id"]: m for m in out if "id" in m}
    assert by_id["m-list"]["result"]["resultType"] == "complete"
    assert "ttlMs" in by_id["m-list"]["result"]
    assert by_id[legacy_list]["result"] == {"tools": []}  # untouched in the legacy era
    notes = [(m["method"], m.get("params", {}).get("_meta")) for m in out if "id" not in m]
    assert notes == [
        ("notifications/subscriptions/acknowledged", {META_SUBSCRIPTION_ID: "m-listen"}),
        ("notifications/message", None),
        ("notifications/tools/list_changed", {META_SUBSCRIPTION_ID: "m-listen"}),
        ("notifications/tools/list_changed", None),
    ]
    # A stateless cancel of the subscription leaves the handshake session alone.
    server.receive_data(raw_notification("notifications/cancelled", {"requestId": "m-listen"}))
    assert drain(server) == [] and server.open_subscriptions == frozenset()
    assert server.state is SessionState.READY and server.open_requests == {legacy_call}


# ---------------------------------------------------------------- regressions (fixes)


@pytest.mark.parametrize("tag", [[1], {"id": 1}, True, 1.5])
def test_malformed_subscription_tags_do_not_crash_the_client(tag: Any) -> None:
    """Regression: an unhashable tag raised TypeError; ``true`` matched listen id 1."""
    link = discovered(Link(stateless_client(), ServerSession(capabilities=SERVER_CAPS)))
    link.client.send_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    link.client.data_to_send()  # id 1, never delivered
    link.client.receive_data(
        raw_notification(
            "notifications/subscriptions/acknowledged",
            {"_meta": {META_SUBSCRIPTION_ID: tag}, "notifications": {}},
        )
    )
    link.client.receive_data(
        raw_notification("notifications/tools/list_changed", {"_meta": {META_SUBSCRIPTION_ID: tag}})
    )
    events = drain(link.client)
    assert not [e for e in events if isinstance(e, SubscriptionAcknowledged)]
    assert [type(e) for e in events] == [ProtocolViolation]
    assert events[0].error.request_id is None


def test_cancel_racing_the_answer_is_ignored_by_a_stateless_server() -> None:
    """Regression: a stateless cancel for an already answered request was reported as a
    ProtocolViolation ("not allowed while the session is idle")."""
    link = discovered(Link(stateless_client(), ServerSession(capabilities=SERVER_CAPS)))
    rid = link.client.send_request("tools/list")
    [received] = link.c2s()
    link.server.respond(received.request_id, {"tools": []})
    link.client.cancel(rid)
    assert link.c2s() == []
    assert link.s2c() == []  # the crossing answer is dropped too
    link.server.receive_data(raw_notification("notifications/cancelled", {"requestId": 99}))
    assert drain(link.server) == []


def test_an_invalid_result_leaves_the_request_open() -> None:
    """Regression: respond() dropped the request before refusing its result, so it
    could never be answered."""
    link = discovered(Link(stateless_client(), ServerSession(capabilities=SERVER_CAPS)))
    rid = link.client.send_request("tools/list")
    [received] = link.c2s()
    with pytest.raises(LocalProtocolError, match="input_required"):
        link.server.respond(received.request_id, {"resultType": "input_required"})
    assert link.server.open_requests == {received.request_id}
    assert link.server.data_to_send() == b""
    link.server.respond_error(received.request_id, ErrorCode.INTERNAL_ERROR, "oops")
    [failed] = link.s2c()
    assert isinstance(failed, RequestFailed) and failed.request_id == rid


async def test_unknown_resource_is_invalid_params_only_in_the_stateless_era() -> None:
    """Regression (SEP-2164): 2026-07-28 must not emit -32002."""
    app = Server("r", state_key=b"k" * 16)

    @app.resource("file:///known")
    def known() -> str:
        return "x"

    session = app.create_session()
    params = {"uri": "file:///missing"}
    stateless_event = RequestReceived(1, "resources/read", params, None, RequestMeta(STATELESS, {}))
    with pytest.raises(InvalidParams) as stateless_error:
        await app.handle(HarnessContext(stateless_event, session, now=0.0))
    assert stateless_error.value.data == {"uri": "file:///missing"}
    legacy_event = RequestReceived(2, "resources/read", params)
    with pytest.raises(MCPError) as legacy_error:
        await app.handle(HarnessContext(legacy_event, session, now=0.0))
    assert legacy_error.value.code == ErrorCode.RESOURCE_NOT_FOUND


# --------------------------------------------------------------------- requestState

KEY = b"0123456789abcdef0123456789abcdef"
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=16,
)


@given(
    data=json_values,
    binding=st.none() | st.text(max_size=40),
    now=st.floats(0, 2e9, allow_nan=False),
)
def test_sealer_round_trip(data: Any, binding: str | None, now: float) -> None:
    sealer = RequestStateSealer(KEY, ttl=60.0)
    token = sealer.seal(data, now=now, binding=binding)
    assert token.isascii() and token.count(".") == 2
    assert sealer.unseal(token, now=now, binding=binding) == data
    assert sealer.unseal(token, now=now + 60.0, binding=binding) == data


@given(data=json_values, position=st.integers(min_value=0), replacement=st.characters())
def test_sealer_any_tampering_fails_or_changes_nothing(
    data: Any, position: int, replacement: str
) -> None:
    sealer = RequestStateSealer(KEY)
    token = sealer.seal(data, now=0.0)
    i = position % len(token)
    tampered = token[:i] + replacement + token[i + 1 :]
    try:
        opened = sealer.unseal(tampered, now=0.0)
    except InvalidParams as error:
        assert error.code == ErrorCode.INVALID_PARAMS
    else:
        # Only a no-op edit (or one base64 ignores) can get through, unchanged.
        assert opened == data


def test_sealer_rejections() -> None:
    sealer = RequestStateSealer(KEY, ttl=10.0)
    binding = request_binding("tools/call", {"name": "t", "arguments": {"a": 1}})
    token = sealer.seal({"input-1": {"action": "accept"}}, now=100.0, binding=binding)
    kid, payload, signature = token.split(".")

    def refused(candidate: Any, now: float = 100.0, binding: str | None = binding) -> str:
        with pytest.raises(InvalidParams) as error:
            sealer.unseal(candidate, now=now, binding=binding)
        assert error.value.code == ErrorCode.INVALID_PARAMS
        return error.value.message

    # tampered: a forged payload with the old signature, or another key's token
    forged = base64.urlsafe_b64encode(
        json.dumps({"d": {"admin": True}, "exp": 1e12, "b": binding}).encode()
    ).rstrip(b"=")
    assert "integrity" in refused(f"{kid}.{forged.decode()}.{signature}")
    other = RequestStateSealer(b"another key, 16+ bytes").seal({}, now=100.0, binding=binding)
    assert "integrity" in refused(other)
    # bound to another request, or to none
    assert "different request" in refused(token, binding="something else")
    assert "different request" in refused(token, binding=None)
    assert "different request" in refused(
        token,
        binding=request_binding("tools/call", {"name": "t", "arguments": {"a": 2}}),
    )
    # expired
    assert sealer.unseal(token, now=110.0, binding=binding) == {"input-1": {"action": "accept"}}
    assert "expired" in refused(token, now=110.001)
    # malformed
    for bad in (
        None,
        42,
        ["x"],
        "",
        "no-dot",
        "a.b.c",
        "é.é",
        f"{kid}.{payload}.{signature}!",
        ".",
        "..",
        f"{payload}.{signature}",
    ):
        message = refused(bad)
        assert "malformed" in message or "integrity" in message, (bad, message)
    with pytest.raises(ValueError):
        RequestStateSealer(b"short")


def test_request_binding_ignores_round_fields() -> None:
    base = {"name": "t", "arguments": {"a": 1}}
    digest = request_binding("tools/call", base)
    rounds = {**base, "_meta": {"x": 1}, "inputResponses": {"k": {}}, "requestState": "s"}
    assert request_binding("tools/call", rounds) == digest
    assert request_binding("prompts/get", base) != digest
    assert request_binding("tools/call", {**base, "arguments": {"a": 2}}) != digest


# ------------------------------------------------------------ Server.handle and MRTR


def mrtr_app(**options: Any) -> Server:
    if "state_keys" not in options:
        options.setdefault("state_key", KEY)
    app = Server("mrtr", **options)

    @app.tool()
    async def two_questions(ctx: Context) -> str:
        first = await ctx.elicit("First?", ELICIT_SCHEMA)
        second = await ctx.elicit("Second?", ELICIT_SCHEMA)
        return f"{first['content']['name']} & {second['content']['name']}"

    return app


async def test_a_tool_asking_twice_takes_two_rounds_and_gets_both_answers() -> None:
    app = mrtr_app()
    link = discovered(Link(stateless_client(), app.create_session(), app))
    rid = link.client.send_request("tools/call", {"name": "two_questions", "arguments": {}})
    [first] = await link.serve()
    assert isinstance(first, InputRequired) and first.round == 1
    assert list(first.input_requests) == ["input-1"]
    assert first.input_requests["input-1"]["params"]["message"] == "First?"
    link.client.provide_input(rid, {"input-1": {"action": "accept", "content": {"name": "ann"}}})
    [second] = await link.serve()
    assert isinstance(second, InputRequired) and second.round == 2
    assert list(second.input_requests) == ["input-2"]
    assert second.input_requests["input-2"]["params"]["message"] == "Second?"
    assert second.request_state != first.request_state
    link.client.provide_input(rid, {"input-2": {"action": "accept", "content": {"name": "bob"}}})
    [done] = await link.serve()
    assert isinstance(done, ResponseReceived) and done.request_id == rid
    assert done.result["content"][0]["text"] == "ann & bob"
    # The last retry carried only the second answer: the first came back sealed.
    last = [m for s, m in link.emitted if s == "client" and m.get("method") == "tools/call"][-1]
    assert list(last["params"]["inputResponses"]) == ["input-2"]
    assert last["params"]["requestState"] == second.request_state


def _tool_event(params: dict[str, Any], *, meta_: RequestMeta | None) -> RequestReceived:
    return RequestReceived(7, "tools/call", params, None, meta_)


STATELESS_ELICIT_META = RequestMeta(STATELESS, {"elicitation": {"form": {}}})


async def test_tampered_or_foreign_request_state_is_invalid_params() -> None:
    app = mrtr_app(state_ttl=30.0)
    session = app.create_session()
    params = {"name": "two_questions", "arguments": {}}
    first = await app.handle(
        HarnessContext(_tool_event(params, meta_=STATELESS_ELICIT_META), session, now=0.0)
    )
    assert first["resultType"] == "input_required"
    state = first["requestState"]
    answer = {"input-1": {"action": "accept", "content": {"name": "ann"}}}
    ok = {**params, "inputResponses": answer, "requestState": state}
    second = await app.handle(
        HarnessContext(_tool_event(ok, meta_=STATELESS_ELICIT_META), session, now=1.0)
    )
    assert list(second["inputRequests"]) == ["input-2"]

    flipped = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
    cases = {
        "tampered": ({**ok, "requestState": flipped}, 1.0),
        "another request": ({**ok, "arguments": {"x": 1}}, 1.0),
        "expired": (ok, 31.0),
        "not a string": ({**ok, "requestState": 5}, 1.0),
    }
    for name, (bad, now) in cases.items():
        ctx = HarnessContext(_tool_event(bad, meta_=STATELESS_ELICIT_META), session, now=now)
        with pytest.raises(InvalidParams) as error:
            await app.handle(ctx)
        assert error.value.code == ErrorCode.INVALID_PARAMS, name


async def test_missing_or_extra_input_responses() -> None:
    """A missing answer is asked again (not an error); unknown extras are ignored."""
    app = mrtr_app()
    session = app.create_session()
    params = {"name": "two_questions", "arguments": {}}
    retry = {**params, "inputResponses": {"unrelated": {"action": "decline"}, "input-1": "junk"}}
    result = await app.handle(
        HarnessContext(_tool_event(retry, meta_=STATELESS_ELICIT_META), session, now=0)
    )
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["input-1"]


async def test_the_same_tool_on_a_handshake_session_sends_requests() -> None:
    app = mrtr_app()
    session = app.create_session()
    names = iter(["ann", "bob"])

    def answer(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": next(names)}}

    ctx = HarnessContext(
        _tool_event({"name": "two_questions", "arguments": {}}, meta_=None),
        session,
        now=0.0,
        answer=answer,
    )
    result = await app.handle(ctx)
    assert result["content"][0]["text"] == "ann & bob"
    assert [(m, p["message"]) for m, p in ctx.sent] == [
        ("elicitation/create", "First?"),
        ("elicitation/create", "Second?"),
    ]
    assert "requestState" not in result and "resultType" not in result


# ------------------------------------------------------------------------ headers

TRICKY_VALUES = [
    "",
    "plain",
    " leading",
    "trailing ",
    "\ttab",
    "in\ttab",
    "ünïcødé",
    "日本語",
    "😀",
    "ctrl\x01",
    "del\x7f",
    "line\nbreak",
    "=?base64?aGk=?=",
    "=?base64?not base64?=",
    "=?BASE64?aGk=?=",
    "=?base64?",
]


@given(st.one_of(st.sampled_from(TRICKY_VALUES), st.text()))
def test_header_value_round_trip(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(c == "\t" or 0x20 <= ord(c) <= 0x7E for c in encoded), encoded
    assert encoded == encoded.strip(" \t")
    assert decode_header_value(encoded) == value
    if encoded != value:
        assert encoded.startswith("=?base64?") and encoded.endswith("?=")


def test_header_value_encoding_rules() -> None:
    assert encode_header_value("us-west1") == "us-west1"
    assert encode_header_value("a b\tc") == "a b\tc"
    assert encode_header_value(" x") == "=?base64?IHg=?="
    assert encode_header_value("=?base64?aGk=?=") != "=?base64?aGk=?="  # sentinel-looking
    assert encode_header_value("=?BASE64?aGk=?=") == "=?BASE64?aGk=?="  # markers are lowercase
    assert encode_header_value(42) == "42" and encode_header_value(-7) == "-7"
    assert encode_header_value(True) == "true" and encode_header_value(False) == "false"
    for bad in ("=?base64?!!?=", "=?base64?/w==?=", "=?base64?aGk?="):
        with pytest.raises(ValueError):
            decode_header_value(bad)


SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "target": {
            "type": "object",
            "properties": {"host": {"type": "string", "x-mcp-header": "Host"}},
        },
        "note": {"type": "string"},
    },
}


def call_message(arguments: dict[str, Any], name: str = "deploy") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"_meta": meta(), "name": name, "arguments": arguments},
    }


def test_request_headers() -> None:
    arguments = {"region": "eu-west", "count": 3, "dry": False, "target": {"host": "ü.example"}}
    headers = request_headers(call_message(arguments), input_schema=SCHEMA)
    assert headers == {
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "deploy",
        "Mcp-Param-Region": "eu-west",
        "Mcp-Param-Count": "3",
        "Mcp-Param-Dry-Run": "false",
        "Mcp-Param-Host": encode_header_value("ü.example"),
    }
    # Null or absent arguments: no header.
    sparse = request_headers(call_message({"region": None}), input_schema=SCHEMA)
    assert not [h for h in sparse if h.startswith("Mcp-Param-")]
    # Without the schema there is nothing to mirror but the standard headers.
    assert set(request_headers(call_message(arguments))) == {
        "MCP-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
    }
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read"}
    read["params"] = {"_meta": meta(), "uri": "file:///ü b.txt"}
    assert request_headers(read)["Mcp-Name"] == encode_header_value("file:///ü b.txt")
    prompt = {"jsonrpc": "2.0", "id": 3, "method": "prompts/get"}
    prompt["params"] = {"_meta": meta(), "name": "greet"}
    assert request_headers(prompt) == {
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "prompts/get",
        "Mcp-Name": "greet",
    }
    listing = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta()}}
    assert "Mcp-Name" not in request_headers(listing)
    notification = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    assert request_headers(notification) == {}


def _check(headers: dict[str, str], arguments: dict[str, Any]) -> HeaderMismatch | None:
    return validate_request_headers(headers, call_message(arguments), input_schema=SCHEMA)


def test_validate_request_headers() -> None:
    arguments = {"region": "eu-west", "count": 42, "dry": True}
    good = request_headers(call_message(arguments), input_schema=SCHEMA)
    assert _check(good, arguments) is None
    # Names are case-insensitive.
    assert _check({k.lower(): v for k, v in good.items()}, arguments) is None
    assert _check({k.upper(): v for k, v in good.items()}, arguments) is None
    # Base64 is decoded before comparing, even where it was not needed.
    encoded = {
        **good,
        "Mcp-Param-Region": "=?base64?" + base64.b64encode(b"eu-west").decode() + "?=",
    }
    assert _check(encoded, arguments) is None
    # Integers compare numerically.
    assert _check({**good, "Mcp-Param-Count": "42.0"}, arguments) is None
    for wrong in ("43", "forty-two", "4 2", ""):
        assert isinstance(_check({**good, "Mcp-Param-Count": wrong}, arguments), HeaderMismatch)
    # Every required header, removed or changed, is a -32020.
    for name in good:
        missing = {k: v for k, v in good.items() if k != name}
        error = _check(missing, arguments)
        assert isinstance(error, HeaderMismatch) and error.code == ErrorCode.HEADER_MISMATCH, name
        assert "required" in error.message
        changed = {**good, name: good[name] + "x"}
        assert isinstance(_check(changed, arguments), HeaderMismatch), name
    # Values are case-sensitive; booleans are "true"/"false".
    assert isinstance(_check({**good, "Mcp-Param-Region": "EU-WEST"}, arguments), HeaderMismatch)
    assert isinstance(_check({**good, "Mcp-Param-Dry-Run": "True"}, arguments), HeaderMismatch)
    assert isinstance(_check({**good, "Mcp-Param-Dry-Run": "1"}, arguments), HeaderMismatch)
    # A param header with no value in the body.
    error = _check({**good, "Mcp-Param-Host": "h"}, arguments)
    assert isinstance(error, HeaderMismatch) and "no value in the body" in error.message
    # Invalid characters and malformed base64.
    assert isinstance(_check({**good, "Mcp-Name": "dep\x00loy"}, arguments), HeaderMismatch)
    assert isinstance(_check({**good, "Mcp-Name": "=?base64?%%?="}, arguments), HeaderMismatch)
    # The protocol version header must match the body's _meta.
    error = _check({**good, "MCP-Protocol-Version": "2025-11-25"}, arguments)
    assert isinstance(error, HeaderMismatch) and "MCP-Protocol-Version" in error.message


def test_x_mcp_header_problems() -> None:
    assert x_mcp_header_problems(SCHEMA) == []
    assert x_mcp_header_problems({"type": "object"}) == []

    def problems(prop: dict[str, Any], **more: Any) -> list[str]:
        return x_mcp_header_problems(
            {"type": "object", "properties": {"p": prop, **more.get("extra", {})}}
        )

    for name in ("", "with space", "colon:name", "ü", "new\nline", "a/b", 7):
        found = problems({"type": "string", "x-mcp-header": name})
        assert len(found) == 1 and "not a valid header name" in found[0], name
    for name in ("X", "Tenant-Id", "a.b_c~d!#$%&'*+^`|"):
        assert problems({"type": "string", "x-mcp-header": name}) == [], name
    found = problems(
        {"type": "string", "x-mcp-header": "Region"},
        extra={"q": {"type": "string", "x-mcp-header": "REGION"}},
    )
    assert len(found) == 1 and "used twice" in found[0]
    for kind in ("number", "object", "array", None):
        found = problems({"type": kind, "x-mcp-header": "N"})
        assert len(found) == 1 and "string, integer or boolean" in found[0], kind
    assert problems({"type": "integer", "x-mcp-header": "N"}) == []
    assert problems({"type": "boolean", "x-mcp-header": "N"}) == []
    unreachable = [
        {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}},
        {"anyOf": [{"type": "string", "x-mcp-header": "A"}]},
        {"oneOf": [{"type": "string", "x-mcp-header": "O"}]},
        {"allOf": [{"type": "string", "x-mcp-header": "L"}]},
        {"not": {"type": "string", "x-mcp-header": "N"}},
        {"if": {"type": "string", "x-mcp-header": "F"}},
        {
            "type": "object",
            "additionalProperties": {"type": "string", "x-mcp-header": "P"},
        },
        {"type": "array", "items": {"properties": {"d": {"type": "string", "x-mcp-header": "D"}}}},
    ]
    for prop in unreachable:
        found = problems(prop)
        assert len(found) == 1 and "only allowed through 'properties'" in found[0], prop
    found = x_mcp_header_problems(
        {"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}
    )
    assert len(found) == 1 and "only allowed through 'properties'" in found[0]


# -------------------------------------------------------------------------- cache


def listed(ttl: Any = 60_000, scope: Any = "private", **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "complete", "tools": [], **extra}
    if ttl is not None:
        result["ttlMs"] = ttl
    if scope is not None:
        result["cacheScope"] = scope
    return result


def test_cache_ttl_expiry_with_injected_time() -> None:
    cache = ResultCache()
    result = listed(ttl=1_500)
    assert cache.put("tools/list", None, result, now=10.0)
    assert cache.get("tools/list", None, now=10.0) == result
    assert cache.get("tools/list", None, now=11.499) == result
    assert cache.get("tools/list", None, now=11.5) is None  # now < received + ttl only
    assert len(cache) == 0


def test_cache_key_ignores_meta_but_not_cursor_or_uri() -> None:
    cache = ResultCache()
    first_page = listed(nextCursor="c1")
    cache.put("tools/list", {"_meta": meta()}, first_page, now=0.0)
    assert cache.get("tools/list", None, now=1.0) == first_page
    assert cache.get("tools/list", {"_meta": {"other": True}}, now=1.0) == first_page
    assert cache.get("tools/list", {"cursor": "c1"}, now=1.0) is None
    read = {"resultType": "complete", "contents": [], "ttlMs": 10, "cacheScope": "public"}
    cache.put("resources/read", {"uri": "file:///a"}, read, now=0.0)
    assert cache.get("resources/read", {"uri": "file:///b"}, now=0.0) is None


def test_cache_private_results_stay_in_their_context() -> None:
    cache = ResultCache()
    private = listed(scope="private")
    cache.put("tools/list", None, private, now=0.0, context="alice")
    assert cache.get("tools/list", None, now=1.0, context="alice") == private
    assert cache.get("tools/list", None, now=1.0, context="bob") is None
    assert cache.get("tools/list", None, now=1.0) is None
    public = listed(scope="public")
    cache.put("prompts/list", None, public, now=0.0, context="alice")
    assert cache.get("prompts/list", None, now=1.0, context="bob") == public
    # An unknown scope is treated as the safe one.
    odd = listed(scope="shared")
    cache.put("resources/list", None, odd, now=0.0, context="alice")
    assert cache.get("resources/list", None, now=1.0, context="bob") is None


def test_cache_invalidation() -> None:
    cache = ResultCache()
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        cache.put(method, None, listed(), now=0.0)
    for uri in ("file:///a", "file:///b"):
        read = {"resultType": "complete", "contents": [], "ttlMs": 1000, "cacheScope": "private"}
        cache.put("resources/read", {"uri": uri}, read, now=0.0)
    cache.put("tools/list", {"cursor": "p2"}, listed(), now=0.0)
    assert len(cache) == 7
    assert cache.invalidate("notifications/tools/list_changed") == 2
    assert cache.get("tools/list", None, now=0.0) is None
    assert cache.get("prompts/list", None, now=0.0) is not None
    assert cache.invalidate("notifications/resources/updated", {"uri": "file:///a"}) == 1
    assert cache.get("resources/read", {"uri": "file:///a"}, now=0.0) is None
    assert cache.get("resources/read", {"uri": "file:///b"}, now=0.0) is not None
    assert cache.invalidate("notifications/resources/list_changed") == 2
    assert cache.get("resources/read", {"uri": "file:///b"}, now=0.0) is not None
    assert cache.invalidate("notifications/prompts/list_changed") == 1
    assert cache.invalidate("notifications/message") == 0
    assert len(cache) == 1


def test_cache_refuses_what_must_not_be_cached() -> None:
    cache = ResultCache()
    assert not cache.put(
        "resources/read",
        {"uri": "file:///a"},
        {"resultType": "input_required", "requestState": "s"},
        now=0.0,
    )
    for retry in ({"inputResponses": {}}, {"requestState": "s"}):
        assert not cache.put("resources/read", {"uri": "file:///a", **retry}, listed(), now=0.0)
    for ttl in (0, -5, None, True, 1.5, "60"):
        assert not cache.put("tools/list", None, listed(ttl=ttl), now=0.0), ttl
    assert not cache.put("tools/call", {"name": "t"}, listed(), now=0.0)  # not cacheable
    assert not cache.put("tools/list", None, {"tools": []}, now=0.0)  # an old server: no hints
    assert len(cache) == 0
    cache = ResultCache(max_entries=2)
    for cursor in ("a", "b", "c"):
        assert cache.put("tools/list", {"cursor": cursor}, listed(), now=0.0)
    assert len(cache) == 2 and cache.get("tools/list", {"cursor": "a"}, now=0.0) is None


def test_cache_with_a_server_s_hints() -> None:
    """The server's defaults: lists fresh for a while, reads stale at once."""
    server = ServerSession(
        capabilities=SERVER_CAPS,
        cache_hints=CacheHints(ttl_ms={"prompts/list": 5}, scope="public"),
    )
    link = discovered(Link(stateless_client(), server))
    cache = ResultCache()
    answers = {
        "tools/list": {"tools": []},
        "prompts/list": {"prompts": []},
        "resources/read": {"contents": []},
    }
    kept = {}
    for method, result in answers.items():
        params = {"uri": "file:///a"} if method == "resources/read" else None
        link.client.send_request(method, params)
        [received] = link.c2s()
        server.respond(received.request_id, result)
        [done] = link.s2c()
        kept[method] = cache.put(method, params, done.result, now=0.0, context="alice")
    assert kept == {"tools/list": True, "prompts/list": True, "resources/read": False}
    assert cache.get("tools/list", None, now=59.9, context="bob") is not None  # public
    assert cache.get("prompts/list", None, now=0.005) is None  # 5 ms


def test_fallback_after_probe_timeout_keeps_a_deadline() -> None:
    from sansio_mcp import NEED_DATA, ClientSession, RequestFailed, RequestTimeout

    client = ClientSession(mode="auto")
    start = client.start(now=0.0, timeout=5.0)
    client.data_to_send()
    client.handle_timer(5.0)  # no answer to server/discover: fall back
    assert b'"initialize"' in client.data_to_send()
    assert client.next_deadline() == 10.0
    client.handle_timer(10.0)  # and no answer to initialize either: fail, do not hang
    events = []
    while (event := client.next_event()) is not NEED_DATA:
        events.append(event)
    assert any(
        isinstance(e, RequestFailed)
        and e.request_id == start
        and isinstance(e.error, RequestTimeout)
        for e in events
    )


def test_invalid_x_mcp_header_annotations_are_ignored_by_the_server() -> None:
    from sansio_mcp._http_headers import validate_request_headers

    # x-mcp-header on a number property is invalid: clients hide the tool, so the
    # server must not demand a header nobody will send.
    schema = {
        "type": "object",
        "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}},
    }
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "scale",
            "arguments": {"ratio": 2},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "scale",
    }
    assert validate_request_headers(headers, message, input_schema=schema) is None
    valid = {
        "type": "object",
        "properties": {"count": {"type": "integer", "x-mcp-header": "Count"}},
    }
    message["params"]["arguments"] = {"count": 2}  # type: ignore[index]
    mismatch = validate_request_headers(headers, message, input_schema=valid)
    assert mismatch is not None and "Mcp-Param-Count" in mismatch.message
