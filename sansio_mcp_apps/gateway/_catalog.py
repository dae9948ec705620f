"""The aggregated catalog: connector tools renamed ``{connector}.{tool}``, the
overrides applied, split back on a call, listed in pages, and the freshness of
a listing."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from sansio_mcp import InvalidParams, decode_state_cursor, encode_state_cursor

from ._config import CONNECTOR_NAME, ToolOverride

__all__ = [
    "DEFAULT_TTL_MS",
    "Catalog",
    "ConnectorTools",
    "apply_overrides",
    "list_freshness",
    "qualified_name",
    "split_tool_name",
]

#: The ``ttlMs`` of an aggregated listing when no upstream gave one.
DEFAULT_TTL_MS = 30_000
#: Tells a gateway cursor from any other (and from a later format of its own).
_CURSOR_TAG = "gateway-1"


def qualified_name(connector: str, tool: str) -> str:
    return f"{connector}.{tool}"


def listing_position(name: str) -> tuple[str, str]:
    """Where a listed (qualified) tool name sorts: by connector, then tool."""
    connector, _, tool = name.partition(".")
    return connector, tool


def encode_position(position: tuple[str, str]) -> str:
    """The opaque cursor of a page that ended at ``position``."""
    return encode_state_cursor(_CURSOR_TAG, position)


def decode_position(cursor: Any) -> tuple[str, str]:
    """The position a cursor names; -32602 for anything no gateway made."""
    state = decode_state_cursor(_CURSOR_TAG, cursor)
    if state is None or len(state) != 2 or not all(isinstance(part, str) for part in state):
        raise InvalidParams(message=f"invalid cursor: {cursor!r}")
    return state[0], state[1]


def split_tool_name(name: str) -> tuple[str, str]:
    """``(connector, tool)`` of a gateway tool name, split on the first dot;
    -32602 naming the name when it has no dot or an invalid connector part."""
    connector, dot, tool = name.partition(".")
    if not dot or not tool or not CONNECTOR_NAME.match(connector):
        raise InvalidParams(
            message=f"unknown tool {name!r}: gateway tools are named {{connector}}.{{tool}}",
            data={"name": name},
        )
    return connector, tool


def apply_overrides(
    connector: str, tools: Iterable[Mapping[str, Any]], overrides: Mapping[str, ToolOverride]
) -> list[dict[str, Any]]:
    """A connector's tools as the gateway lists them: disabled ones left out, a
    replaced description put in, the name qualified; schemas untouched."""
    listed: list[dict[str, Any]] = []
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str):
            continue  # not a tool: nothing could call it by name
        override = overrides.get(name)
        if override is not None and not override.enabled:
            continue
        entry = dict(tool)
        entry["name"] = qualified_name(connector, name)
        if override is not None and override.description is not None:
            entry["description"] = override.description
        if override is not None and override.task_support is not None:
            execution = entry.get("execution")
            base = execution if isinstance(execution, dict) else {}
            entry["execution"] = {**base, "taskSupport": override.task_support}
        listed.append(entry)
    return listed


@attrs.frozen
class ConnectorTools:
    """One connector's tools as last listed (upstream names), with the ``ttlMs``
    its upstream gave (None: it gave none); ``left_out_over`` is the limit past
    which the upstream's further tools were left out (None: none were)."""

    tools: tuple[Mapping[str, Any], ...]
    ttl_ms: int | None = None
    left_out_over: int | None = None

    @classmethod
    def capped(
        cls, tools: Sequence[Mapping[str, Any]], ttl_ms: int | None, limit: int
    ) -> ConnectorTools:
        """The first ``limit`` of ``tools`` (a listing may stop once it has more)."""
        if len(tools) <= limit:
            return cls(tuple(tools), ttl_ms)
        return cls(tuple(tools[:limit]), ttl_ms, limit)

    @functools.cached_property
    def _by_name(self) -> dict[Any, Mapping[str, Any]]:
        found: dict[Any, Mapping[str, Any]] = {}
        for tool in self.tools:
            found.setdefault(tool.get("name"), tool)
        return found

    def find(self, name: str) -> Mapping[str, Any] | None:
        return self._by_name.get(name)

    @functools.cached_property
    def _listed(self) -> list[Any]:
        return []  # the latest listing: [(connector, overrides), listing]

    def listing(
        self, connector: str, overrides: Mapping[str, ToolOverride]
    ) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
        """These tools as ``connector`` lists them (:func:`apply_overrides`), sorted,
        with their positions; made once while the connector's tools stay these (a
        change of another connector sorts nothing of this one again)."""
        if not self._listed or self._listed[0] != (connector, overrides):
            listed: dict[tuple[str, str], dict[str, Any]] = {}
            for tool in apply_overrides(connector, self.tools, overrides):
                listed.setdefault(listing_position(tool["name"]), tool)
            positions = sorted(listed)
            self._listed[:] = [(connector, overrides), (positions, [listed[p] for p in positions])]
        listing: tuple[list[tuple[str, str]], list[dict[str, Any]]] = self._listed[1]
        return listing


def list_freshness(
    ttls: Iterable[int | None], missing: Sequence[str], default_ttl_ms: int = DEFAULT_TTL_MS
) -> int:
    """``ttlMs`` of an aggregated listing: 0 while any connector is missing, else
    the shortest its upstreams gave (``default_ttl_ms`` standing in for none)."""
    if missing:
        return 0
    given = [max(0, t) for t in ttls if t is not None]
    return min([*given, default_ttl_ms]) if given else default_ttl_ms


@attrs.frozen
class Catalog:
    """What the gateway lists: each reachable connector's tools, and the
    connectors (in config order) whose tools are missing (down, or not yet listed)."""

    connectors: Mapping[str, ConnectorTools]
    order: tuple[str, ...]
    overrides: Mapping[str, Mapping[str, ToolOverride]]
    default_ttl_ms: int = DEFAULT_TTL_MS

    @property
    def missing(self) -> list[str]:
        return [name for name in self.order if name not in self.connectors]

    def tools(self) -> list[dict[str, Any]]:
        """Every listed tool, qualified, overrides applied, sorted by connector then
        tool (a name an upstream lists twice, once: a call could reach only one)."""
        return list(self._listing[1])

    @functools.cached_property
    def _listing(self) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
        """The listed tools' positions, sorted, and the tools in that order: made
        once per catalog, so that a page is a bisection, not a sort of everything;
        and of connectors' listings each sorted once (connector names have no dot:
        the listing sorted by connector, then tool, is theirs one after another)."""
        positions: list[tuple[str, str]] = []
        tools: list[dict[str, Any]] = []
        for name in sorted(n for n in self.order if n in self.connectors):
            more, listed = self.connectors[name].listing(name, self.overrides.get(name, {}))
            positions += more
            tools += listed
        return positions, tools

    def page(self, cursor: Any, size: int) -> tuple[list[dict[str, Any]], str | None]:
        """The tools after ``cursor`` (from the start when None), at most ``size``,
        and the cursor of the next page (None: this is the last).

        A cursor names the last tool its page gave, not an offset: a tool that
        comes or goes between two pages (a connector up or down, an upstream's list
        changed) moves no other, so a walk never repeats a tool and never misses
        one present all along; and it needs no state kept between pages."""
        positions, tools = self._listing
        start = 0
        if cursor is not None:
            start = bisect.bisect_right(positions, decode_position(cursor))
        items = tools[start : start + size]
        more = start + size < len(tools)
        return items, encode_position(positions[start + size - 1]) if more else None

    def ttl_ms(self) -> int:
        return list_freshness(
            (c.ttl_ms for c in self.connectors.values()), self.missing, self.default_ttl_ms
        )

    @functools.cached_property
    def _resolved(self) -> dict[str, tuple[str, str]]:
        return {}  # names resolved already: listed tools alone, so bounded by the catalog

    def resolve(self, name: str) -> tuple[str, str]:
        """``(connector, upstream tool)`` for a gateway tool name; -32602 naming
        the unknown connector or tool, or the disabled tool."""
        found = self._resolved.get(name)
        if found is not None:
            return found
        connector, tool = split_tool_name(name)
        if connector not in self.order:
            raise InvalidParams(
                message=f"unknown connector {connector!r} in tool name {name!r}",
                data={"name": name, "connector": connector},
            )
        override = self.overrides.get(connector, {}).get(tool)
        entry = self.connectors.get(connector)
        known = entry is None or entry.find(tool) is not None
        if (override is not None and not override.enabled) or not known:
            raise InvalidParams(
                message=f"unknown tool {tool!r} on connector {connector!r}",
                data={"name": name, "connector": connector, "tool": tool},
            )
        if entry is not None:  # (any name passes for a connector down: none is kept)
            self._resolved[name] = connector, tool
        return connector, tool

    def input_schema(self, name: str) -> Any:
        """The upstream inputSchema of a gateway tool name (None: unknown)."""
        connector, _, tool = name.partition(".")
        entry = self.connectors.get(connector)
        found = entry.find(tool) if entry is not None else None
        return found.get("inputSchema") if found is not None else None
