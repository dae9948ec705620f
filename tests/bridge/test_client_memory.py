"""The agent-side A2E client keeps bounded state however long it runs: time
limits of finished waits, and the push and event history."""

from __future__ import annotations

import trio

from sansio_mcp_apps.a2e import MCPServerPush, Ping, Pong
from sansio_mcp_apps.a2e.adapters.trio_client import open_a2e_direct


async def test_finished_waits_do_not_pile_up_whatever_their_time_limits() -> None:
    """An agent giving each request what is left of its own budget uses a new
    limit every time (this once kept one queue per limit ever used)."""
    with trio.fail_after(60):
        async with open_a2e_direct() as agent:
            budget_ends = trio.current_time() + 3600
            for _ in range(3000):
                remaining = budget_ends - trio.current_time()
                await agent.request(agent.stamp(Ping), timeout=remaining, expect=Pong)
                assert len(agent._deadlines) <= 70  # swept: not one per request


async def test_the_push_history_is_bounded_and_waiting_for_a_push_still_works() -> None:
    with trio.fail_after(30):
        async with open_a2e_direct(history=100) as agent:

            def push(n: int) -> MCPServerPush:
                return agent.stamp(MCPServerPush, server_id="s", method="m", params={"n": n})

            for n in range(1000):
                agent.feed(push(n))
            assert len(agent.pushes) <= 200
            assert agent.pushes[-1].params == {"n": 999}

            async def later() -> None:
                await trio.sleep(0.05)
                for n in range(1000, 1500):  # trims the history while the waiter waits
                    agent.feed(push(n))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(later)
                found = await agent.wait_for_push(lambda p: p.params["n"] == 1400, timeout=10)
            assert found.params == {"n": 1400}
