"""How ``a2a_send_message`` follows an agent's active task: by the agent's stream
(SubscribeToTask) when its card declares streaming, by GetTask polling otherwise.  The
bridge's requests to the agent are counted on its HTTP client."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest

from sansio_mcp.runtime import ClientAPI, TransportBackend
from sansio_mcp_apps.a2a.runtime import A2ABridge

from .conftest import config_for, running_agent
from .test_bridge_e2e import run, send


def counting(bridge: A2ABridge) -> Counter[str]:
    """The JSON-RPC methods the bridge sends its agents, counted as they go out."""
    methods: Counter[str] = Counter()

    async def hook(request: Any) -> None:
        if request.method == "POST":
            methods[json.loads(request.content)["method"]] += 1

    bridge.http.event_hooks["request"].append(hook)
    return methods


def test_a_streaming_agents_task_is_followed_by_its_stream(
    backend: TransportBackend, agent_url: str
) -> None:
    """A task that works for a while, and one that stops for input: each followed by
    one SubscribeToTask, with no GetTask at all."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        methods = counting(bridge)
        slow = await send(client, "slow: 600")
        assert slow["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED", slow
        assert "slept 600 ms" in json.dumps(slow["content"])
        assert methods == {"SendMessage": 1, "SubscribeToTask": 1}, methods
        methods.clear()
        asked = await send(client, "ask: colour")
        assert asked["structuredContent"]["status"] == "input_required", asked
        assert methods["GetTask"] == 0, methods
        # The stream the agent kept open past INPUT_REQUIRED was closed: the bridge goes
        # on answering, and the answer completes the task.
        handle = asked["structuredContent"]["taskHandle"]
        done = await send(client, "red", taskHandle=handle)
        assert done["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED", done
        assert methods["GetTask"] == 0, methods

    # A long poll interval and silence bound: a GetTask here would be the follow's.
    run(backend, agent_url, "modern", body, poll_interval=0.05, stream_silence=30)


def test_a_silent_stream_gives_way_to_polling(backend: TransportBackend, agent_url: str) -> None:
    """A task the agent stops working on (and later forgets) leaves its stream open and
    silent: after ``stream_silence`` GetTask takes over, and finds the task gone."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        methods = counting(bridge)
        vanished = await send(client, "vanish")
        assert vanished["structuredContent"]["a2aErrorCode"] == -32001, vanished
        assert methods["SubscribeToTask"] == 1, methods
        assert methods["GetTask"] >= 1, methods

    run(backend, agent_url, "modern", body, max_wait=20, stream_silence=0.1)


def test_a_non_streaming_agents_task_is_polled(backend: TransportBackend) -> None:
    """No streaming in the card: the task is followed by GetTask, never subscribed to."""
    with running_agent("--no-streaming") as (url, _):

        async def body(client: ClientAPI, bridge: A2ABridge) -> None:
            methods = counting(bridge)
            slow = await send(client, "slow: 300")
            assert slow["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED", slow
            assert methods["SubscribeToTask"] == 0, methods
            assert methods["SendMessage"] == 1, methods
            assert methods["GetTask"] >= 1, methods

        run(backend, url, "modern", body, poll_interval=0.05)


def test_a_cancelled_follow_closes_the_stream(
    backend: TransportBackend, agent_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follow cancelled (as when the MCP call is) while the stream is open: the
    stream is closed then, not when the task ends, and the agent link goes on."""

    async def main() -> None:
        bridge = A2ABridge(config_for(agent_url), backend)
        try:
            link = bridge.links["fixture"]
            following, closed = backend.new_signal(), backend.new_signal()
            subscribe = link.subscribe

            async def watched(task_id: str) -> AsyncIterator[dict[str, Any]]:
                try:
                    async for task in subscribe(task_id):
                        following.set()
                        yield task
                finally:
                    closed.set()

            monkeypatch.setattr(link, "subscribe", watched)
            methods = counting(bridge)
            _, task = await link.send_message("slow: 10000", context_id=None, task_id=None)
            async with backend.fail_after(30):
                async with backend.open_task_group() as group:
                    follow = group.start_cancellable(partial(bridge._follow, link, task))
                    await following.wait()
                    follow.cancel()
                    # Well before the task's 10 s: the cancellation closed the stream.
                    async with backend.fail_after(8):
                        await closed.wait()
            assert methods["GetTask"] == 0, methods
            _, message = await link.send_message("echo: after", context_id=None, task_id=None)
            assert message["parts"][0]["text"] == "after"
            await link.cancel_task(task["id"])
        finally:
            await bridge.aclose()

    backend.run(main)
