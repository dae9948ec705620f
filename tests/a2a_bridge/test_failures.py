"""Failures the bridge must survive: handles that expire (the clock injected), an agent
killed mid-task, an agent that never answers, and a bad card."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sansio_mcp.runtime import ClientAPI, TransportBackend
from sansio_mcp_apps.a2a.runtime import A2ABridge

from .conftest import config_for, running_agent, serving


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def call(backend: TransportBackend, config: Any, body: Any, **options: Any) -> Any:
    async def main() -> Any:
        async def use(url: str, bridge: A2ABridge) -> Any:
            async with backend.fail_after(60):
                async with backend.connect([], url, None, mode="modern") as client:
                    return await body(client, bridge)

        return await serving(backend, config, use, **options)

    return backend.run(main)


def test_handles_expire(backend: TransportBackend, agent_url: str) -> None:
    clock = Clock()

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        done = await client.call_tool("a2a_send_message", {"text": "task: abc"})
        handle = done["structuredContent"]["taskHandle"]
        context = done["structuredContent"]["contextHandle"]
        clock.now += 59  # within the TTL, and each use restarts it
        used = await client.call_tool("a2a_get_task", {"taskHandle": handle})
        assert used["isError"] is False
        clock.now += 59
        assert (await client.call_tool("a2a_get_task", {"taskHandle": handle}))["isError"] is False
        clock.now += 60.001
        expired = await client.call_tool("a2a_get_task", {"taskHandle": handle})
        assert expired["isError"] is True
        assert expired["structuredContent"]["error"] == "expired_handle"
        assert "kept in memory for 1 minute after their last use" in expired["content"][0]["text"]
        stale = await client.call_tool(
            "a2a_send_message", {"text": "echo: hi", "contextHandle": context}
        )
        assert stale["structuredContent"]["error"] == "expired_handle"
        made_up = await client.call_tool("a2a_cancel_task", {"taskHandle": "tk_nothing"})
        assert made_up["structuredContent"]["error"] == "unknown_handle"
        assert len(bridge.tasks) == 0

    call(backend, config_for(agent_url, handleTtlMs=60_000), body, clock=clock)


def test_agent_killed_mid_task(backend: TransportBackend) -> None:
    """The agent dies while the bridge follows its task: a tool error naming the agent,
    and the bridge goes on serving."""
    with running_agent() as (url, process):

        async def body(client: ClientAPI, bridge: A2ABridge) -> None:
            async def kill_soon() -> None:
                await backend.sleep(0.5)
                process.kill()

            async with backend.open_task_group() as group:
                group.start_soon(kill_soon)
                result = await client.call_tool("a2a_send_message", {"text": "slow: 8000"})
            assert result["isError"] is True
            assert result["structuredContent"]["error"] == "agent_unreachable", result
            assert "'fixture'" in result["content"][0]["text"]
            # Nothing listens there now: refused at once, the same kind of failure.
            again = await client.call_tool("a2a_discover", {})
            assert again["structuredContent"]["error"] == "agent_unreachable"
            tools = await client.list_tools()
            assert len(tools) == 4

        call(backend, config_for(url), body)


def test_bad_cards(backend: TransportBackend, agent_url: str) -> None:
    """A card URL that is not a card, and one that answers 404: precise tool errors."""
    config = config_for(agent_url)
    broken = type(config)(
        agents=(
            type(config.agents[0])("notcard", card_url=agent_url),  # the JSON-RPC endpoint
            type(config.agents[0])("missing", card_url=agent_url + "nope.json"),
        )
    )

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        notcard = await client.call_tool("a2a_discover", {"agent": "notcard"})
        assert notcard["isError"] is True
        assert notcard["structuredContent"]["error"] == "agent_failure"
        missing = await client.call_tool("a2a_send_message", {"agent": "missing", "text": "x"})
        assert missing["structuredContent"]["error"] == "agent_failure"
        assert "404" in missing["content"][0]["text"]

    call(backend, broken, body)


def test_kept_connections_and_an_agent_restarted(backend: TransportBackend) -> None:
    """Calls to an agent reuse one kept-alive connection; when the agent restarts on the
    same port, the stale connection is dropped and the call goes out afresh."""
    with running_agent() as (url, process):
        port = url.rsplit(":", 1)[1].strip("/")

        async def body(client: ClientAPI, bridge: A2ABridge) -> None:
            pool = bridge.transport.pool
            for _ in range(3):
                done = await client.call_tool("a2a_send_message", {"text": "echo: hi"})
                assert done["isError"] is False
            assert len(pool) == 1  # one connection, kept between calls
            process.kill()
            process.wait()
            with running_agent("--port", port):
                again = await client.call_tool("a2a_send_message", {"text": "echo: back"})
                assert again["isError"] is False, again
                assert again["content"][0]["text"] == "back"

        call(backend, config_for(url), body)


MALFORMED = {
    "malformed:nan": "a number JSON cannot carry",
    "malformed:deep": "nested too deeply",  # past the JSON parser's depth
    "malformed:deep:200": "nested too deeply",  # past protobuf's (100)
    "malformed:list": "not an A2A 1.0 answer",
    "malformed:string": "not an A2A 1.0 answer",
}


def test_malformed_answers_are_agent_failures(backend: TransportBackend, agent_url: str) -> None:
    """NaN, nesting past the recursion limit, a result that is no object: the documented
    agent_failure naming the agent and what was wrong, never a Python exception's text;
    the bridge goes on serving."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        for text, why in MALFORMED.items():
            result = await client.call_tool("a2a_send_message", {"text": text})
            assert result["isError"] is True, (text, result)
            assert result["structuredContent"]["error"] == "agent_failure", (text, result)
            said = result["content"][0]["text"]
            assert said.startswith("agent 'fixture' sent a malformed answer") and why in said
            assert "Error" not in said and "Traceback" not in said, said
        assert (await client.call_tool("a2a_send_message", {"text": "echo: ok"}))[
            "isError"
        ] is False

    call(backend, config_for(agent_url), body)


def test_malformed_cards_are_agent_failures(backend: TransportBackend, agent_url: str) -> None:
    config = config_for(agent_url)
    agent = type(config.agents[0])
    broken = type(config)(
        agents=tuple(
            agent(how, card_url=f"{agent_url}malformed-card/{how}") for how in ("nan", "deep")
        )
    )

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        for how, why in (("nan", "a number JSON cannot carry"), ("deep", "nested too deeply")):
            result = await client.call_tool("a2a_discover", {"agent": how})
            assert result["structuredContent"]["error"] == "agent_failure", result
            said = result["content"][0]["text"]
            assert said.startswith(f"agent {how!r} sent a malformed answer") and why in said, said

    call(backend, broken, body)


def test_a_reused_task_id_gets_no_second_handle(backend: TransportBackend, agent_url: str) -> None:
    """An agent answering a new conversation with a task id it gave another: refused
    (agent_failure), so one task's handle never reaches two conversations; within the
    conversation that owns the task, the same handle comes back."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        first = await client.call_tool("a2a_send_message", {"text": "reuse"})
        assert first["isError"] is False, first
        handle = first["structuredContent"]["taskHandle"]
        context = first["structuredContent"]["contextHandle"]
        other = await client.call_tool("a2a_send_message", {"text": "reuse"})
        assert other["isError"] is True
        assert other["structuredContent"]["error"] == "agent_failure"
        assert handle not in str(other)
        assert "already has a handle for" in other["content"][0]["text"]
        same = await client.call_tool(
            "a2a_send_message", {"text": "reuse", "contextHandle": context}
        )
        assert same["isError"] is False, same
        assert same["structuredContent"]["taskHandle"] == handle
        assert len(bridge.tasks) == 1

    call(backend, config_for(agent_url), body)


def test_many_parts_are_cut_and_the_cut_is_said(backend: TransportBackend, agent_url: str) -> None:
    """A task of many parts: at most maxResultParts blocks, then a text block saying how
    many were left out (the note too); maxResultBytes cuts the same way."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        result = await client.call_tool("a2a_send_message", {"text": "many: 300"})
        content = result["content"]
        assert len(content) == 11, len(content)
        assert all(block["text"] == "" for block in content[:10])
        closing = content[-1]["text"]
        assert "left out 290 parts" in closing and "maxResultParts" in closing, closing
        assert "left out 290 parts" in result["structuredContent"]["note"]
        assert result["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED"

    call(backend, config_for(agent_url, maxResultParts=10), body)

    async def by_bytes(client: ClientAPI, bridge: A2ABridge) -> None:
        result = await client.call_tool("a2a_send_message", {"text": "many: 300"})
        kept = result["content"][:-1]
        assert 0 < len(kept) < 20
        assert sum(len(json.dumps(block)) for block in kept) <= 2048
        assert f"left out {300 - len(kept)} parts" in result["content"][-1]["text"]

    call(backend, config_for(agent_url, maxResultBytes=2048), by_bytes)


def test_a_client_past_its_handle_bound_gets_a_tool_error(
    backend: TransportBackend, agent_url: str
) -> None:
    """``maxHandlesPerOwner``: a new task past it is a precise tool error, and the
    client's live handles keep working."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        first = await client.call_tool("a2a_send_message", {"text": "task: one"})
        assert first["isError"] is False, first
        handle = first["structuredContent"]["taskHandle"]
        context = first["structuredContent"]["contextHandle"]
        second = await client.call_tool(
            "a2a_send_message", {"text": "task: two", "contextHandle": context}
        )
        assert second["isError"] is True
        assert second["structuredContent"]["error"] == "too_many_handles"
        assert second["content"][0]["text"] == (
            "too many live handles: this client already holds 1, the most "
            "maxHandlesPerOwner allows; a handle is freed when it expires"
        )
        again = await client.call_tool("a2a_get_task", {"taskHandle": handle})
        assert again["isError"] is False, again
        assert again["structuredContent"]["taskHandle"] == handle
        assert len(bridge.tasks) == 1

    call(backend, config_for(agent_url, maxHandlesPerOwner=1), body)


def test_a_task_no_handle_can_name_is_cancelled_at_the_agent(
    backend: TransportBackend, agent_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new conversation past ``maxHandlesPerOwner``: the agent has started a task
    (waiting for input) that the refused handle would have named; the bridge cancels
    it (A2A CancelTask) instead of leaving it to nobody, and says so."""
    started: list[str] = []

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        first = await client.call_tool("a2a_send_message", {"text": "task: one"})
        assert first["isError"] is False, first
        link = bridge.links["fixture"]
        send = link.send_message

        async def recording(*args: Any, **kwargs: Any) -> Any:
            kind, value = await send(*args, **kwargs)
            if kind == "task":
                started.append(value["id"])
            return kind, value

        monkeypatch.setattr(link, "send_message", recording)
        refused = await client.call_tool("a2a_send_message", {"text": "ask: colour?"})
        assert refused["isError"] is True
        assert refused["structuredContent"]["error"] == "too_many_handles"
        assert refused["content"][0]["text"] == (
            "too many live handles: this client already holds 1, the most "
            "maxHandlesPerOwner allows; a handle is freed when it expires; the bridge "
            f"cancelled the agent's task {started[0]!r}, which no handle could name"
        )
        task = await link.get_task(started[0])
        assert task["status"]["state"] == "TASK_STATE_CANCELED", task

    call(backend, config_for(agent_url, maxHandlesPerOwner=1), body)
