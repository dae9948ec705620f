"""The two adapters publish the same names: each one's twin, with its backend's
prefix (``TrioRunner`` and ``AsyncioRunner``), and every other name alike."""

from __future__ import annotations

from typing import Any

import pytest

import asyncio_adapters
import trio_adapters
from sansio_mcp import ClientSession
from sansio_mcp.runtime import Subscription


def _unprefixed(names: list[str], prefix: str) -> set[str]:
    return {name.removeprefix(prefix) for name in names}


def test_both_adapters_export_the_same_names() -> None:
    assert _unprefixed(trio_adapters.__all__, "Trio") == _unprefixed(
        asyncio_adapters.__all__, "Asyncio"
    )


def test_each_exported_name_exists() -> None:
    for adapter in (trio_adapters, asyncio_adapters):
        assert [n for n in adapter.__all__ if not hasattr(adapter, n)] == []


def test_each_adapter_has_its_session_host_and_pipe_stream() -> None:
    assert issubclass(trio_adapters.TrioRunner, trio_adapters.TrioSessionHost)
    assert issubclass(asyncio_adapters.AsyncioRunner, asyncio_adapters.AsyncioSessionHost)
    assert trio_adapters.PipeStream is not asyncio_adapters.PipeStream


class _NoOutput:
    def schedule(self) -> None:
        pass


@pytest.mark.parametrize(
    "host_class",
    [trio_adapters.TrioSessionHost, asyncio_adapters.AsyncioSessionHost],
    ids=["trio", "asyncio"],
)
def test_a_hosts_deprecated_new_subscription_warns_and_still_makes_one(host_class: Any) -> None:
    async def no_requests(*_: Any) -> None:
        raise AssertionError("no request is handled here")

    host = host_class(ClientSession(), handle_request=no_requests, output=_NoOutput())
    with pytest.warns(DeprecationWarning, match="use ClientAPI.new_subscription"):
        subscription = host.new_subscription(1)
    subscription.deliver("notifications/tools/list_changed", {})
    subscription.deliver("notifications/prompts/list_changed", {})
    assert isinstance(subscription, Subscription)
    assert subscription.dropped == 1
