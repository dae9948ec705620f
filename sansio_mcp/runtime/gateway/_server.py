"""The gateway as a :class:`Server`: it lists the aggregated catalog and routes
``tools/call`` upstream; nothing else is served (resources and prompts are not
proxied), and the capabilities it declares say so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from ..._errors import (
    ErrorCode,
    InvalidParams,
    LocalProtocolError,
    MCPError,
    MethodNotFound,
    MissingRequiredClientCapability,
)
from ..._modern import CacheHints, end_to_end_meta, missing_input_capabilities
from ..._registry import ToolResult
from ..._versions import META_SERVER_INFO
from ...gateway import Catalog
from .._driver import ProgressCallback
from .._server import Context, Server
from ._upstream import ConnectorUnavailable, Upstream

__all__ = ["META_MISSING_CONNECTORS", "GatewayServer"]

#: The ``_meta`` key of a tools/list result that names the connectors left out.
META_MISSING_CONNECTORS = "sansio-mcp/missingConnectors"
#: Discovery is private and stale at once: a deployment may change it any time.
GATEWAY_CACHE_HINTS = CacheHints(ttl_ms={"server/discover": 0}, scope="private")
#: What the gateway passes upstream of a tools/call's params (MRTR included).
_CALL_KEYS = ("name", "arguments", "inputResponses", "requestState")
_REFUSALS = (ErrorCode.METHOD_NOT_FOUND, ErrorCode.INVALID_REQUEST)
#: Rounds of input a handshake-era client is asked for in one call, at most.
MAX_INPUT_ROUNDS = 10


class GatewayServer(Server):
    """Answers tools/list from ``catalog()`` and tools/call through ``upstreams``."""

    def __init__(
        self,
        catalog: Callable[[], Catalog],
        upstreams: Mapping[str, Upstream],
        *,
        name: str,
        version: str,
        page_size: int,
    ) -> None:
        super().__init__(
            name, version, page_size=page_size, logging=False, cache_hints=GATEWAY_CACHE_HINTS
        )
        self.catalog = catalog
        self.upstreams = upstreams

    @property
    def capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": True}}

    def begin(self, ctx: Context) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        ctx.hub = self.hub
        if ctx.method == "tools/list":
            return self._list(ctx)
        if ctx.method == "tools/call":
            name = ctx.params.get("name")
            if not isinstance(name, str):
                raise InvalidParams(message="tools/call needs a tool name")
            connector, tool = self.catalog().resolve(name)
            params = {k: ctx.params[k] for k in _CALL_KEYS if k in ctx.params}
            params["name"] = tool
            meta = end_to_end_meta(ctx.params.get("_meta"))
            if meta:
                params["_meta"] = meta  # the upstream hop adds its own protocol keys
            return self._call(ctx, connector, params)
        raise MethodNotFound(message=f"method not found: {ctx.method!r} (the gateway serves tools)")

    def _list(self, ctx: Context) -> dict[str, Any]:
        catalog = self.catalog()
        tools, cursor = catalog.page(ctx.params.get("cursor"), self.page_size)
        result: dict[str, Any] = {"tools": tools}
        if cursor is not None:
            result["nextCursor"] = cursor
        missing = catalog.missing
        if missing:
            result["_meta"] = {META_MISSING_CONNECTORS: missing}
        if ctx.stateless:
            result["ttlMs"] = catalog.ttl_ms()
            result["cacheScope"] = "private"
        return result

    async def _call(self, ctx: Context, connector: str, params: dict[str, Any]) -> dict[str, Any]:
        upstream = self.upstreams[connector]
        call = partial(
            upstream.call,
            on_progress=_progress_relay(ctx),
            ask=None if ctx.stateless else ctx.request,
        )
        try:
            result = await call(params)
            for _ in range(MAX_INPUT_ROUNDS):
                if ctx.stateless or result.get("resultType") != "input_required":
                    break
                # A handshake-era client answers by server-to-client requests, and the
                # gateway retries upstream with the answers (MRTR on the client's behalf).
                answers = await _ask(ctx, result.get("inputRequests"))
                params = {**params, "inputResponses": answers}
                params.pop("requestState", None)
                if "requestState" in result:
                    params["requestState"] = result["requestState"]
                result = await call(params)
        except ConnectorUnavailable as exc:
            reason = f": {exc.args[1]}" if len(exc.args) > 1 else ""
            return ToolResult.text(
                f"connector {connector!r} is unavailable{reason}; the gateway is reconnecting, "
                "try again shortly",
                is_error=True,
            ).to_result()
        return _downstream(ctx, result)


async def _ask(ctx: Context, requests: Any) -> dict[str, Any]:
    """Put an upstream's input requests to a handshake-era client, one by one; -32021
    naming what it lacks when it cannot answer (it refuses the method, or its revision
    has no such request)."""
    if not isinstance(requests, dict) or not requests:
        raise MCPError(ErrorCode.INVALID_REQUEST, "the upstream's input_required asks nothing")
    try:
        return await ctx.request_many(requests)
    except (MCPError, LocalProtocolError) as exc:
        # A client without the capability answers -32601 (or, as the Python SDK does,
        # -32600); any other error is its own, passed on.
        if isinstance(exc, MCPError) and exc.code not in _REFUSALS:
            raise
        missing = missing_input_capabilities(requests, {})
        raise MissingRequiredClientCapability(
            message="the upstream needs input this client cannot give "
            f"({', '.join(sorted(missing))}): {exc}",
            data={"requiredCapabilities": missing},
        ) from None


def _progress_relay(ctx: Context) -> ProgressCallback | None:
    """Pass the upstream's progress on to a client that asked for progress."""
    if ctx.progress_token is None:
        return None
    schedule_flush = getattr(getattr(ctx, "host", None), "_schedule_flush", None)

    def relay(progress: float, total: float | None, message: str | None) -> None:
        try:
            sent = ctx.session.send_progress(ctx.request_id, progress, total, message)
        except LocalProtocolError:
            return  # an upstream whose progress did not increase: not passed on
        if sent and schedule_flush is not None:
            schedule_flush()

    return relay


def _downstream(ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
    """An upstream's tools/call result as the gateway's client gets it: the
    upstream's server info dropped (the gateway's goes in), and for a handshake
    client the 2026-07-28 fields too, or -32021 if it needs input that client
    cannot give here."""
    out = dict(result)
    meta = out.get("_meta")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    if ctx.stateless:
        return out  # an input_required is checked against the client's capabilities by its session
    if out.get("resultType") == "input_required":
        raise MCPError(
            ErrorCode.INTERNAL_ERROR,
            f"the upstream still needed input after {MAX_INPUT_ROUNDS} rounds",
        )
    for key in ("resultType", "ttlMs", "cacheScope"):
        out.pop(key, None)
    return out
