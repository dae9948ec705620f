"""The bridge's tool results: a ``CallToolResult`` whose ``content`` holds the
translated parts and whose ``structuredContent`` is the envelope::

    {"kind": "message" | "task", "contextHandle", "taskHandle", "a2aState", "status",
     "note" (when the mapping lost information), "artifacts": [{"artifactId", "name"}],
     "data" (the single data part of the artifacts), "history" (a2a_get_task only)}

Tasks and messages come in their ProtoJSON form (camelCase, enum names).

A result is bounded (:class:`ResultLimits`): at most ``max_parts`` translated parts
(content blocks, history messages and artifact entries alike) and about ``max_bytes``
of JSON, as every part gains a ``_meta`` of its own and a task of many small parts
would otherwise grow many times over.  What does not fit is left out, in order, and a
last text block (and the note) says how much.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from sansio_mcp import jsontext as _json

from ._parts import PartError, integral, part_kind, part_to_content
from ._states import a2a_error_name, state_mapping

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_RESULT_PARTS",
    "ResultLimits",
    "bridge_failure",
    "a2a_error_result",
    "message_result",
    "message_text",
    "task_result",
]

_ROLES = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}
DEFAULT_MAX_RESULT_PARTS = 1000
DEFAULT_MAX_RESULT_BYTES = 8 * 1024 * 1024
#: How many reasons for malformed parts the note spells out (the rest are counted).
_REASONS_SHOWN = 3


@attrs.frozen
class ResultLimits:
    """The bounds of one translated result (``maxResultParts``, ``maxResultBytes``)."""

    max_parts: int = DEFAULT_MAX_RESULT_PARTS
    max_bytes: int = DEFAULT_MAX_RESULT_BYTES


def _payload_size(part: Any) -> int:
    """About how many bytes a part carries (what a left-out part is counted as)."""
    if not isinstance(part, Mapping):
        return 0
    for key in ("text", "url", "raw"):
        if isinstance(part.get(key), str):
            return len(part[key])
    return len(_json.encode(part.get("data"))) if "data" in part else 0


class _Gather:
    """The blocks of one result, under its :class:`ResultLimits`, and what was left out:
    once something does not fit, everything after it is only counted."""

    def __init__(self, limits: ResultLimits) -> None:
        self.limits = limits
        self.parts = 0
        self.size = 0
        self.cut_parts = 0
        #: Left out of the envelope: artifact entries, history messages, the data.
        self.cut_entries = 0
        self.cut_bytes = 0
        self.bad: list[str] = []
        self.bad_count = 0

    @property
    def cut(self) -> bool:
        return bool(self.cut_parts or self.cut_entries)

    def fits(self, value: Any, *, entry: bool = False) -> bool:
        """Count ``value`` (a block, or an ``entry`` of the envelope) in if it fits,
        else as left out."""
        size = len(_json.encode(value))
        if (
            self.cut
            or self.parts >= self.limits.max_parts
            or self.size + size > self.limits.max_bytes
        ):
            if entry:
                self.cut_entries += 1
            else:
                self.cut_parts += 1
            self.cut_bytes += size
            return False
        self.parts += 1
        self.size += size
        return True

    def blocks(self, parts: Iterable[Any], origin: Mapping[str, Any]) -> list[dict[str, Any]]:
        blocks = []
        for part in parts:
            if self.cut:
                self.cut_parts += 1
                self.cut_bytes += _payload_size(part)
                continue
            try:
                if not isinstance(part, Mapping):
                    raise PartError(f"a part must be an object, not {type(part).__name__}")
                block = part_to_content(part, origin)
            except PartError as exc:
                self.bad_count += 1
                if len(self.bad) < _REASONS_SHOWN:
                    self.bad.append(f"a part was left out: {exc}")
                continue
            if self.fits(block):
                blocks.append(block)
        return blocks

    def notes(self) -> list[str]:
        said = list(self.bad)
        if self.bad_count > len(self.bad):
            said.append(f"{self.bad_count - len(self.bad)} more malformed parts were left out")
        if self.cut:
            said.append(self.cut_text())
        return said

    def cut_text(self) -> str:
        parts = f"{self.cut_parts} part{'s' if self.cut_parts != 1 else ''}"
        if self.cut_entries:
            parts += (
                f" and {self.cut_entries} envelope entr{'ies' if self.cut_entries != 1 else 'y'}"
            )
        return (
            f"the bridge left out {parts} (about {self.cut_bytes} bytes) at the end of this "
            f"result: a result holds at most {self.limits.max_parts} parts and "
            f"{self.limits.max_bytes} bytes (maxResultParts, maxResultBytes)"
        )

    def finish(self, content: list[dict[str, Any]]) -> None:
        """The closing text block saying what was left out, if anything was."""
        if self.cut:
            content.append({"type": "text", "text": f"[{self.cut_text()}]"})


def _message_origin(message: Mapping[str, Any]) -> dict[str, Any]:
    origin = {"messageId": message.get("messageId"), "contextId": message.get("contextId")}
    return {k: v for k, v in origin.items() if v}


def message_text(message: Mapping[str, Any] | None) -> str:
    """The text parts of ``message``, one per line."""
    if not isinstance(message, Mapping):
        return ""
    parts = _list(message, "parts")
    return "\n".join(
        p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)
    )


def _note(notes: list[str]) -> dict[str, Any]:
    return {"note": "; ".join(notes)} if notes else {}


def message_result(
    message: Mapping[str, Any],
    *,
    context_handle: str | None,
    limits: ResultLimits = ResultLimits(),
) -> dict[str, Any]:
    """A direct A2A Message as a tool result."""
    gather = _Gather(limits)
    content = gather.blocks(_list(message, "parts"), _message_origin(message))
    gather.finish(content)
    envelope: dict[str, Any] = {"kind": "message", "status": "completed"}
    if context_handle is not None:
        envelope["contextHandle"] = context_handle
    envelope["artifacts"] = []
    envelope.update(_note(gather.notes()))
    return {"content": content, "structuredContent": envelope, "isError": False}


def _list(value: Mapping[str, Any], key: str) -> list[Any]:
    found = value.get(key)
    return found if isinstance(found, list) else []


def _single_data(artifacts: Iterable[Mapping[str, Any]]) -> tuple[bool, Any]:
    found = []
    for artifact in artifacts:
        for part in _list(artifact, "parts"):
            try:
                if isinstance(part, Mapping) and part_kind(part) == "data":
                    found.append(part["data"])
            except PartError:
                continue
            if len(found) > 1:
                return False, None
    return (True, integral(found[0])) if len(found) == 1 else (False, None)


def task_result(
    task: Mapping[str, Any],
    *,
    context_handle: str | None,
    task_handle: str,
    with_history: bool = False,
    notes: Iterable[str] = (),
    limits: ResultLimits = ResultLimits(),
) -> dict[str, Any]:
    """An A2A Task as a tool result: an error result when the state is one (FAILED,
    REJECTED, AUTH_REQUIRED, unspecified)."""
    status = task.get("status") or {}
    row = state_mapping(status.get("state"))
    said: list[str] = [row.note] if row.note else []
    said.extend(notes)
    gather = _Gather(limits)
    content: list[dict[str, Any]] = []
    if status.get("message"):
        message = status["message"]
        content += gather.blocks(_list(message, "parts"), _message_origin(message))
    artifacts = [a for a in _list(task, "artifacts") if isinstance(a, Mapping)]
    for artifact in artifacts:
        origin = {"artifactId": artifact.get("artifactId"), "artifactName": artifact.get("name")}
        if artifact.get("description"):
            origin["artifactDescription"] = artifact["description"]
        if task.get("contextId"):
            origin["contextId"] = task["contextId"]
        content += gather.blocks(_list(artifact, "parts"), {k: v for k, v in origin.items() if v})
    if not content and not gather.cut:
        content.append(
            {"type": "text", "text": f"The agent's task is {row.status} ({row.a2a_state})."}
        )
    envelope: dict[str, Any] = {"kind": "task"}
    if context_handle is not None:
        envelope["contextHandle"] = context_handle
    listed = []
    for artifact in artifacts:
        entry = {"artifactId": artifact.get("artifactId", ""), "name": artifact.get("name", "")}
        if gather.fits(entry, entry=True):
            listed.append(entry)
    envelope.update(
        taskHandle=task_handle, a2aState=row.a2a_state, status=row.status, artifacts=listed
    )
    has_data, data = _single_data(artifacts)
    if has_data and gather.fits(data, entry=True):
        envelope["data"] = data
    if with_history:
        envelope["history"] = []
        for m in _list(task, "history"):
            if not isinstance(m, Mapping):
                continue
            entry = {
                "role": _ROLES.get(m.get("role", ""), "unspecified"),
                "messageId": m.get("messageId", ""),
            }
            if not gather.fits(entry, entry=True):
                continue
            entry["content"] = gather.blocks(_list(m, "parts"), {})
            envelope["history"].append(entry)
    gather.finish(content)
    said.extend(gather.notes())
    envelope.update(_note(said))
    return {"content": content, "structuredContent": envelope, "isError": row.is_error}


def a2a_error_result(code: int, message: str, *, agent: str) -> dict[str, Any]:
    """A typed A2A error (-32001 to -32009) as a tool error: the code stays in
    ``structuredContent.a2aErrorCode``, never a JSON-RPC code of ours."""
    name = a2a_error_name(code)
    return {
        "content": [
            {
                "type": "text",
                "text": f"agent {agent!r} answered A2A error {code} ({name}): {message}",
            }
        ],
        "structuredContent": {"a2aErrorCode": code, "error": name, "message": message},
        "isError": True,
    }


def bridge_failure(text: str, *, error: str, **details: Any) -> dict[str, Any]:
    """A failure of the bridge's own (unknown handle, unreachable agent) as a tool error."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"error": error, "message": text, **details},
        "isError": True,
    }
