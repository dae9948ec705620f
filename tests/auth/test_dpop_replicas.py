"""DPoP proofs across replicas (issue 33): two servers sharing a Redis store refuse at
one a proof already used at the other; with memory stores (or none) each remembers
its own, as before; with Redis down each falls back to its own memory, and protected
calls keep working.  Both backends, real HTTP on loopback."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from redis_service import RedisService

from sansio_mcp import _json
from sansio_mcp.auth import (
    DPoPKey,
    HTTPCall,
    ResourceServer,
    dpop_proof,
    parse_challenges,
)
from sansio_mcp.runtime import Stores, open_stores
from sansio_mcp.runtime._oauth import fetch
from tests.auth.test_http import INITIALIZE, Backend
from tests.auth.test_resource_server import whoami_server
from tests.replicas.dpop_server import RESOURCE, BoundToken
from tests.transports.helpers import POST_HEADERS


class Replicas:
    def __init__(self, backend: Backend, key: DPoPKey, ports: list[int]) -> None:
        self.backend, self.key, self.ports = backend, key, ports

    def proof(self) -> str:
        now = self.backend.backend.wall_clock()
        jti = uuid.uuid4().hex
        return dpop_proof(self.key, "POST", RESOURCE, now=now, jti=jti, access_token="tok")

    async def post(self, replica: int, proof: str) -> Any:
        url = f"http://127.0.0.1:{self.ports[replica]}/mcp"
        headers = {**POST_HEADERS, "authorization": "DPoP tok", "dpop": proof}
        return await fetch(self.backend.backend, HTTPCall("POST", url, headers, INITIALIZE))

    async def status(self, replica: int, proof: str) -> int:
        return int((await self.post(replica, proof)).status)


@asynccontextmanager
async def replicas(backend: Backend, stores: list[Stores | None]) -> AsyncIterator[Replicas]:
    key = DPoPKey()
    async with AsyncExitStack() as stack:
        ports = []
        for shared in stores:
            server = whoami_server()
            server.auth = ResourceServer(
                RESOURCE,
                ["http://as.example"],
                BoundToken(key.thumbprint),
                required_scopes=["mcp"],
            )
            server.stores = shared
            ports.append(await stack.enter_async_context(backend.serve_http(server)))
        yield Replicas(backend, key, ports)


def assert_replayed(refused: Any) -> None:
    assert refused.status == 401
    (challenge,) = parse_challenges(refused.headers["www-authenticate"])
    assert challenge.scheme == "dpop" and challenge.error == "invalid_dpop_proof"
    assert _json.loads(refused.body) == {
        "error": "invalid_dpop_proof",
        "error_description": "the DPoP proof was used before",
    }


def test_a_proof_used_at_one_replica_is_refused_at_the_other(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        namespace = f"test-{uuid.uuid4().hex}"
        run = backend.backend
        async with (
            open_stores(redis_url, run, namespace=namespace, replica_id="a") as a,
            open_stores(redis_url, run, namespace=namespace, replica_id="b") as b,
            replicas(backend, [a, b]) as world,
        ):
            proof = world.proof()
            assert await world.status(0, proof) == 200
            assert_replayed(await world.post(1, proof))
            assert_replayed(await world.post(0, proof))
            other = world.proof()
            assert await world.status(1, other) == 200
            assert_replayed(await world.post(0, other))

    backend.run(main)


def test_with_memory_stores_or_none_each_replica_remembers_its_own(backend: Backend) -> None:
    async def main() -> None:
        async with (
            open_stores("memory", backend.backend) as memory,
            replicas(backend, [memory, None]) as world,
        ):
            for replica in (0, 1):
                proof = world.proof()
                assert await world.status(replica, proof) == 200
                assert_replayed(await world.post(replica, proof))
                # Another process's memory does not know it: what a shared store is for.
                assert await world.status(1 - replica, proof) == 200

    backend.run(main)


def test_with_redis_down_each_replica_falls_back_to_its_own_memory(
    backend: Backend, redis_service: RedisService
) -> None:
    async def main() -> None:
        async with (
            open_stores(redis_service.url, backend.backend, namespace="down") as stores,
            replicas(backend, [stores]) as world,
        ):
            redis_service.stop()
            proof = world.proof()
            async with backend.backend.fail_after(10):
                assert await world.status(0, proof) == 200  # protected calls keep working
                assert_replayed(await world.post(0, proof))
            redis_service.start()
            again = world.proof()
            assert await world.status(0, again) == 200
            assert_replayed(await world.post(0, again))

    backend.run(main)
