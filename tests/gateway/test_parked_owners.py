"""The store of who parked what (``ParkedCallOwners``), one test body for the
in-memory and the Redis store alike, on both backends: a record names its
replica until its time is up, and a later record of the same call replaces it."""

from __future__ import annotations

import importlib
import uuid

import pytest

from sansio_mcp.runtime import open_stores
from sansio_mcp_apps.gateway.runtime import parked_call_owners

from .conftest import BACKENDS


@pytest.fixture(params=["memory", "redis"])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory"
    return str(request.getfixturevalue("redis_url"))


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_a_record_names_its_replica_for_its_time(backend_name: str, store_url: str) -> None:
    backend = importlib.import_module(f"{backend_name}_adapters").BACKEND

    async def main() -> None:
        namespace = f"test-{uuid.uuid4().hex}"
        async with open_stores(store_url, backend, namespace=namespace) as stores:
            owners = parked_call_owners(stores, backend.clock)
            assert await owners.owner("call-1") is None
            await owners.record("call-1", "host:1", 60)
            await owners.record("call-2", "host:2", 0.2)
            assert await owners.owner("call-1") == "host:1"
            await owners.record("call-1", "host:3", 60)  # parked anew elsewhere
            assert await owners.owner("call-1") == "host:3"
            async with backend.fail_after(10):
                while await owners.owner("call-2") is not None:
                    await backend.sleep(0.02)
            assert await owners.owner("call-1") == "host:3"

    backend.run(main)
