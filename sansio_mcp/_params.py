"""Shape checks for the params of the methods the core understands.

Only what the core relies on is checked (-32602 when it is wrong); the rest
of a message is the application's business and passes through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LOG_LEVELS", "check_params", "type_only_fields"]

LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _id(v: Any) -> bool:
    return _str(v) or _int(v)


def _str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _level(v: Any) -> bool:
    return v in LOG_LEVELS


def _ref(v: Any) -> bool:
    if not isinstance(v, dict):
        return False
    if v.get("type") == "ref/prompt":
        return _str(v.get("name"))
    if v.get("type") == "ref/resource":
        return _str(v.get("uri"))
    return False


def _argument(v: Any) -> bool:
    return isinstance(v, dict) and _str(v.get("name")) and _str(v.get("value"))


# method -> ((field, description, check, required), ...); a check that is a type is
# an isinstance test, made without a call of ours (every request is checked).
_SPECS: Mapping[str, tuple[tuple[str, str, type | Check, bool], ...]] = {
    "initialize": (
        ("protocolVersion", "a string", str, True),
        ("capabilities", "an object", dict, True),
        ("clientInfo", "an object", dict, True),
    ),
    "resources/list": (("cursor", "a string", str, False),),
    "resources/templates/list": (("cursor", "a string", str, False),),
    "prompts/list": (("cursor", "a string", str, False),),
    "tools/list": (("cursor", "a string", str, False),),
    "resources/read": (("uri", "a string", str, True),),
    "resources/subscribe": (("uri", "a string", str, True),),
    "resources/unsubscribe": (("uri", "a string", str, True),),
    "prompts/get": (
        ("name", "a string", str, True),
        ("arguments", "an object of strings", _str_map, False),
    ),
    "tools/call": (
        ("name", "a string", str, True),
        ("arguments", "an object", dict, False),
        ("task", "an object", dict, False),
    ),
    "tasks/get": (("taskId", "a string", str, True),),
    "tasks/result": (("taskId", "a string", str, True),),
    "tasks/list": (("cursor", "a string", str, False),),
    "tasks/cancel": (("taskId", "a string", str, True),),
    "tasks/update": (
        ("taskId", "a string", str, True),
        ("inputResponses", "an object", dict, True),
    ),
    "logging/setLevel": (("level", "one of " + ", ".join(LOG_LEVELS), _level, True),),
    "completion/complete": (
        ("ref", "a ref/prompt or ref/resource reference", _ref, True),
        ("argument", "an object with string name and value", _argument, True),
    ),
    "sampling/createMessage": (
        ("messages", "an array", list, True),
        ("maxTokens", "an integer", _int, True),
    ),
    "elicitation/create": (("message", "a string", str, True),),
    "notifications/cancelled": (("requestId", "a string or an integer", _id, False),),
    "notifications/progress": (
        ("progressToken", "a string or an integer", _id, True),
        ("progress", "a number", _number, True),
        ("total", "a number", _number, False),
        ("message", "a string", str, False),
    ),
    "notifications/message": (("level", "a log level", _level, True),),
    "notifications/resources/updated": (("uri", "a string", str, True),),
}


def _check_message(params: dict[str, Any]) -> str | None:
    if "data" not in params:
        return "notifications/message: missing required parameter 'data'"
    return None


def _check_elicitation(params: dict[str, Any]) -> str | None:
    mode = params.get("mode", "form")
    if mode == "url":
        if not _str(params.get("url")):
            return "elicitation/create: url mode needs a string 'url'"
    elif mode == "form":
        schema = params.get("requestedSchema")
        if not isinstance(schema, dict):
            return "elicitation/create: form mode needs an object 'requestedSchema'"
        if not isinstance(schema.get("properties"), dict):
            return "elicitation/create: a form's requestedSchema needs an object 'properties'"
    else:
        return f"elicitation/create: unknown mode {mode!r}"
    return None


# Checks beyond single fields.
_WHOLE: Mapping[str, Callable[[dict[str, Any]], str | None]] = {
    "notifications/message": _check_message,
    "elicitation/create": _check_elicitation,
}


def check_params(method: str, params: dict[str, Any]) -> str | None:
    """A description of what is wrong with ``params`` for ``method``, or None."""
    for field, description, check, required in _SPECS.get(method, ()):
        if field not in params:
            if required:
                return f"{method}: missing required parameter {field!r}"
            continue
        value = params[field]
        if not (isinstance(value, check) if type(check) is type else check(value)):
            return f"{method}: parameter {field!r} must be {description}"
    return _WHOLE[method](params) if method in _WHOLE else None


def type_only_fields(method: str) -> tuple[tuple[str, type, bool], ...] | None:
    """``method``'s checks as ``(field, type, required)`` when each is an isinstance
    test and nothing else is checked (what a gate can test inline; see
    ``RoleGates.check_incoming_request``), else None."""
    if method in _WHOLE:
        return None
    fields = []
    for field, _, check, required in _SPECS.get(method, ()):
        if type(check) is not type:
            return None
        fields.append((field, check, required))
    return tuple(fields)
