"""The in-process ("direct") A2E transport: the bridge in the agent's own process
and event loop, messages handed over as objects (``open_a2e_direct`` on Trio
and on asyncio).

* Hand-over rules (Hypothesis): adopting a message object gives exactly what
  decoding its encoding gives (the same message, the same error, the same
  exception for what cannot be encoded), and the copy shares no container
  with the sender's.
* It behaves like a byte stream: the same scripted agent produces the same
  transcript, message for message, over NDJSON and direct, on both backends.
* Neither side sees the other change a message: the agent may mutate what it
  received and what it sent.
* Real processes on both backends: the example server (sampling and roots
  round trips to the agent, elicitation), server-everything, a server killed
  mid-call, shutdown with servers running and calls in flight; no process,
  file descriptor or asyncio task is left behind (``no_leaks``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import types
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sansio_mcp._json import DEFAULT_MAX_DEPTH
from sansio_mcp_apps.a2e import (
    MESSAGE_TYPES,
    A2EMessage,
    BridgeConfig,
    DecodeError,
    MCPRootsListRequest,
    MCPSamplingRequest,
    Pong,
    ToolCallRequest,
    ToolCallResponse,
    ToolEvent,
    adopt,
    copy_json,
    decode,
    encode,
    parse_config,
    to_obj,
)
from sansio_mcp_apps.a2e._fields import wire_fields
from sansio_mcp_apps.a2e.runtime import A2EClientBase, A2ERequestError
from sansio_mcp_apps.a2e.runtime._client import own_arguments
from sansio_mcp_apps.example_server import TOOL_NAMES
from sansio_mcp_testing.strategies import a2e_messages, json_values
from tests.parity.conftest import no_leaks  # noqa: F401 - the fixture, used below
from tests.parity.harness import run

from .conftest import EXAMPLE, running_bridge

BACKENDS = ("trio", "asyncio")
BUDGET = 60.0
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# The hand-over, without I/O ------------------------------------------------------------


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (and ``value`` itself, if one)."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


def _shares_nothing(a: A2EMessage, b: A2EMessage) -> bool:
    mine = {id(c) for name, _ in wire_fields(type(a)) for c in _containers(getattr(a, name))}
    mine |= {id(c) for c in _containers(a.extra)}
    theirs = {id(c) for name, _ in wire_fields(type(b)) for c in _containers(getattr(b, name))}
    theirs |= {id(c) for c in _containers(b.extra)}
    return not mine & theirs


def _over_the_wire(message: A2EMessage) -> A2EMessage | DecodeError | type[Exception]:
    """What the receiving end of a byte stream makes of ``message``."""
    try:
        text = encode(message)
    except (TypeError, ValueError) as exc:
        return type(exc)
    from sansio_mcp_apps.a2e import decode_text

    return decode_text(text)


def _handed_over(message: A2EMessage) -> A2EMessage | DecodeError | type[Exception]:
    try:
        return adopt(message)
    except (TypeError, ValueError) as exc:
        return type(exc)


@SETTINGS
@given(a2e_messages())
def test_adopting_a_message_is_decoding_its_encoding(message: A2EMessage) -> None:
    adopted = adopt(message)
    assert adopted == decode(json.loads(encode(message)))
    assert isinstance(adopted, A2EMessage) and _shares_nothing(adopted, message)


_ODD_VALUES = st.one_of(
    json_values(3),
    st.tuples(st.integers(), st.text(max_size=3)),
    st.sets(st.integers(), max_size=2),
    st.dictionaries(st.integers(), st.integers(), max_size=2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.builds(lambda: b"bytes"),
)


@st.composite
def _odd_messages(draw: st.DrawFn) -> A2EMessage:
    """A message object whose fields (and unknown keys) may hold anything at all."""
    cls = MESSAGE_TYPES[draw(st.sampled_from(sorted(MESSAGE_TYPES)))]
    values: dict[str, Any] = {}
    for name, _kind in wire_fields(cls):
        if name == "type":
            continue
        if draw(st.booleans()):
            values[name] = draw(_ODD_VALUES if name != "id" else st.one_of(st.text(), _ODD_VALUES))
    extra = draw(st.dictionaries(st.text(max_size=6), _ODD_VALUES, max_size=2))
    return cls(**values, extra=extra)


@SETTINGS
@given(_odd_messages())
def test_a_bad_message_is_judged_as_the_codec_would(message: A2EMessage) -> None:
    """Wrong kinds, missing ids, odd versions, values JSON cannot hold: the bridge
    answers a handed-over message exactly as it would answer its encoding, and a
    value that cannot be encoded fails in the sender, as encoding it would."""
    assert _handed_over(message) == _over_the_wire(message)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [DEFAULT_MAX_DEPTH - 2, DEFAULT_MAX_DEPTH - 1, DEFAULT_MAX_DEPTH])
def test_the_nesting_limit_is_the_codecs(depth: int) -> None:
    message = ToolCallRequest(tool_name="s__t", arguments={"deep": _nested(depth)})
    assert _handed_over(message) == _over_the_wire(message)


@SETTINGS
@given(st.one_of(json_values(4), _ODD_VALUES))
def test_copy_json_is_the_codecs_round_trip(value: Any) -> None:
    try:
        expected = json.loads(encode_value(value))
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            copy_json(value)
        return
    copied = copy_json(value)
    assert copied == expected
    assert not {id(c) for c in _containers(copied)} & {id(c) for c in _containers(value)}


def encode_value(value: Any) -> str:
    from sansio_mcp import _json

    return _json.dumps(value)


# The tool-call fast path, without I/O: a tool call handed over by its fields ---------------

_ARGUMENTS = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=4), st.one_of(json_values(3), _ODD_VALUES), max_size=3),
    st.dictionaries(st.integers(), st.integers(), max_size=2),
    st.builds(types.MappingProxyType, st.dictionaries(st.text(max_size=3), json_values(2))),
)


@SETTINGS
@given(_ARGUMENTS, st.sampled_from([0, DEFAULT_MAX_DEPTH - 2, DEFAULT_MAX_DEPTH - 1]))
def test_arguments_taken_by_their_fields_are_what_adopting_the_call_takes(
    arguments: Any, depth: int
) -> None:
    """``call_tool`` hands a bridge in this process the arguments by themselves, not
    a message to adopt: it may do so only with what adopting the general path's
    ``tool/call/req`` would take as it is, and must copy exactly that; anything
    else goes as the message (and fails, or is changed, as on the wire)."""
    if depth:
        arguments = {**(arguments or {}), "deep": _nested(depth)}
    copied = own_arguments(arguments)
    given_dict = dict(arguments or {})
    general = _handed_over(ToolCallRequest(tool_name="s__t", arguments=given_dict))
    if copied is not None:
        assert isinstance(general, ToolCallRequest) and general.arguments == copied
        assert not {id(c) for c in _containers(copied)} & {id(c) for c in _containers(arguments)}
    else:
        assert not (isinstance(general, ToolCallRequest) and general.arguments == given_dict)


def _answers(by_fields: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every answer the host gives a set of tool calls (ok, isError, an MCP error, a
    timeout, unknown names, a server that is down, a bug in the host), sent as
    ``tool/call/req`` messages or handed over by their fields; and what the server got."""
    from sansio_mcp._errors import MCPError
    from sansio_mcp_apps.a2e import _tool_calls as _host

    from .helpers import FakeServer, Harness, text, tool

    h = Harness()
    fake = h.add_server("srv", FakeServer(tools=[tool(n) for n in ("add", "boom", "err", "hang")]))
    fake.handlers["tools/call"] = lambda server, event: {
        "add": {"content": [text("3")], "structuredContent": {"sum": 3}},
        "boom": {"content": [text("it broke")], "isError": True},
        "err": MCPError(-32602, "bad arguments"),
        "hang": None,
    }[event.params["name"]]
    h.add_server("down", FakeServer(tools=[tool("t")]))
    h.register("m", "srv", timeout=5)
    h.register("d", "down", auto_reconnect=False)
    h.kill("d")
    split = _host.split_namespaced

    def buggy(name: str) -> Any:
        if name == "m__bug":
            raise RuntimeError("a bug")
        return split(name)

    monkeypatch.setattr(_host, "split_namespaced", buggy)
    calls: list[tuple[str, dict[str, Any], int]] = [
        ("m__add", {"a": 1, "b": [2]}, 30),
        ("m__boom", {}, 0),
        ("m__err", {}, -1),
        ("m__hang", {}, 2),
        ("m__missing", {}, 30),
        ("nope__t", {}, 30),
        ("plain", {}, 30),
        ("d__t", {}, 30),
        ("m__bug", {}, 30),
    ]
    bugs: list[str] = []
    for i, (name, arguments, timeout) in enumerate(calls):
        if by_fields:
            h.host.receive_tool_call(f"c{i}", name, copy_json(arguments), timeout, h.now)
        else:
            h.host.receive_agent_message(
                ToolCallRequest(id=f"c{i}", tool_name=name, arguments=arguments, timeout=timeout),
                h.now,
            )
        bugs += h.host.internal_errors
        h.host.internal_errors.clear()
        h.run()
    h.now += 1
    h.advance(2)
    answers = [(m.req_id, m.data) for m in h.inbox if isinstance(m, ToolCallResponse)]
    assert len(answers) == len(calls)
    return [answers, [m for m in fake.received if m.get("method") == "tools/call"], bugs]


async def test_the_trio_clients_signal_wakes_its_one_waiter_and_survives_cancellation() -> None:
    """The Trio client's own one-shot signal (one per request instead of a trio.Event)."""
    from sansio_mcp_apps.a2e.adapters.trio_client import A2EClient

    async def send(message: A2EMessage) -> None:
        raise AssertionError("not used")

    client = A2EClient(send)
    signal = client.new_signal()
    signal.set()
    with trio.fail_after(1):
        await signal.wait()  # set before: no wait (a checkpoint)
    signal = client.new_signal()
    woke: list[float] = []

    async def waiter() -> None:
        await signal.wait()
        woke.append(trio.current_time())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert woke == []
            signal.set()
            signal.set()  # once is all it takes, and all it does
    assert len(woke) == 1
    signal = client.new_signal()
    with trio.move_on_after(0.01) as scope:
        await signal.wait()
    assert scope.cancelled_caught
    signal.set()  # the waiter is gone: nobody to wake, nothing breaks
    with trio.fail_after(1):
        await signal.wait()


def test_a_tool_call_by_its_fields_is_answered_as_the_message_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _answers(True, monkeypatch) == _answers(False, monkeypatch)


# Opening a direct agent on either backend ----------------------------------------------


def _open(backend: str, **options: Any) -> AbstractAsyncContextManager[A2EClientBase]:
    if backend == "trio":
        from sansio_mcp_apps.a2e.adapters.trio_client import open_a2e_direct

        return open_a2e_direct(**options)
    from sansio_mcp_apps.a2e.adapters.asyncio_client import open_a2e_direct as open_asyncio

    return open_asyncio(**options)


async def _sleep(backend: str, seconds: float) -> None:
    if backend == "trio":
        await trio.sleep(seconds)
    else:
        await asyncio.sleep(seconds)


async def _wait_for_status(
    backend: str, agent: A2EClientBase, server_id: str, status: str
) -> dict[str, Any]:
    for _ in range(1500):
        for info in await agent.list_servers():
            if info["server_id"] == server_id and info["status"] == status:
                return info
        await _sleep(backend, 0.01)
    raise AssertionError(f"{server_id} never became {status}")


def _text(result: dict[str, Any]) -> str:
    content = (result.get("data") or {}).get("content") or []
    return "\n".join(c.get("text", "") for c in content if c.get("type") == "text")


# The same transcript over a byte stream and direct ---------------------------------------


def _sample(request: MCPSamplingRequest) -> dict[str, Any]:
    question = request.messages[-1]["content"].get("text", "")
    return {
        "content": {"type": "text", "text": f"the agent's answer to: {question}"},
        "model": "agent-model",
        "stop_reason": "endTurn",
    }


def _roots(request: MCPRootsListRequest) -> list[dict[str, Any]]:
    return [{"uri": "file:///agent/root", "name": "agent"}]


def _elicit(request: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": "teal"}}


async def _script(agent: A2EClientBase) -> None:
    """One agent session touching every kind of exchange the example server offers."""
    await agent.ping()
    await agent.register({"server_id": "ex", "cmd": [*EXAMPLE, "--page-size", "2"]})
    await agent.list_tools(query="add")
    await agent.call_tool("ex__add", {"a": 40, "b": 2})
    await agent.call_tool("ex__slow", {"seconds": 0.05, "steps": 2}, streaming=True)
    await agent.call_tool("ex__sample", {"prompt": "6 x 7?"})
    await agent.call_tool("ex__list_roots")
    await agent.call_tool("ex__elicit", {"question": "colour?"})
    await agent.call_tool("ex__fail", {"message": "nope"})
    await agent.call_tool("ex__missing")
    await agent.list_resources()
    await agent.read_resource("example://colours/green")
    with pytest.raises(A2ERequestError):
        await agent.read_resource("example://nothing-here")
    await agent.subscribe("example://counter")
    await agent.call_tool("ex__increment", {"by": 3})
    await agent.wait_for_push(lambda p: p.method == "notifications/resources/updated")
    await agent.list_prompts()
    await agent.get_prompt("review", {"code": "x = 1", "language": "python"})
    with pytest.raises(A2ERequestError):
        await agent.register({"server_id": "bad__id", "cmd": ["x"]})
    with pytest.raises(A2ERequestError):
        # A field of the wrong kind: schema_violation, from the codec's rules.
        await agent.request(ToolCallRequest(tool_name="ex__add", arguments={}, timeout="soon"))
    await agent.unregister("ex")
    await agent.list_servers()


_VARIABLE = {"ts", "created_at", "duration_ms", "connected_at", "last_ping_ms"}


def _normalize(transcript: list[tuple[str, A2EMessage]]) -> list[Any]:
    """Directions and message bodies, with ids named by first appearance and clock
    readings blanked (everything else must match exactly)."""
    names: dict[str, str] = {}

    def name(value: str) -> str:
        return names.setdefault(value, f"id{len(names)}")

    def clean(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: clean(v, k) for k, v in value.items() if k not in _VARIABLE}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if key in ("id", "req_id", "session_id") and isinstance(value, str) and value:
            return name(value)
        return value

    return [(direction, clean(to_obj(message))) for direction, message in transcript]


async def _transcript_over_ndjson() -> list[Any]:
    seen: list[tuple[str, A2EMessage]] = []
    with trio.fail_after(BUDGET):
        async with running_bridge(elicitation=True) as (_, agent):
            agent.on_sample, agent.on_roots, agent.on_elicit = _sample, _roots, _elicit
            agent.on_message = lambda d, m: seen.append((d, m))
            await _script(agent)
    return _normalize(seen)


async def _transcript_direct(backend: str) -> list[Any]:
    seen: list[tuple[str, A2EMessage]] = []
    async with _open(
        backend,
        config={"elicitation": True, "ping_interval": None},
        on_sample=_sample,
        on_roots=_roots,
        on_elicit=_elicit,
        on_message=lambda d, m: seen.append((d, m)),
    ) as agent:
        await _script(agent)
    return _normalize(seen)


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_transcript_is_the_byte_streams(backend: str) -> None:
    over_ndjson = trio.run(_transcript_over_ndjson)
    direct = run(backend, _transcript_direct, backend, budget=BUDGET)
    assert len(direct) == len(over_ndjson) > 40
    for index, (a, b) in enumerate(zip(direct, over_ndjson, strict=True)):
        assert a == b, f"message {index} differs"
    kinds = {message["type"] for _, message in direct}
    assert {"mcp/sample/req", "mcp/root/list/req", "x-mcp/elicit/req", "tool/event"} <= kinds
    assert {"mcp/server/push", "error", "pong"} <= kinds


# Neither side sees the other change a message ----------------------------------------------


def _vandalize(value: Any) -> None:
    """Change every container inside ``value`` in place."""
    for container in _containers(value):
        if isinstance(container, dict):
            for key in list(container):
                container[key] = "vandalized"
            container["added"] = "vandalized"
        else:
            container[:] = ["vandalized"]


async def _isolation(backend: str, tiny: list[str]) -> None:
    sent: list[ToolCallRequest] = []

    def sample(request: MCPSamplingRequest) -> dict[str, Any]:
        # The agent changes the request it sent while the server still works on it.
        for message in sent:
            _vandalize(message.arguments)
        return _sample(request)

    questions = ["colour?", "number?"]

    def elicit(request: Any) -> dict[str, Any]:
        # The same, through the tool-call path of the in-process client.
        questions[:] = ["vandalized"]
        return {"action": "accept", "content": {"answer": "blue"}}

    host = BridgeConfig(ping_interval=None, elicitation=True).new_host(
        reconnect_base=0.05, reconnect_max=0.2
    )
    async with _open(backend, host=host, on_sample=sample, on_elicit=elicit) as agent:
        # What the agent sent is the bridge's own copy: a reconnect runs the command
        # that was registered, whatever became of the agent's dict.
        config = {"server_id": "t", "cmd": list(tiny), "env": {"EXTRA": "1"}}
        await agent.register(config)
        _vandalize(config)
        pid = int(_text(await agent.call_tool("t__pid")))
        os.kill(pid, signal.SIGKILL)
        await _wait_for_status(backend, agent, "t", "disconnected")
        await _wait_for_status(backend, agent, "t", "ready")
        assert int(_text(await agent.call_tool("t__pid"))) != pid

        # On 2026-07-28 the call is sent again with the agent's answer (a multi
        # round-trip request): it still carries the arguments as they were sent.
        await agent.register({"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "modern"})
        message = ToolCallRequest(tool_name="ex__sample", arguments={"prompt": "6 x 7?"})
        sent.append(message)
        response = await agent.request(message)
        assert isinstance(response, ToolCallResponse)
        assert _text(response.data) == "the agent's answer to: 6 x 7?"
        assert message.arguments == {"prompt": "vandalized", "added": "vandalized"}
        survey = await agent.call_tool("ex__survey", {"questions": questions})
        assert survey["data"]["structuredContent"]["answers"] == {
            "colour?": "blue",
            "number?": "blue",
        }

        # What the agent received is its own to change.
        async def snapshot() -> dict[str, Any]:
            return {
                "tools": await agent.list_tools(),
                "resources": await agent.list_resources(),
                "prompts": await agent.list_prompts(),
                "servers": await agent.list_servers(),
            }

        first = await snapshot()
        expected = json.loads(json.dumps(first))
        _vandalize(first)
        assert await snapshot() == expected
        assert all(t["input_schema"]["type"] == "object" for t in expected["tools"])


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_neither_side_sees_the_other_change_a_message(
    backend: str, tiny_command: list[str]
) -> None:
    run(backend, _isolation, backend, tiny_command, budget=BUDGET)


# Real servers, both backends -------------------------------------------------------------


async def _example_server(backend: str) -> None:
    samples: list[MCPSamplingRequest] = []
    asked: list[Any] = []

    def sample(request: MCPSamplingRequest) -> dict[str, Any]:
        samples.append(request)
        return _sample(request)

    async def roots(request: MCPRootsListRequest) -> list[dict[str, Any]]:
        asked.append(request)
        await _sleep(backend, 0.01)  # an async handler, run on the agent's side
        return _roots(request)

    config = {
        "servers": [{"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "legacy"}],
        "ping_interval": None,
    }
    async with _open(backend, config=config, on_sample=sample, on_roots=roots) as agent:
        info = await _wait_for_status(backend, agent, "ex", "ready")
        assert info["tools_count"] == len(TOOL_NAMES) and info["mcp_version"] == "2025-11-25"
        assert _text(await agent.call_tool("ex__echo", {"message": "hi ☃"})) == "hi ☃"
        sampled = await agent.call_tool("ex__sample", {"prompt": "6 x 7?"})
        assert _text(sampled) == "the agent's answer to: 6 x 7?"
        assert samples[-1].server_id == "ex" and samples[-1].max_tokens == 200
        roots_text = _text(await agent.call_tool("ex__list_roots"))
        assert "file:///agent/root" in roots_text and len(asked) == 1
        await agent.set_roots([{"uri": "file:///set/by/agent", "name": "set"}])
        assert "file:///set/by/agent" in _text(await agent.call_tool("ex__list_roots"))
        assert len(asked) == 1  # the roots the agent set answer from now on
        slow = await agent.call_tool("ex__slow", {"seconds": 0.05, "steps": 2}, streaming=True)
        assert slow["success"] and [e.seq for e in agent.events] == [1, 2]
        assert isinstance(agent.events[0], ToolEvent)
        pong = await agent.ping()
        assert isinstance(pong, Pong)
        # A message only the host may send is refused, as on a byte stream.
        with pytest.raises(A2ERequestError) as wrong_way:
            await agent.request(MCPSamplingRequest(server_id="ex"))
        assert wrong_way.value.code == "invalid_message"
        with pytest.raises(TypeError):
            await agent.call_tool("ex__echo", {"message": {1, 2}})  # not JSON: never sent
        assert _text(await agent.call_tool("ex__echo", {"message": "still fine"})) == "still fine"


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_example_server_with_sampling_and_roots(backend: str) -> None:
    run(backend, _example_server, backend, budget=BUDGET)


async def _everything(backend: str, command: list[str]) -> None:
    async with _open(
        backend,
        config={"elicitation": True, "ping_interval": None},
        on_sample=_sample,
        on_roots=_roots,
        on_elicit=lambda r: {
            "action": "accept",
            "content": {"name": "Ada Lovelace", "check": True, "integer": 7},
        },
    ) as agent:
        info = await agent.register({"server_id": "ev", "cmd": command})
        assert info["server_name"] == "mcp-servers/everything"
        await agent.wait_for_push(lambda p: p.method == "notifications/tools/list_changed")
        for _ in range(1000):
            names = {t["name"] for t in await agent.list_tools()}
            if "ev__trigger-sampling-request" in names:
                break
            await _sleep(backend, 0.01)
        assert _text(await agent.call_tool("ev__echo", {"message": "hello"})) == "Echo: hello"
        sampled = await agent.call_tool(
            "ev__trigger-sampling-request", {"prompt": "what is 6 x 7?", "maxTokens": 64}
        )
        assert "the agent's answer to" in _text(sampled)
        roots = await agent.call_tool("ev__get-roots-list")
        assert "file:///agent/root" in _text(roots)
        elicited = await agent.call_tool("ev__trigger-elicitation-request")
        assert "Ada Lovelace" in _text(elicited)
        slow = await agent.call_tool(
            "ev__trigger-long-running-operation", {"duration": 0.2, "steps": 2}, streaming=True
        )
        assert slow["success"] and len(agent.events) >= 2
        blob = await agent.read_resource("demo://resource/dynamic/blob/4")
        assert blob.contents[0]["type"] == "blob"
        rendered = await agent.get_prompt("args-prompt", {"city": "Paris", "state": "IDF"})
        assert "Paris" in json.dumps(rendered.messages)


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_server_everything(backend: str, everything_command: list[str]) -> None:
    run(backend, _everything, backend, everything_command, budget=BUDGET)


async def _kill_mid_call(backend: str, tiny: list[str]) -> None:
    host = BridgeConfig(ping_interval=None).new_host(reconnect_base=0.05, reconnect_max=0.2)
    async with _open(backend, host=host) as agent:
        await agent.register({"server_id": "t", "cmd": tiny})
        pid = int(_text(await agent.call_tool("t__pid")))
        outcome: dict[str, Any] = {}

        async def slow() -> None:
            outcome["r"] = await agent.call_tool("t__sleep", {"seconds": 30})

        async def kill() -> None:
            await _sleep(backend, 0.2)  # the call is in flight
            os.kill(pid, signal.SIGKILL)

        await _both(backend, slow, kill)
        assert outcome["r"]["error_code"] == "mcp_transport_error"
        assert outcome["r"]["retryable"] is True
        await _wait_for_status(backend, agent, "t", "ready")
        new_pid = int(_text(await agent.call_tool("t__pid")))
        assert new_pid != pid
        assert f"t__boot_{new_pid}" in {t["name"] for t in await agent.list_tools()}


async def _both(backend: str, *fns: Callable[[], Awaitable[None]]) -> None:
    if backend == "trio":
        async with trio.open_nursery() as nursery:
            for fn in fns:
                nursery.start_soon(fn)
        return
    await asyncio.gather(*(fn() for fn in fns))


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_killed_mid_call(backend: str, tiny_command: list[str]) -> None:
    run(backend, _kill_mid_call, backend, tiny_command, budget=BUDGET)


async def _leave_while_busy(backend: str, tiny: list[str]) -> None:
    """Leaving the block with servers running and a call in flight stops them all."""
    outcome: dict[str, Any] = {}

    async def agent_body() -> None:
        async with _open(backend, config={"ping_interval": None}) as agent:
            await agent.register({"server_id": "a", "cmd": tiny})
            await agent.register({"server_id": "b", "cmd": EXAMPLE})

            async def stuck() -> None:
                try:
                    await agent.call_tool("a__sleep", {"seconds": 60})
                except BaseException as exc:
                    outcome["stuck"] = type(exc).__name__
                    raise

            if backend == "trio":
                with trio.move_on_after(0.3):
                    await stuck()
            else:
                try:
                    await asyncio.wait_for(stuck(), 0.3)
                except TimeoutError:
                    pass

    await agent_body()
    assert outcome["stuck"] in ("Cancelled", "CancelledError")


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_shutdown_with_servers_running_leaves_nothing(
    backend: str, tiny_command: list[str]
) -> None:
    run(backend, _leave_while_busy, backend, tiny_command, budget=BUDGET)


async def _failing_callback(backend: str) -> None:
    def push(message: Any) -> None:
        raise RuntimeError("the agent's callback failed")

    async with _open(backend, config={"ping_interval": None}, on_push=push) as agent:
        await agent.register({"server_id": "ex", "cmd": EXAMPLE})
        await agent.subscribe("example://counter")
        await agent.call_tool("ex__increment")
        await _sleep(backend, 30)  # the failure ends the block long before


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_callback_that_raises_reaches_the_agent(backend: str) -> None:
    """As with a byte stream, an exception in the agent's callback ends the client
    and comes out of the ``async with``; the bridge is not harmed by it."""
    with pytest.raises(RuntimeError, match="callback failed"):
        run(backend, _failing_callback, backend, budget=BUDGET)


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_configured_servers_and_a_typed_config(backend: str) -> None:
    """``config`` is what ``sansio-mcp bridge --config`` reads, as a dict or parsed."""

    async def body() -> None:
        config = parse_config({"servers": [{"server_id": "c", "cmd": EXAMPLE}], "roots": []})
        async with _open(backend, config=config) as agent:
            info = await _wait_for_status(backend, agent, "c", "ready")
            assert info["tools_count"] == len(TOOL_NAMES)
            # Configured roots (even none) answer servers at once: the agent is not asked.
            assert _text(await agent.call_tool("c__list_roots")) == "(no roots)"

    run(backend, body, budget=BUDGET)


@pytest.mark.usefixtures("no_leaks")
def test_the_documented_example_runs() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "bridge.md").read_text("utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.DOTALL) if "direct" in b]
    example = block.replace('["sansio-mcp", "example-server"]', repr(EXAMPLE))
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=BUDGET
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "'ex__echo'" in lines[0] and lines[1] == "42"
    assert lines[2] == "project: file:///home/me/project"


async def _timeouts(backend: str, tiny: list[str]) -> None:
    """The runner's timer wakes for a deadline earlier than the one it sleeps until
    (the next ping, 30 s away): a tool call's own 1 s limit, then an agent that never
    answers a sampling request within the server's timeout."""
    clock = trio.current_time if backend == "trio" else asyncio.get_running_loop().time

    async def never(request: MCPSamplingRequest) -> dict[str, Any]:
        await _sleep(backend, 60)
        raise AssertionError("not reached")

    async with _open(backend, on_sample=never) as agent:
        await agent.register({"server_id": "t", "cmd": tiny})
        started = clock()
        result = await agent.call_tool("t__sleep", {"seconds": 30}, timeout=1)
        assert result["error_code"] == "timeout" and result["retryable"] is True
        # Far below the 30 s the timer would otherwise sleep (room for a loaded machine).
        assert 0.9 <= clock() - started < 15
        await agent.register(
            {"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "legacy", "timeout": 1}
        )
        started = clock()
        result = await agent.call_tool("ex__sample", {"prompt": "?"})
        assert result["success"] is False  # the server was told the agent did not answer
        assert 0.9 <= clock() - started < 15


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_deadlines_wake_the_runner(backend: str, tiny_command: list[str]) -> None:
    run(backend, _timeouts, backend, tiny_command, budget=BUDGET)


_ODD_CALLS: list[tuple[Any, Any, Any]] = [
    ("ex__echo", {"message": "plain"}, 30),
    ("ex__echo", {"message": ("a", "tuple")}, 30),
    ("ex__echo", {1: "a key that is not a string", "message": "x"}, 30),
    ("ex__echo", {"message": _nested(DEFAULT_MAX_DEPTH // 2)}, 30),
    ("ex__echo", {"message": {1, 2}}, 30),
    ("ex__echo", {"message": float("nan")}, 30),
    ("ex__echo", {"message": "x"}, True),
    ("ex__echo", {"message": "x"}, 2.5),
    (5, {"message": "x"}, 30),
    ("ex__missing", None, 30),
]


def _outcome(result: Any) -> Any:
    if isinstance(result, BaseException):
        return (type(result).__name__, getattr(result, "code", None))
    return {k: v for k, v in result.items() if k != "duration_ms"}


async def _odd_calls(agent: A2EClientBase) -> list[Any]:
    await agent.register({"server_id": "ex", "cmd": EXAMPLE, "protocol_version": "legacy"})
    outcomes = []
    for name, arguments, timeout in _ODD_CALLS:
        try:
            outcomes.append(_outcome(await agent.call_tool(name, arguments, timeout=timeout)))
        except (A2ERequestError, TypeError, ValueError) as exc:
            outcomes.append(_outcome(exc))
    return outcomes


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_tool_call_fast_path_answers_as_the_wire_does(backend: str) -> None:
    """A tool call the in-process client builds for the bridge alone skips the copy
    at the hand-over; whatever it is given, the answer is the byte stream's."""

    async def over_ndjson() -> list[Any]:
        async with running_bridge() as (_, agent):
            return await _odd_calls(agent)

    async def direct() -> list[Any]:
        async with _open(backend) as agent:
            assert agent.hand_over_call is not None
            return await _odd_calls(agent)

    expected = trio.run(over_ndjson)
    assert run(backend, direct, budget=BUDGET) == expected
    kinds = {type(o).__name__ if not isinstance(o, tuple) else o[0] for o in expected}
    assert {"dict", "A2ERequestError", "TypeError", "ValueError"} <= kinds
