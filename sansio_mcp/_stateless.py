"""The stateless 2026-07-28 rules, as pure functions: request ``_meta``,
result shaping (``resultType``, cache hints, server info), MRTR input checks,
subscription filters."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ._errors import ErrorCode, MCPError, MissingRequiredClientCapability
from ._events import RequestMeta
from ._gates import declared_elicitation_modes
from ._params import LOG_LEVELS, check_params
from ._tasks import declares_tasks
from ._versions import (
    CACHEABLE_METHODS,
    INPUT_REQUEST_CAPABILITIES,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MRTR_METHODS,
    REVISIONS,
    Era,
)

__all__ = [
    "CacheHints",
    "is_stateless_request",
    "parse_request_meta",
    "request_meta_of",
    "build_request_meta",
    "end_to_end_meta",
    "is_reserved_meta_key",
    "shape_result",
    "missing_input_capabilities",
    "lacking_capabilities",
    "honoured_filter",
    "listen_filter",
    "stateless_versions",
]


class CacheHints:
    """Server-side defaults for ``ttlMs`` / ``cacheScope`` per method.

    Lists and discovery are fresh for a minute by default; reads are stale at
    once (content changes without notice).  ``private`` is the safe scope:
    it never lets a shared cache serve one user's answer to another.
    """

    def __init__(
        self,
        *,
        ttl_ms: dict[str, int] | None = None,
        default_ttl_ms: int = 60_000,
        scope: str = "private",
    ) -> None:
        if scope not in ("public", "private"):
            raise ValueError("cacheScope must be 'public' or 'private'")
        self.ttl_ms = {"resources/read": 0, **(ttl_ms or {})}
        self.default_ttl_ms = default_ttl_ms
        self.scope = scope

    def for_method(self, method: str) -> tuple[int, str]:
        return max(0, int(self.ttl_ms.get(method, self.default_ttl_ms))), self.scope


def stateless_versions(versions: Iterable[str]) -> list[str]:
    return [v for v in versions if v in REVISIONS and REVISIONS[v].era is Era.STATELESS]


def is_stateless_request(params: dict[str, Any]) -> bool:
    """Whether a request's params carry the modern ``_meta`` protocol version key."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def parse_request_meta(params: dict[str, Any]) -> RequestMeta:
    """The :class:`RequestMeta` of a modern request; MCPError -32602 if malformed."""
    return request_meta_of(params.get("_meta"))


# A stateless request's RequestMeta, built by its slots' setters without attrs'
# __init__ (a field added fails here, at import, not per request).
_set_version, _set_capabilities, _set_info, _set_level = (
    getattr(RequestMeta, name).__set__ for name in attrs.fields_dict(RequestMeta)
)
_new = object.__new__


def request_meta_of(meta: Any) -> RequestMeta:
    """:func:`parse_request_meta` of a request whose ``params._meta`` is ``meta``
    (read once by a caller that has it already)."""
    # Each type tested by type() first, isinstance only for what is not exactly it
    # (a subclass): a stateless request's _meta is read here, once per request.
    if type(meta) is not dict and not isinstance(meta, dict):
        raise MCPError(ErrorCode.INVALID_PARAMS, "params._meta is required (2026-07-28)")
    get = meta.get
    version = get(META_PROTOCOL_VERSION)
    capabilities = get(META_CLIENT_CAPABILITIES)
    info = get(META_CLIENT_INFO)
    level = get(META_LOG_LEVEL)
    if type(version) is not str and not isinstance(version, str):
        raise MCPError(
            ErrorCode.INVALID_PARAMS, f"params._meta[{META_PROTOCOL_VERSION!r}] must be a string"
        )
    if type(capabilities) is not dict and not isinstance(capabilities, dict):
        raise MCPError(
            ErrorCode.INVALID_PARAMS,
            f"params._meta[{META_CLIENT_CAPABILITIES!r}] must be an object",
        )
    if info is not None and not (
        (type(info) is dict or isinstance(info, dict))
        and (type(name := info.get("name")) is str or isinstance(name, str))
        and (type(named := info.get("version")) is str or isinstance(named, str))
    ):
        raise MCPError(
            ErrorCode.INVALID_PARAMS,
            f"params._meta[{META_CLIENT_INFO!r}] must be an object with name and version",
        )
    if level is not None and level not in LOG_LEVELS:
        raise MCPError(
            ErrorCode.INVALID_PARAMS, f"params._meta[{META_LOG_LEVEL!r}] is not a log level"
        )
    read: RequestMeta = _new(RequestMeta)
    _set_version(read, version)
    _set_capabilities(read, capabilities)
    _set_info(read, info)
    _set_level(read, level)
    return read


#: The one unprefixed request ``_meta`` key each hop sets for itself: progress is
#: reported to whoever asked for it, under that asker's token.
_HOP_META_KEYS = frozenset({"progressToken"})


def is_reserved_meta_key(key: str) -> bool:
    """Whether a ``_meta`` key has a prefix MCP reserves: its second label is
    ``modelcontextprotocol`` or ``mcp`` (``io.modelcontextprotocol/…``, ``dev.mcp/…``)."""
    prefix, slash, _ = key.partition("/")
    labels = prefix.lower().split(".") if slash else []
    return len(labels) >= 2 and labels[1] in ("modelcontextprotocol", "mcp")


def end_to_end_meta(meta: Any) -> dict[str, Any]:
    """What of a request's ``_meta`` an intermediary passes on to the next hop:
    the client's own keys (custom ones, the W3C trace context ``traceparent``,
    ``tracestate``, ``baggage``), not those each hop sets for itself
    (``progressToken`` and every key with a reserved prefix: protocol version,
    client capabilities and info, log level, related task, …)."""
    if not isinstance(meta, dict):
        return {}
    return {
        key: value
        for key, value in meta.items()
        if key not in _HOP_META_KEYS and not is_reserved_meta_key(key)
    }


def build_request_meta(
    existing: Any,
    *,
    version: str,
    capabilities: dict[str, Any],
    client_info: dict[str, Any],
    log_level: str | None,
) -> dict[str, Any]:
    """The ``_meta`` a modern client puts on every request."""
    meta = dict(existing) if isinstance(existing, dict) else {}
    meta[META_PROTOCOL_VERSION] = version
    meta[META_CLIENT_CAPABILITIES] = capabilities
    meta[META_CLIENT_INFO] = client_info
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return meta


def shape_result(
    method: str,
    result: dict[str, Any],
    *,
    server_info: dict[str, Any],
    cache: CacheHints,
) -> dict[str, Any]:
    """A complete modern result: ``resultType``, server info, and cache hints."""
    shaped = dict(result)
    if "resultType" not in shaped:
        shaped["resultType"] = "complete"
    given = shaped.get("_meta")
    meta = dict(given) if given else {}
    if META_SERVER_INFO not in meta:
        meta[META_SERVER_INFO] = server_info
    shaped["_meta"] = meta
    if shaped["resultType"] == "complete" and method in CACHEABLE_METHODS:
        ttl, scope = cache.for_method(method)
        shaped.setdefault("ttlMs", ttl)
        shaped.setdefault("cacheScope", scope)
    return shaped


def missing_input_capabilities(
    input_requests: dict[str, Any], client_capabilities: dict[str, Any]
) -> dict[str, Any]:
    """The client capabilities the input requests need but the client lacks."""
    missing: dict[str, Any] = {}
    for key, request in input_requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise ValueError(f"input request {key!r} must be an object with a method")
        method = request["method"]
        capability = INPUT_REQUEST_CAPABILITIES.get(method)
        if capability is None:
            raise ValueError(f"{method!r} cannot be an input request")
        params = request.get("params")
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            raise ValueError(f"the params of input request {key!r} must be an object")
        declared = client_capabilities.get(capability)
        if not isinstance(declared, dict):
            missing.setdefault(capability, {})
            continue
        if capability == "elicitation":
            mode = params.get("mode", "form")
            if mode not in declared_elicitation_modes(client_capabilities):
                missing.setdefault("elicitation", {})[mode] = {}
        elif capability == "sampling" and params.get("tools") and "tools" not in declared:
            missing.setdefault("sampling", {})["tools"] = {}
    return missing


def lacking_capabilities(required: Any, declared: dict[str, Any]) -> dict[str, Any]:
    """The part of ``required`` (a ClientCapabilities object, as -32021's data names
    it) that ``declared`` lacks; elicitation declared without modes means form."""
    lacking: dict[str, Any] = {}
    if not isinstance(required, dict):
        return lacking
    for name, wanted in required.items():
        have = declared.get(name)
        if not isinstance(have, dict):
            lacking[name] = wanted
            continue
        keys = set(have)
        if name == "elicitation":
            keys |= declared_elicitation_modes(declared)
        if isinstance(wanted, dict):
            missing = {k: v for k, v in wanted.items() if k not in keys}
            if missing:
                lacking[name] = missing
    return lacking


def check_input_required(method: str, result: dict[str, Any]) -> None:
    """Raise ValueError if ``result`` is not a valid InputRequiredResult for ``method``."""
    if method not in MRTR_METHODS:
        raise ValueError(f"{method} may not return input_required (only {sorted(MRTR_METHODS)})")
    requests = result.get("inputRequests")
    state = result.get("requestState")
    if requests is None and state is None:
        raise ValueError("an input_required result needs inputRequests or requestState")
    if requests is not None and not isinstance(requests, dict):
        raise ValueError("inputRequests must be an object")
    if state is not None and not isinstance(state, str):
        raise ValueError("requestState must be a string")
    for key, request in (requests or {}).items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise ValueError(f"input request {key!r} must be an object with a method")
        params = request.get("params")
        if params is not None and not isinstance(params, dict):
            raise ValueError(f"the params of input request {key!r} must be an object")
        problem = check_params(request["method"], params or {})
        if problem:
            raise ValueError(f"input request {key!r}: {problem}")


def missing_capability_error(missing: dict[str, Any]) -> MissingRequiredClientCapability:
    return MissingRequiredClientCapability(
        message="the request needs client capabilities it did not declare: "
        + ", ".join(sorted(missing)),
        data={"requiredCapabilities": missing},
    )


def honoured_filter(requested: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    """The part of a subscription filter this server will honour."""
    honoured: dict[str, Any] = {}
    for flag, kind in (
        ("toolsListChanged", "tools"),
        ("promptsListChanged", "prompts"),
        ("resourcesListChanged", "resources"),
    ):
        if requested.get(flag) is True and (capabilities.get(kind) or {}).get("listChanged"):
            honoured[flag] = True
    task_ids = requested.get("taskIds")
    if isinstance(task_ids, list) and declares_tasks(capabilities):
        honoured["taskIds"] = [t for t in task_ids if isinstance(t, str)]
    uris = requested.get("resourceSubscriptions")
    if isinstance(uris, list) and uris and (capabilities.get("resources") or {}).get("subscribe"):
        honoured["resourceSubscriptions"] = [u for u in uris if isinstance(u, str)]
    return honoured


def listen_filter(
    *,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Sequence[str],
    task_ids: Sequence[str] = (),
) -> dict[str, Any]:
    """A ``subscriptions/listen`` filter (only the parts asked for)."""
    found: dict[str, Any] = {
        key: True
        for key, on in (
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        )
        if on
    }
    if uris:
        found["resourceSubscriptions"] = list(uris)
    if task_ids:
        found["taskIds"] = list(task_ids)  # the tasks extension
    return found
