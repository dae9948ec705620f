"""Where the gateway keeps connector status and the catalog: behind
:class:`GatewayStore`, so that several gateways could share one; the default
keeps it in memory.  Nothing per client is kept at all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from ._catalog import DEFAULT_TTL_MS, Catalog, ConnectorTools
from ._config import GatewayConfig, ToolOverride
from ._status import ConnectorStatus, StatusTrigger, next_status

__all__ = [
    "CatalogView",
    "ConnectorRecord",
    "GatewayStore",
    "MemoryStore",
    "catalog_of",
    "move",
    "status_report",
]


@attrs.frozen
class ConnectorRecord:
    """What the store knows of one connector."""

    status: ConnectorStatus = ConnectorStatus.CONNECTING
    tools: ConnectorTools | None = None
    error: str | None = None
    attempts: int = 0


class GatewayStore(Protocol):
    """The shared state of a gateway: per-connector records and a version that
    grows whenever the listed catalog may have changed."""

    def record(self, name: str) -> ConnectorRecord: ...

    def put(self, name: str, record: ConnectorRecord) -> None: ...

    @property
    def version(self) -> int: ...


class MemoryStore:
    """The in-memory :class:`GatewayStore` of a single gateway process."""

    def __init__(self, names: Sequence[str]) -> None:
        self._records = {name: ConnectorRecord() for name in names}
        self._version = 0

    def record(self, name: str) -> ConnectorRecord:
        return self._records[name]

    def put(self, name: str, record: ConnectorRecord) -> None:
        before = self._records[name]
        self._records[name] = record
        if (before.status is ConnectorStatus.READY) != (
            record.status is ConnectorStatus.READY
        ) or before.tools != record.tools:
            self._version += 1

    @property
    def version(self) -> int:
        return self._version


def move(
    store: GatewayStore,
    name: str,
    trigger: StatusTrigger,
    *,
    tools: ConnectorTools | None = None,
    error: str | None = None,
) -> ConnectorRecord:
    """Apply ``trigger`` to connector ``name`` (checked against the table) and keep
    what it brings: its tools once listed, its error once failed."""
    before = store.record(name)
    status = next_status(before.status, trigger)
    if status is ConnectorStatus.READY:
        record = ConnectorRecord(status, tools if tools is not None else before.tools)
    elif trigger is StatusTrigger.FAILED:
        record = ConnectorRecord(status, None, error, before.attempts + 1)
    else:
        record = attrs.evolve(before, status=status, tools=None)
    store.put(name, record)
    return record


def catalog_of(
    store: GatewayStore, config: GatewayConfig, default_ttl_ms: int = DEFAULT_TTL_MS
) -> Catalog:
    """The catalog the store's READY connectors make."""
    listed: dict[str, ConnectorTools] = {}
    for connector in config.connectors:
        record = store.record(connector.name)
        if record.status is ConnectorStatus.READY and record.tools is not None:
            listed[connector.name] = record.tools
    overrides: Mapping[str, Mapping[str, ToolOverride]] = {
        c.name: c.tools for c in config.connectors
    }
    return Catalog(listed, tuple(c.name for c in config.connectors), overrides, default_ttl_ms)


class CatalogView:
    """:func:`catalog_of`, made again only when the store's version moved: the same
    catalog (its tools sorted once) serves every page and call in between."""

    def __init__(
        self, store: GatewayStore, config: GatewayConfig, default_ttl_ms: int = DEFAULT_TTL_MS
    ) -> None:
        self.store, self.config, self.default_ttl_ms = store, config, default_ttl_ms
        self._made: tuple[int, Catalog] | None = None

    def __call__(self) -> Catalog:
        version = self.store.version
        if self._made is None or self._made[0] != version:
            self._made = version, catalog_of(self.store, self.config, self.default_ttl_ms)
        return self._made[1]


def status_report(store: GatewayStore, config: GatewayConfig) -> dict[str, Any]:
    """Each connector's status (and last error), as JSON."""
    report: dict[str, Any] = {}
    for connector in config.connectors:
        record = store.record(connector.name)
        entry: dict[str, Any] = {"status": record.status.value}
        if record.error is not None:
            entry["error"] = record.error
        if record.tools is not None and record.tools.left_out_over is not None:
            limit = record.tools.left_out_over
            entry["warning"] = (
                f"the upstream lists more than {limit} tools: only the first {limit} are "
                "offered (max_tools_per_connector)"
            )
        report[connector.name] = entry
    return report
