"""A replica is subscribed to the handshake sessions' bus channel, the subscription
in effect, before it listens: a relay another replica sends the moment this one is
reachable is not lost (the CLI's ``settled()`` wait runs before the listener is
built, so the listener itself must settle its own subscription)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs

from sansio_mcp.runtime import EventBus, EventSubscription, open_stores
from sansio_mcp.runtime._session_store import SESSION_CHANNEL
from tests.auth.test_http import Backend
from tests.session_replicas.test_two_replicas import replica


class RecordingBus:
    """The bundle's bus, noting each subscription and each ``settled()`` that returned
    (with the channels subscribed when it was called)."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.channels: list[str] = []
        self.settled_for: list[set[str]] = []

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        await self.bus.publish(channel, message)

    def subscribe(
        self, channel: str, deliver: Callable[[dict[str, Any]], None]
    ) -> EventSubscription:
        self.channels.append(channel)
        return self.bus.subscribe(channel, deliver)

    async def settled(self) -> None:
        channels = set(self.channels)
        await self.bus.settled()
        self.settled_for.append(channels)


def test_the_session_channel_is_settled_before_the_replica_listens(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        namespace = f"listen{time.monotonic_ns()}"
        async with open_stores(redis_url, backend.backend, namespace=namespace) as stores:
            bus = RecordingBus(stores.events)
            server = replica(attrs.evolve(stores, events=bus))
            async with backend.serve_http(server):
                # The port is announced: the subscription was made and settled before.
                assert any(SESSION_CHANNEL in channels for channels in bus.settled_for), (
                    bus.channels,
                    bus.settled_for,
                )

    backend.run(main)


def test_an_asgi_app_settles_the_session_channel_before_startup_completes(
    redis_url: str,
) -> None:
    from asyncio_adapters import BACKEND
    from asyncio_adapters.asgi import MCPApp

    async def main() -> None:
        namespace = f"listen{time.monotonic_ns()}"
        async with open_stores(redis_url, BACKEND, namespace=namespace) as stores:
            bus = RecordingBus(stores.events)
            app = MCPApp(replica(attrs.evolve(stores, events=bus)))
            async with app.lifespan():
                assert any(SESSION_CHANNEL in channels for channels in bus.settled_for)

    BACKEND.run(main)
