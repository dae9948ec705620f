"""The HTTP headers that mirror a 2026-07-28 request body (SEP-2243).

The body is the source of truth: a client derives ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` from it, and a server checks
them against it, answering -32020 (HTTP 400) on any mismatch.  Pure functions;
the Streamable HTTP machines call them.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._errors import HeaderMismatch
from ._versions import META_PROTOCOL_VERSION, REVISIONS

__all__ = [
    "encode_header_value",
    "decode_header_value",
    "checked_header_params",
    "header_params",
    "request_headers",
    "ToolHeaderParams",
    "validate_request_headers",
    "x_mcp_header_problems",
]

_SENTINEL = re.compile(r"\A=\?base64\?(.*)\?=\Z", re.DOTALL)
_TCHAR = re.compile(r"\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
#: A character a header value cannot carry as it is (tab and visible ASCII can).
_UNSAFE = re.compile(r"[^\t\x20-\x7e]")
#: Control characters a header value must not hold (tab is allowed).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_NAMED_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The tasks extension names the task (SEP-2663).
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_MAX_SAFE_INTEGER = 2**53 - 1


def encode_header_value(value: str | int | bool) -> str:
    """A header value for ``value``: as-is when safe, else ``=?base64?…?=``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    safe = not _UNSAFE.search(value) and value == value.strip(" \t") and not _SENTINEL.match(value)
    if safe:
        return value
    # A lone surrogate (from a "\\ud800" escape in JSON) has no UTF-8 form; its
    # surrogatepass bytes keep this total, and a peer's strict decode refuses them.
    data = value.encode("utf-8", "surrogatepass")
    return "=?base64?" + base64.b64encode(data).decode("ascii") + "?="


def decode_header_value(text: str) -> str:
    """The value a header carries (base64 sentinel decoded); ValueError if malformed."""
    match = _SENTINEL.match(text)
    if not match:
        return text
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("malformed base64 header value") from None


def x_mcp_header_problems(input_schema: Any) -> list[str]:
    """Why a tool's ``x-mcp-header`` annotations are invalid (empty list: valid)."""
    problems: list[str] = []
    seen: set[str] = set()

    def visit(schema: Any, path: str, reachable: bool) -> None:
        if not isinstance(schema, dict):
            return
        header = schema.get("x-mcp-header")
        if header is not None:
            if not reachable:
                problems.append(f"{path}: x-mcp-header is only allowed through 'properties'")
            elif not isinstance(header, str) or not _TCHAR.match(header):
                problems.append(f"{path}: x-mcp-header {header!r} is not a valid header name")
            elif header.lower() in seen:
                problems.append(f"{path}: x-mcp-header {header!r} is used twice")
            elif schema.get("type") not in ("string", "integer", "boolean"):
                problems.append(f"{path}: x-mcp-header needs a string, integer or boolean type")
            else:
                seen.add(header.lower())
        properties = schema.get("properties")
        if properties is not None and not isinstance(properties, dict):
            # A schema no client can read its parameters from (nor any header).
            problems.append(f"{path}.properties is not an object")
        for name, sub in _members(properties):
            visit(sub, f"{path}.{name}", reachable)
        for key in ("items", "not", "if", "then", "else", "additionalProperties"):
            sub = schema.get(key)
            if isinstance(sub, dict):  # most keys are absent: no call, no path built
                visit(sub, f"{path}/{key}", False)
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            subs = schema.get(key)
            for i, sub in enumerate(subs if isinstance(subs, list) else ()):
                visit(sub, f"{path}/{key}/{i}", False)
        for key in ("$defs", "definitions"):
            for name, sub in _members(schema.get(key)):
                visit(sub, f"{path}/{key}/{name}", False)

    visit(input_schema, "inputSchema", True)
    return problems


def header_params(input_schema: Any) -> dict[tuple[str, ...], str]:
    """Argument path -> header name, for a valid tool schema's ``x-mcp-header``s."""
    found: dict[tuple[str, ...], str] = {}

    def visit(schema: Any, path: tuple[str, ...]) -> None:
        if not isinstance(schema, dict):
            return
        header = schema.get("x-mcp-header")
        if isinstance(header, str) and path:
            found[path] = header
        for name, sub in _members(schema.get("properties")):
            visit(sub, (*path, name))

    visit(input_schema, ())
    return found


def _members(value: Any) -> Iterable[tuple[str, Any]]:
    """The members of what a schema says is an object (none, if it is not one)."""
    return value.items() if isinstance(value, dict) else ()


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def request_headers(message: Mapping[str, Any], *, input_schema: Any = None) -> dict[str, str]:
    """The mirrored headers a client sends with ``message`` (a request or notification)."""
    return _mirrored(message, header_params(input_schema) if input_schema is not None else {})


def _mirrored(message: Mapping[str, Any], found: Mapping[tuple[str, ...], str]) -> dict[str, str]:
    """:func:`request_headers` with the tool's header params (``found``) at hand."""
    return {
        name: value if key in _AS_IS else encode_header_value(value)
        for name, key, value in _mirrored_values(message, found)
    }


#: Headers whose value is the body's as it is (a version, a method: never encoded).
_AS_IS = frozenset({"mcp-protocol-version", "mcp-method"})


def _mirrored_values(
    message: Mapping[str, Any], found: Mapping[tuple[str, ...], str]
) -> list[tuple[str, str, Any]]:
    """(header, its lowercase name, the body value it mirrors) for each header a
    client derives from ``message``; ``found`` is the tool's header params."""
    params = message.get("params") or {}
    if not isinstance(params, dict):
        params = {}
    meta = params.get("_meta")
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    method = message.get("method")
    return mirrored_values(
        params,
        version if isinstance(version, str) else None,
        method if "id" in message and isinstance(method, str) else None,
        found,
    )


def mirrored_values(
    params: Mapping[str, Any],
    version: str | None,
    method: str | None,
    found: Mapping[tuple[str, ...], str],
) -> list[tuple[str, str, Any]]:
    """:func:`_mirrored_values` of a message read already: its ``params`` (a dict),
    the protocol version its ``_meta`` names (None: none) and its ``method`` (None:
    no request, or no method)."""
    values: list[tuple[str, str, Any]] = []
    if version is not None:
        values.append(("MCP-Protocol-Version", "mcp-protocol-version", version))
    if method is not None:
        values.append(("Mcp-Method", "mcp-method", method))
        field = _NAMED_METHODS.get(method)
        named = params.get(field) if field else None
        if isinstance(named, str):
            values.append(("Mcp-Name", "mcp-name", named))
        if method == "tools/call" and found:
            arguments = params.get("arguments") or {}
            for path, header in found.items():
                value = _lookup(arguments, path)
                if isinstance(value, (str, int, bool)):
                    name = f"Mcp-Param-{header}"
                    values.append((name, name.lower(), value))
    return values


#: Protocol versions and request methods: values printable and no base64 sentinel,
#: so a header equal to one needs neither check (the version and method of most requests).
_PLAIN_VALUES = frozenset(REVISIONS).union(*(r.client_requests for r in REVISIONS.values()))


def plainly_mirrored(
    headers: Mapping[str, str], params: Mapping[str, Any], version: str, method: str
) -> bool:
    """Whether :func:`validate_request_headers` accepts the headers of a request with no
    ``Mcp-Param-*`` (its tool has none) at its first test: its protocol ``version``,
    ``method`` and name (from ``params``) each under its lowercase header name, exactly
    as in the body, a value needing no decoding.  False: let it decide (and word the
    mismatch); most stateless requests are decided here, without its list of values."""
    if headers.get("mcp-protocol-version") != version or version not in _PLAIN_VALUES:
        return False
    if headers.get("mcp-method") != method or method not in _PLAIN_VALUES:
        return False
    field = _NAMED_METHODS.get(method)
    named = params.get(field) if field else None
    return type(named) is not str or (
        headers.get("mcp-name") == named and named.isprintable() and not named.startswith("=?")
    )


def _header(headers: Mapping[str, str], key: str) -> str | None:
    """The value of header ``key`` (lowercase) in ``headers``, whatever their case."""
    value = headers.get(key)
    if value is None:
        for name, each in headers.items():
            if name.lower() == key:
                value = each
    return value


def _same(header: str, body: Any) -> bool:
    if type(body) is str:  # the method, the name, the version: most headers
        return header == body
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, (int, float)):
        try:
            return float(header) == float(body) and abs(body) <= _MAX_SAFE_INTEGER
        except ValueError:
            return False
    return bool(header == body)


def checked_header_params(input_schema: Any) -> dict[tuple[str, ...], str]:
    """:func:`header_params` of a tool whose ``x-mcp-header`` annotations are valid;
    none for an invalid one: clients leave such a tool out, so nobody can honour them."""
    if input_schema is None or x_mcp_header_problems(input_schema):
        return {}
    return header_params(input_schema)


class ToolHeaderParams:
    """The ``x-mcp-header`` parameters of the tool a ``tools/call`` names, walked out
    of its schema once per schema object (a tool registered again has a new one);
    ``input_schema`` finds a tool's inputSchema by name (None: no tool checks)."""

    def __init__(self, input_schema: Callable[[str], Any] | None) -> None:
        self.input_schema = input_schema
        self._cache: dict[str, tuple[Any, dict[tuple[str, ...], str]]] = {}

    def of(self, message: Mapping[str, Any]) -> dict[tuple[str, ...], str]:
        if self.input_schema is None or message.get("method") != "tools/call":
            return {}
        params = message.get("params")
        return self.of_tool(params.get("name") if isinstance(params, dict) else None)

    def of_tool(self, name: Any) -> dict[tuple[str, ...], str]:
        """:meth:`of` a ``tools/call`` whose ``params.name`` is ``name``."""
        if self.input_schema is None or not isinstance(name, str):
            return {}
        schema = self.input_schema(name)
        if schema is None:
            self._cache.pop(name, None)
            return {}
        cached = self._cache.get(name)
        if cached is not None and cached[0] is schema:
            return cached[1]
        found = checked_header_params(schema)
        self._cache[name] = (schema, found)
        return found


def validate_request_headers(
    headers: Mapping[str, str],
    message: Mapping[str, Any],
    *,
    input_schema: Any = None,
    found: Mapping[tuple[str, ...], str] | None = None,
    expected: list[tuple[str, str, Any]] | None = None,
) -> HeaderMismatch | None:
    """The -32020 error for headers that are missing, malformed or disagree with
    the body, or None when they match.  ``headers`` keys are compared
    case-insensitively.  ``found`` is :func:`checked_header_params` of
    ``input_schema`` when the caller already has it (it walks the schema);
    ``expected`` is :func:`mirrored_values` of ``message`` when the caller read it."""
    if found is None:
        found = checked_header_params(input_schema)
    if expected is None:
        expected = _mirrored_values(message, found)
    for name, key, body_value in expected:
        raw = headers.get(key)
        if raw is None and (raw := _header(headers, key)) is None:
            return HeaderMismatch(message=f"the {name} header is required")
        if raw == body_value and (
            raw in _PLAIN_VALUES or (raw.isprintable() and not raw.startswith("=?"))
        ):
            # The body's string as it is: no control character, no sentinel to decode
            # (the common case, decided without the checks below).
            continue
        if _CONTROL.search(raw):
            return HeaderMismatch(message=f"the {name} header contains invalid characters")
        try:
            value = decode_header_value(raw)
        except ValueError:
            return HeaderMismatch(message=f"the {name} header is not base64 of UTF-8 text")
        if not _same(value, body_value):
            return HeaderMismatch(message=f"the {name} header does not match the request body")
    if found and message.get("method") == "tools/call":
        sent = {key for _, key, _ in expected}
        for header in found.values():
            key = f"mcp-param-{header.lower()}"
            if key not in sent and _header(headers, key) is not None:
                return HeaderMismatch(
                    message=f"the Mcp-Param-{header} header has no value in the body"
                )
    return None
