"""The bridge's tool results: a ``CallToolResult`` whose ``content`` holds the
translated parts and whose ``structuredContent`` is the envelope::

    {"kind": "message" | "task", "contextHandle", "taskHandle", "a2aState", "status",
     "note" (when the mapping lost information), "artifacts": [{"artifactId", "name"}],
     "data" (the single data part of the artifacts), "history" (a2a_get_task only)}

Tasks and messages come in their ProtoJSON form (camelCase, enum names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._parts import PartError, integral, part_kind, part_to_content
from ._states import a2a_error_name, state_mapping

__all__ = [
    "bridge_failure",
    "a2a_error_result",
    "message_result",
    "message_text",
    "task_result",
]

_ROLES = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}


def _blocks(
    parts: Iterable[Mapping[str, Any]], origin: Mapping[str, Any], notes: list[str]
) -> list[dict[str, Any]]:
    blocks = []
    for part in parts:
        try:
            blocks.append(part_to_content(part, origin))
        except PartError as exc:
            notes.append(f"a part was left out: {exc}")
    return blocks


def _message_origin(message: Mapping[str, Any]) -> dict[str, Any]:
    origin = {"messageId": message.get("messageId"), "contextId": message.get("contextId")}
    return {k: v for k, v in origin.items() if v}


def message_text(message: Mapping[str, Any] | None) -> str:
    """The text parts of ``message``, one per line."""
    if not message:
        return ""
    texts = [p["text"] for p in message.get("parts", ()) if isinstance(p.get("text"), str)]
    return "\n".join(texts)


def _note(notes: list[str]) -> dict[str, Any]:
    return {"note": "; ".join(notes)} if notes else {}


def message_result(message: Mapping[str, Any], *, context_handle: str | None) -> dict[str, Any]:
    """A direct A2A Message as a tool result."""
    notes: list[str] = []
    content = _blocks(message.get("parts", ()), _message_origin(message), notes)
    envelope: dict[str, Any] = {"kind": "message", "status": "completed"}
    if context_handle is not None:
        envelope["contextHandle"] = context_handle
    envelope["artifacts"] = []
    envelope.update(_note(notes))
    return {"content": content, "structuredContent": envelope, "isError": False}


def _single_data(artifacts: Iterable[Mapping[str, Any]]) -> tuple[bool, Any]:
    found = []
    for artifact in artifacts:
        for part in artifact.get("parts", ()):
            try:
                if part_kind(part) == "data":
                    found.append(part["data"])
            except PartError:
                continue
    return (True, integral(found[0])) if len(found) == 1 else (False, None)


def task_result(
    task: Mapping[str, Any],
    *,
    context_handle: str | None,
    task_handle: str,
    with_history: bool = False,
    notes: Iterable[str] = (),
) -> dict[str, Any]:
    """An A2A Task as a tool result: an error result when the state is one (FAILED,
    REJECTED, AUTH_REQUIRED, unspecified)."""
    status = task.get("status") or {}
    row = state_mapping(status.get("state"))
    said: list[str] = [row.note] if row.note else []
    said.extend(notes)
    content: list[dict[str, Any]] = []
    if status.get("message"):
        content += _blocks(
            status["message"].get("parts", ()), _message_origin(status["message"]), said
        )
    artifacts = list(task.get("artifacts", ()))
    for artifact in artifacts:
        origin = {"artifactId": artifact.get("artifactId"), "artifactName": artifact.get("name")}
        if artifact.get("description"):
            origin["artifactDescription"] = artifact["description"]
        if task.get("contextId"):
            origin["contextId"] = task["contextId"]
        content += _blocks(artifact.get("parts", ()), {k: v for k, v in origin.items() if v}, said)
    if not content:
        content.append(
            {"type": "text", "text": f"The agent's task is {row.status} ({row.a2a_state})."}
        )
    envelope: dict[str, Any] = {"kind": "task"}
    if context_handle is not None:
        envelope["contextHandle"] = context_handle
    envelope.update(
        taskHandle=task_handle,
        a2aState=row.a2a_state,
        status=row.status,
        artifacts=[
            {"artifactId": a.get("artifactId", ""), "name": a.get("name", "")} for a in artifacts
        ],
    )
    has_data, data = _single_data(artifacts)
    if has_data:
        envelope["data"] = data
    if with_history:
        history_notes: list[str] = []
        envelope["history"] = [
            {
                "role": _ROLES.get(m.get("role", ""), "unspecified"),
                "messageId": m.get("messageId", ""),
                "content": _blocks(m.get("parts", ()), {}, history_notes),
            }
            for m in task.get("history", ())
        ]
        said.extend(f"history: {n}" for n in history_notes)
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
