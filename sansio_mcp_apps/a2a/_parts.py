"""A2A v1.0 parts (their ProtoJSON form) as MCP content blocks.

=============================  =====================================================
A2A part                       MCP content block
=============================  =====================================================
``text``                       ``TextContent``
``data``                       ``TextContent`` holding the JSON, ``partKind: "data"``
``url``                        ``ResourceLink`` (filename as name, mediaType as mimeType)
``raw``, image/* or audio/*    ``ImageContent`` / ``AudioContent`` (base64)
``raw``, any other media type  an embedded blob resource under ``a2a://part/``
=============================  =====================================================

What a block cannot say itself (the part's filename, media type and metadata, the
artifact's identity and name, the message and context ids) goes in its ``_meta``
under :data:`META_KEY`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from sansio_mcp import jsontext

__all__ = ["META_KEY", "PART_KINDS", "PartError", "integral", "part_kind", "part_to_content"]

#: The ``_meta`` key of everything A2A a block carries.
META_KEY = "io.github.sansio-mcp/a2a"
PART_KINDS = ("text", "data", "url", "raw")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class PartError(ValueError):
    """A part that is not an A2A v1.0 part."""


def part_kind(part: Mapping[str, Any]) -> str:
    """Which of ``text``, ``data``, ``url``, ``raw`` the part is (the field present)."""
    if "kind" in part:
        raise PartError(f"an A2A v0.3 part (kind {part['kind']!r}); the bridge speaks A2A 1.0")
    present = [kind for kind in PART_KINDS if kind in part]
    if len(present) != 1:
        raise PartError(f"a part must have exactly one of text, data, url, raw: {sorted(part)}")
    return present[0]


def integral(value: Any) -> Any:
    """``value`` with whole floats as ints: a protobuf ``Value`` keeps every number
    as a double, and JSON does not tell 42.0 from 42."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def _raw_bytes(raw: Any) -> bytes:
    if not isinstance(raw, str):
        raise PartError("a raw part's bytes must be base64 text")
    # ProtoJSON writes standard base64 and reads the URL-safe kind too, padded or not.
    text = raw.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise PartError("a raw part's bytes are not valid base64") from None


def part_to_content(
    part: Mapping[str, Any], origin: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The MCP content block of ``part``; ``origin`` (artifact and message ids and
    names) joins the part's own details in ``_meta``."""
    kind = part_kind(part)
    media_type = part.get("mediaType") or None
    filename = part.get("filename") or None
    details: dict[str, Any] = {"partKind": kind, **(origin or {})}
    if filename:
        details["filename"] = filename
    if media_type:
        details["mediaType"] = media_type
    if part.get("metadata"):
        details["metadata"] = part["metadata"]
    block: dict[str, Any]
    if kind == "text":
        if not isinstance(part["text"], str):
            raise PartError("a text part's text must be a string")
        block = {"type": "text", "text": part["text"]}
    elif kind == "data":
        block = {"type": "text", "text": jsontext.dumps(integral(part["data"]))}
    elif kind == "url":
        url = part["url"]
        if not isinstance(url, str) or not url:
            raise PartError("a url part's url must be a non-empty string")
        block = {"type": "resource_link", "uri": url, "name": filename or url}
        if media_type:
            block["mimeType"] = media_type
    else:
        data = _raw_bytes(part["raw"])
        encoded = base64.b64encode(data).decode("ascii")
        mime = media_type or "application/octet-stream"
        if mime.startswith("image/"):
            block = {"type": "image", "data": encoded, "mimeType": mime}
        elif mime.startswith("audio/"):
            block = {"type": "audio", "data": encoded, "mimeType": mime}
        else:
            name = (
                _SAFE_NAME.sub("_", filename) if filename else hashlib.sha256(data).hexdigest()[:16]
            )
            uri = f"a2a://part/{name}"
            block = {
                "type": "resource",
                "resource": {"uri": uri, "mimeType": mime, "blob": encoded},
            }
    block["_meta"] = {META_KEY: details}
    return block
