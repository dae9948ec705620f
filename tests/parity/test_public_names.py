"""The two adapters publish the same names: each one's twin, with its backend's
prefix (``TrioRunner`` and ``AsyncioRunner``), and every other name alike."""

from __future__ import annotations

import asyncio_adapters
import trio_adapters


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
