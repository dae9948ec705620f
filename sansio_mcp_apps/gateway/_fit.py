"""What an upstream sends, fitted to the revision of the gateway's client.

An upstream may speak a newer revision than the client the gateway passes its
answer or its question on to; what reaches the client must be valid in the
client's revision.  Where the newer form has an older equivalent it is
rewritten; where it has none it is left out when that loses nothing the
upstream requires, and otherwise left for the session's gate to refuse (the
gateway then tells the client what it lacks)."""

from __future__ import annotations

from typing import Any

from sansio_mcp import Revision

__all__ = ["fit_input_request", "fit_tool_result"]


def fit_tool_result(result: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """``result`` with every content block of a type ``revision`` lacks replaced by
    a text block that says what it was (a resource link: its name and URI)."""
    content = result.get("content")
    if isinstance(content, list):
        known = revision.content_types
        for block in content:  # (most results: every block known, the result as it is)
            if isinstance(block, dict) and block.get("type") not in known:
                fitted = [b if _known(b, revision) else _as_text(b, revision) for b in content]
                return {**result, "content": fitted}
    return result


def _known(block: Any, revision: Revision) -> bool:
    return not isinstance(block, dict) or block.get("type") in revision.content_types


def _as_text(block: dict[str, Any], revision: Revision) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "resource_link":
        name = block.get("title") or block.get("name") or "resource"
        text = f"{name}: {block.get('uri')}"
        if isinstance(block.get("description"), str):
            text += f" ({block['description']})"
    else:
        mime = block.get("mimeType")
        what = f"{kind} content ({mime})" if isinstance(mime, str) else f"{kind} content"
        text = f"[{what} left out: revision {revision.name} cannot carry it]"
    return {"type": "text", "text": text}


def fit_input_request(method: str, params: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """An upstream's input request as a client of ``revision`` can take it.

    Before 2025-11-25 an elicitation form carries no ``mode``, a titled
    single-select (``oneOf`` of ``const`` and ``title``) becomes ``enum`` and
    ``enumNames``, and an optional multi-select is left out (the answer then lacks
    it, which the upstream allowed); a sampling message whose content is a list
    of blocks becomes one message per block, in order, of the same role.  A
    required multi-select, a URL-mode elicitation, or sampling with tools or
    content the revision lacks, is passed as is: the session refuses to send it."""
    if not isinstance(params, dict):
        return params  # no request at all: refused before it is fitted
    if method == "sampling/createMessage" and not revision.sampling_tools:
        return _single_block_messages(params)
    if method != "elicitation/create" or revision.multi_select_elicitation:
        return params
    if params.get("mode", "form") != "form":
        return params
    fitted = {k: v for k, v in params.items() if k != "mode"}
    schema = params.get("requestedSchema")
    fields = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or not isinstance(fields, dict):
        return fitted
    listed = schema.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    kept: dict[str, Any] = {}
    for name, field in fields.items():
        if isinstance(field, dict) and field.get("type") == "array" and name not in required:
            continue
        kept[name] = _titled_as_enum(field)
    fitted["requestedSchema"] = {**schema, "properties": kept}
    return fitted


def _single_block_messages(params: dict[str, Any]) -> dict[str, Any]:
    messages = params.get("messages")
    if not isinstance(messages, list) or not any(
        isinstance(m, dict) and isinstance(m.get("content"), list) for m in messages
    ):
        return params
    split: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            split.extend({**message, "content": block} for block in content)
        else:
            split.append(message)
    return {**params, "messages": split}


def _titled_as_enum(field: Any) -> Any:
    """A titled single-select as the ``enum`` + ``enumNames`` of 2025-06-18."""
    if not isinstance(field, dict) or field.get("type") != "string":
        return field
    options = field.get("oneOf")
    if not isinstance(options, list) or not options:
        return field
    if not all(isinstance(o, dict) and isinstance(o.get("const"), str) for o in options):
        return field
    out = {k: v for k, v in field.items() if k != "oneOf"}
    out["enum"] = [o["const"] for o in options]
    out["enumNames"] = [str(o.get("title", o["const"])) for o in options]
    return out
