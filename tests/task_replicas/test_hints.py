"""Hints across replicas (issue 33, "listen hints from any replica"): a tool on A says
its server's tool list changed; a 2026-07-28 client listening on B hears
``notifications/tools/list_changed``.  Over Streamable HTTP on two ports, on both
backends, through one process's shared memory bus and through Redis; with Redis down the
hint stays on its replica and the tool's call succeeds."""

from __future__ import annotations

import logging

import pytest
from redis_service import RedisService

from sansio_mcp.runtime import ClientHandlers, Context, Server
from tests.auth.test_http import Backend

from .test_replicas import KINDS, redis_url_for, served


def add_announce(server: Server) -> None:
    @server.tool()
    async def announce(ctx: Context) -> str:
        """Say the tool list changed."""
        await ctx.list_changed("tools")
        return "announced"


@pytest.mark.parametrize("kind", KINDS)
def test_a_listener_on_b_hears_a_list_change_announced_on_a(
    kind: str, backend: Backend, request: pytest.FixtureRequest
) -> None:
    redis_url = redis_url_for(kind, request)

    async def main() -> None:
        async with served(kind, backend, redis_url) as (server_a, _server_b, a, b):
            add_announce(server_a)
            async with (
                backend.backend.connect(
                    [], b.url, "http", mode="modern", handlers=ClientHandlers()
                ) as client,
                client.listen(tools_list_changed=True) as subscription,
            ):
                assert subscription.acknowledged_filter == {"toolsListChanged": True}
                assert (await a.result("tools/call", {"name": "announce"}))["content"]
                async with backend.backend.fail_after(15):
                    async for method, _params in subscription:
                        assert method == "notifications/tools/list_changed"
                        break

    backend.run(main)


def test_with_redis_down_a_hint_is_kept_to_its_replica_and_the_call_succeeds(
    backend: Backend, redis_service: RedisService, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with served("redis", backend, redis_service.url) as (server_a, _b, a, _caller_b):
            add_announce(server_a)
            redis_service.stop()
            try:
                answer = await a.result("tools/call", {"name": "announce"})
            finally:
                redis_service.start()
            assert answer["content"][0]["text"] == "announced"

    with caplog.at_level(logging.WARNING, logger="sansio_mcp.server"):
        backend.run(main)
    [record] = [r for r in caplog.records if r.name == "sansio_mcp.server"]
    assert record.getMessage().startswith("a hint was not shared with the other replicas: ")
