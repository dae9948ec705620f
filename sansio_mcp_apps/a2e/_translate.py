"""Translations between MCP results/requests and A2E shapes, as pure functions.

They accept anything a server might send (schema-valid or not) and never
raise on odd input: missing or mistyped optional parts become the A2E
defaults.  Functions that build what goes *to* an MCP server raise
``ValueError`` when the agent's answer cannot make a valid MCP message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from sansio_mcp import decode_state_cursor, encode_state_cursor, jsontext

from ._fields import finite_float
from ._messages import MCPSamplingRequest, MCPSamplingResponse
from ._models import (
    SEPARATOR,
    MCPPrompt,
    MCPPromptMessage,
    MCPResource,
    MCPResourceContent,
    MCPRoot,
)

__all__ = [
    "decode_cursor",
    "encode_cursor",
    "namespaced",
    "prompt_arguments",
    "prompt_from_mcp",
    "prompt_message_from_mcp",
    "resource_content_from_mcp",
    "resource_from_mcp",
    "roots_result",
    "sampling_request_from_mcp",
    "sampling_result_from_a2e",
    "split_namespaced",
    "summary_of",
    "template_from_mcp",
    "tool_definition",
    "tool_result",
]

_CONTENT_TYPES = ("text", "image", "audio", "tool_use", "tool_result")
_ROLES = ("user", "assistant")


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def namespaced(server_id: str, tool_name: str) -> str:
    """``{server_id}__{tool}``, the A2E name of an MCP tool."""
    return f"{server_id}{SEPARATOR}{tool_name}"


def split_namespaced(name: str) -> tuple[str, str] | None:
    """(server id, MCP tool name) of a namespaced name, or None.

    Server ids never contain ``__`` nor end with ``_``, so the first ``__``
    is the separator.
    """
    server_id, sep, tool = name.partition(SEPARATOR)
    if not sep or not server_id or not tool:
        return None
    return server_id, tool


# Tools --------------------------------------------------------------------------------


def _parameters(schema: Any) -> list[dict[str, Any]]:
    """ToolParameter entries (name, type, description, required, enum, properties)
    read from a JSON Schema object's top-level properties."""
    schema = _dict(schema)
    properties = _dict(schema.get("properties"))
    required = schema.get("required")
    required_names = (
        {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    )
    out: list[dict[str, Any]] = []
    for name, spec in properties.items():
        spec = _dict(spec)
        kind = spec.get("type")
        if isinstance(kind, list):
            kind = "|".join(str(k) for k in kind)
        enum = spec.get("enum")
        out.append(
            {
                "name": str(name),
                "type": kind if isinstance(kind, str) else "any",
                "description": _str(spec.get("description")),
                "required": name in required_names,
                "enum": list(enum) if isinstance(enum, list) else [],
                "properties": _dict(spec.get("properties")),
            }
        )
    return out


def tool_definition(server_id: str, tool: Mapping[str, Any]) -> dict[str, Any]:
    """The A2E ToolDefinition of an MCP tool.

    The reference SDK's ToolDefinition has no schema field, so MCP schemas
    never reached the agent (defect 5).  Here the input schema travels whole
    in ``input_schema`` (and ``output_schema``), ``source`` is ``"mcp"``,
    and ``input_parameters`` are derived from the schema for agents that
    read only those.
    """
    name = _str(tool.get("name"))
    annotations = _dict(tool.get("annotations"))
    definition: dict[str, Any] = {
        "name": namespaced(server_id, name),
        "description": _str(tool.get("description")),
        "input_parameters": _parameters(tool.get("inputSchema")),
        "output_parameters": _parameters(tool.get("outputSchema")),
        "streaming": False,
        "idempotent": annotations.get("idempotentHint") is True,
        "tags": ["mcp", server_id, name],
        "version": "1.0.0",
        "toolkit": None,
        "defer_loading": False,
        "source": "mcp",
        "server_id": server_id,
        "mcp_name": name,
        "input_schema": _dict(tool.get("inputSchema")) or {"type": "object"},
    }
    if isinstance(tool.get("outputSchema"), Mapping):
        definition["output_schema"] = dict(tool["outputSchema"])
    if annotations:
        definition["annotations"] = annotations
    title = tool.get("title") or annotations.get("title")
    if isinstance(title, str):
        definition["title"] = title
    return definition


def summary_of(content: Any, limit: int = 500) -> str:
    """The text blocks of an MCP content list, joined and cut to ``limit`` characters."""
    if not isinstance(content, list):
        return ""
    if len(content) == 1:  # the common case, without the list, the join and ABC checks
        block = content[0]
        if type(block) is dict and block.get("type") == "text":
            text = block.get("text")
            text = text if type(text) is str else _str(text)
            return text if len(text) <= limit else text[: limit - 1] + "…"
    texts = [
        _str(block.get("text"))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    ]
    text = "\n".join(t for t in texts if t)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_result(name: str, result: Mapping[str, Any], duration_ms: float) -> dict[str, Any]:
    """The A2E ToolResult of an MCP CallToolResult.

    ``data`` keeps the MCP result's own shape (``content``, and
    ``structuredContent`` when present) so nothing is lost; ``summary`` is
    its text.  ``isError: true`` is ``success: false`` with
    ``error_code: "tool_error"``.  (The reference SDK built ToolResult
    without ``tool_name`` and with a non-existent ``output`` field, so every
    result was lost: defect 4.)
    """
    content = result.get("content")
    # The result is the host's alone (fresh from the session): no copy of its list.
    data: dict[str, Any] = {"content": content if isinstance(content, list) else []}
    if "structuredContent" in result:
        data["structuredContent"] = result["structuredContent"]
    failed = result.get("isError") is True
    summary = summary_of(content)
    return {
        "success": not failed,
        "tool_name": name,
        "data": data,
        "summary": summary,
        "truncated": False,
        "exit_code": None,
        "error": (summary or "the tool reported an error") if failed else "",
        "error_code": "tool_error" if failed else "",
        "duration_ms": duration_ms,
        "events": [],
    }


# Resources ---------------------------------------------------------------------------


def resource_from_mcp(server_id: str, resource: Mapping[str, Any]) -> MCPResource:
    extra: dict[str, Any] = {}
    for key in ("title", "size", "icons"):
        if key in resource:
            extra[key] = resource[key]
    return MCPResource(
        uri=_str(resource.get("uri")),
        name=_str(resource.get("name")),
        description=_str(resource.get("description")),
        mime_type=_str(resource.get("mimeType")),
        server_id=server_id,
        annotations=_dict(resource.get("annotations")),
        extra=extra,
    )


def template_from_mcp(server_id: str, template: Mapping[str, Any]) -> MCPResource:
    """A resource template as an MCPResource whose ``uri`` is the template, marked
    by the extension field ``uri_template``."""
    uri_template = _str(template.get("uriTemplate"))
    extra: dict[str, Any] = {"uri_template": uri_template}
    if "title" in template:
        extra["title"] = template["title"]
    return MCPResource(
        uri=uri_template,
        name=_str(template.get("name")),
        description=_str(template.get("description")),
        mime_type=_str(template.get("mimeType")),
        server_id=server_id,
        annotations=_dict(template.get("annotations")),
        extra=extra,
    )


def resource_content_from_mcp(content: Mapping[str, Any]) -> MCPResourceContent:
    """Text contents are ``type: "text"``, blob contents ``type: "blob"``; the
    MIME type is the server's, else the spec's default for MCPResourceContent,
    ``text/plain``, for a blob too (the spec has no other default)."""
    uri = _str(content.get("uri"))
    mime = _str(content.get("mimeType"), "text/plain")
    if isinstance(content.get("blob"), str):
        return MCPResourceContent(uri=uri, mime_type=mime, blob=content["blob"], type="blob")
    return MCPResourceContent(uri=uri, mime_type=mime, text=_str(content.get("text")), type="text")


# Prompts -----------------------------------------------------------------------------


def prompt_from_mcp(server_id: str, prompt: Mapping[str, Any]) -> MCPPrompt:
    arguments = []
    raw = prompt.get("arguments")
    for argument in raw if isinstance(raw, list) else []:
        if not isinstance(argument, Mapping):
            continue
        entry = {
            "name": _str(argument.get("name")),
            "description": _str(argument.get("description")),
            "required": argument.get("required") is True,
        }
        arguments.append(entry)
    extra = {"title": prompt["title"]} if isinstance(prompt.get("title"), str) else {}
    return MCPPrompt(
        name=_str(prompt.get("name")),
        description=_str(prompt.get("description")),
        server_id=server_id,
        arguments=arguments,
        extra=extra,
    )


def prompt_message_from_mcp(message: Mapping[str, Any]) -> MCPPromptMessage:
    return MCPPromptMessage(role=_str(message.get("role")), content=_dict(message.get("content")))


def prompt_arguments(arguments: Mapping[str, Any]) -> dict[str, str]:
    """MCP prompt arguments are strings: other JSON values travel as their JSON text."""
    return {
        str(key): value if isinstance(value, str) else jsontext.dumps(value)
        for key, value in arguments.items()
    }


# Sampling ----------------------------------------------------------------------------

_SAMPLING_KEYS = {
    "messages",
    "modelPreferences",
    "systemPrompt",
    "includeContext",
    "temperature",
    "maxTokens",
    "stopSequences",
    "metadata",
}


def sampling_request_from_mcp(
    params: Mapping[str, Any], *, server_id: str, mcp_request_id: str, id: str, ts: float
) -> MCPSamplingRequest:
    """``sampling/createMessage`` params as an ``mcp/sample/req``.

    Params the A2E message has no field for (``tools``, ``toolChoice``,
    ``_meta``) travel as extra keys under their MCP names.
    """
    temperature = params.get("temperature")
    max_tokens = params.get("maxTokens")
    stop = params.get("stopSequences")
    messages = params.get("messages")
    include = params.get("includeContext")
    extra = {k: v for k, v in params.items() if k not in _SAMPLING_KEYS}
    return MCPSamplingRequest(
        id=id,
        ts=ts,
        server_id=server_id,
        mcp_request_id=mcp_request_id,
        messages=[m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else [],
        model_preferences=_dict(params.get("modelPreferences")),
        system_prompt=_str(params.get("systemPrompt")),
        include_context=include if isinstance(include, str) else "none",
        temperature=1.0 if (number := finite_float(temperature)) is None else number,
        max_tokens=max_tokens
        if isinstance(max_tokens, int) and not isinstance(max_tokens, bool)
        else 1024,
        stop_sequences=[s for s in stop if isinstance(s, str)] if isinstance(stop, list) else [],
        metadata=_dict(params.get("metadata")),
        extra=extra,
    )


def _check_content_block(block: Any) -> None:
    if not isinstance(block, Mapping) or block.get("type") not in _CONTENT_TYPES:
        raise ValueError(
            "content must be an MCP content block with type text, image, audio, "
            "tool_use or tool_result"
        )
    kind = block["type"]
    if kind == "text" and not isinstance(block.get("text"), str):
        raise ValueError("a text content block needs a string 'text'")
    if kind in ("image", "audio"):
        if not isinstance(block.get("data"), str) or not isinstance(block.get("mimeType"), str):
            raise ValueError(f"an {kind} content block needs string 'data' and 'mimeType'")
        try:
            base64.b64decode(block["data"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"the {kind} block's data is not base64") from None


def sampling_result_from_a2e(response: MCPSamplingResponse) -> dict[str, Any]:
    """The MCP CreateMessageResult of an agent's ``mcp/sample/resp``; ValueError
    if it cannot be one.  (The caller turns a non-empty ``error`` into a refusal.)"""
    if response.role not in _ROLES:
        raise ValueError(f"role must be 'user' or 'assistant', not {response.role!r}")
    content: Any = response.content
    blocks = content if isinstance(content, list) else [content]
    if not blocks:
        raise ValueError("content must not be empty")
    for block in blocks:
        _check_content_block(block)
    result: dict[str, Any] = {
        "role": response.role,
        "content": dict(response.content),
        "model": response.model,
    }
    if response.stop_reason:
        result["stopReason"] = response.stop_reason
    return result


# Roots -------------------------------------------------------------------------------


def roots_result(roots: Sequence[MCPRoot]) -> dict[str, Any]:
    """The MCP ListRootsResult of the bridge's roots (names only when given)."""
    out = []
    for root in roots:
        entry: dict[str, Any] = {"uri": root.uri}
        if root.name:
            entry["name"] = root.name
        out.append(entry)
    return {"roots": out}


def roots_problem(roots: Sequence[MCPRoot]) -> str | None:
    """Why these roots cannot be offered to an MCP server, or None (every
    revision says a root's uri is a ``file://`` URI)."""
    for root in roots:
        if not root.uri.startswith("file://"):
            return f"root {root.uri!r} is not a file:// URI"
    return None


# Cursors -----------------------------------------------------------------------------

_CURSOR_TAG = "a2e-mcp-1"


def encode_cursor(state: Sequence[Any]) -> str:
    """An opaque cursor (URL-safe base64 of a small JSON array)."""
    return encode_state_cursor(_CURSOR_TAG, state)


def decode_cursor(cursor: str) -> list[Any] | None:
    """The state of a cursor made by :func:`encode_cursor`, or None if it is not one."""
    return decode_state_cursor(_CURSOR_TAG, cursor)
