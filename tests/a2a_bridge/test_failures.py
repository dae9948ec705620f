"""Failures the bridge must survive: handles that expire (the clock injected), an agent
killed mid-task, an agent that never answers, and a bad card."""

from __future__ import annotations

from typing import Any

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
