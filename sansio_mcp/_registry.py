"""The pure half of the declarative server: what a tool, resource, template or
prompt is and how it is listed, how handler values become results, cursors,
and :class:`SessionHub`.  The async dispatch lives in :mod:`sansio_mcp.runtime`."""

from __future__ import annotations

import base64
import binascii
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import attrs

from . import _json
from ._errors import InvalidParams, LocalProtocolError, RemoteProtocolError
from ._server_session import ServerSession
from ._state import SessionState
from ._uritemplate import UriTemplate

__all__ = [
    "HandlerCall",
    "NeedInput",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "SessionHub",
    "Tool",
    "ToolResult",
    "completion_result",
    "decode_cursor",
    "decode_state_cursor",
    "describe",
    "encode_cursor",
    "encode_state_cursor",
    "input_request",
    "put_present",
    "resource_contents",
    "text_content",
    "tool_result",
]

Handler = Callable[..., Any]


def text_content(text: str) -> dict[str, Any]:
    """A ``{"type": "text"}`` content block."""
    return {"type": "text", "text": text}


@attrs.frozen
class ToolResult:
    """What a tool may return for full control over the ``CallToolResult``."""

    content: list[dict[str, Any]] = attrs.field(factory=list)
    structured: Any = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, *, structured: Any = None, is_error: bool = False) -> ToolResult:
        return cls([text_content(text)], structured, is_error)

    def to_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": self.content, "isError": self.is_error}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        return result


class SessionHub:
    """The live sessions of one server, for notifications that concern every
    client (a resource changed, a list changed).  Adapters add each session
    with a callback that flushes its output, and remove it when it ends."""

    def __init__(self) -> None:
        self._members: dict[int, tuple[ServerSession, Callable[[], None]]] = {}

    def add(self, session: ServerSession, on_output: Callable[[], None]) -> None:
        self._members[id(session)] = (session, on_output)

    def remove(self, session: ServerSession) -> None:
        self._members.pop(id(session), None)

    def __len__(self) -> int:
        return len(self._live())

    def _live(self) -> list[tuple[ServerSession, Callable[[], None]]]:
        for key, (session, _) in list(self._members.items()):
            if session.state is SessionState.CLOSED:
                del self._members[key]
        return list(self._members.values())

    def _tell(self, send: Callable[[ServerSession], bool]) -> int:
        """``send`` on every live session; flush those it sent on; returns how many."""
        told = 0
        for session, on_output in self._live():
            if send(session):
                on_output()
                told += 1
        return told

    def resource_updated(self, uri: str) -> int:
        """Tell every subscriber of ``uri``; returns how many sessions were told."""
        return self._tell(lambda session: session.send_resource_updated(uri))

    def tell(self, session: ServerSession, send: Callable[[ServerSession], bool]) -> bool:
        """``send`` on one member session (flushed if it sent); False if it is gone."""
        member = self._members.get(id(session))
        if member is None or session.state is SessionState.CLOSED or not send(session):
            return False
        member[1]()
        return True

    def task_status(self, detailed_task: dict[str, Any]) -> int:
        """Push a task's new state to the subscriptions listening for it."""
        return self._tell(lambda session: session.send_task_status(detailed_task))

    def list_changed(
        self, kind: str, *, only: Callable[[ServerSession], bool] | None = None
    ) -> int:
        """Tell every session that follows ``kind`` (tools, prompts, resources),
        or those of them ``only`` accepts."""
        told = 0
        for session, on_output in self._live():
            if only is not None and not only(session):
                continue
            try:
                sent = session.send_list_changed(kind)
            except LocalProtocolError:
                continue  # this session's server did not advertise listChanged
            if sent:
                on_output()
                told += 1
        return told


class NeedInput(Exception):
    """Raised inside a stateless handler that needs the client's input first;
    ``requests`` maps each ``inputRequests`` key to its ``{"method", "params"}``."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(", ".join(requests))
        self.requests = requests


def input_request(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    request: dict[str, Any] = {"method": method}
    if params is not None:
        request["params"] = params
    return request


@attrs.frozen
class Tool:
    name: str
    handler: Handler = attrs.field(eq=False, repr=False)
    input_schema: dict[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    context_param: str | None = None
    #: ``"optional"`` or ``"required"`` when the tool may run as a task (tasks extension).
    task_support: str | None = None
    #: OAuth scopes a call needs beyond the resource server's (a protected HTTP server).
    scopes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        put_present(
            out,
            title=self.title,
            description=self.description,
            outputSchema=self.output_schema,
            annotations=self.annotations,
        )
        return out


@attrs.frozen
class Resource:
    uri: str
    name: str
    handler: Handler = attrs.field(eq=False, repr=False)
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        put_present(out, title=self.title, description=self.description, mimeType=self.mime_type)
        return out


def _read_only(completers: Mapping[str, Handler]) -> Mapping[str, Handler]:
    return MappingProxyType(dict(completers))


@attrs.frozen
class ResourceTemplate:
    uri_template: str
    name: str
    handler: Handler = attrs.field(eq=False, repr=False)
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    # Read-only: a session template is rebuilt when a registry changes, not when
    # a registered entry is edited in place, so an entry cannot be.
    completers: Mapping[str, Handler] = attrs.field(
        eq=False, repr=False, factory=dict, converter=_read_only
    )
    matcher: UriTemplate = attrs.field(eq=False, repr=False, init=False)

    @matcher.default
    def _matcher(self) -> UriTemplate:
        return UriTemplate(self.uri_template)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        put_present(out, title=self.title, description=self.description, mimeType=self.mime_type)
        return out


@attrs.frozen
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "required": self.required}
        put_present(out, description=self.description)
        return out


@attrs.frozen
class Prompt:
    name: str
    handler: Handler = attrs.field(eq=False, repr=False)
    arguments: tuple[PromptArgument, ...] = ()
    description: str | None = None
    title: str | None = None
    # Read-only: a session template is rebuilt when a registry changes, not when
    # a registered entry is edited in place, so an entry cannot be.
    completers: Mapping[str, Handler] = attrs.field(
        eq=False, repr=False, factory=dict, converter=_read_only
    )
    context_param: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        put_present(out, title=self.title, description=self.description)
        if self.arguments:
            out["arguments"] = [a.to_dict() for a in self.arguments]
        return out


def put_present(target: dict[str, Any], **values: Any) -> None:
    for key, value in values.items():
        if value is not None:
            target[key] = value


def describe(func: Handler, description: str | None) -> str | None:
    if description is not None:
        return description
    doc = inspect.getdoc(func)
    return doc.strip() if doc else None


class HandlerCall(NamedTuple):
    """The handler call a request comes down to, and how its value becomes the result.

    Immutable as a tuple: one is made per request, and a frozen attrs class's
    ``__init__`` (each field set through ``object.__setattr__``) costs twice as much.
    """

    handler: Handler
    kwargs: dict[str, Any]
    finish: Callable[[Any], dict[str, Any]]
    #: A failing tool is reported as an ``isError`` result, not as an error.
    tool: bool = False
    #: Run in the background as a task (tasks extension), answered with a CreateTaskResult.
    task: bool = False


def completion_result(found: Iterable[Any]) -> dict[str, Any]:
    values = [str(v) for v in found]
    completion: dict[str, Any] = {"values": values[:100], "total": len(values)}
    completion["hasMore"] = len(values) > 100
    return {"completion": completion}


def tool_result(value: Any) -> dict[str, Any]:
    if type(value) is str:  # the most common value: text_content's block, built inline
        return {"content": [{"type": "text", "text": value}], "isError": False}
    if isinstance(value, ToolResult):
        return value.to_result()
    if isinstance(value, str):
        return ToolResult.text(value).to_result()
    if isinstance(value, dict) and "content" in value:
        return value
    if value is None:
        return ToolResult().to_result()
    structured = value if isinstance(value, dict) else None
    return ToolResult.text(_json.dumps(value), structured=structured).to_result()


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return value
    content: dict[str, Any] = {"uri": uri}
    put_present(content, mimeType=mime_type)
    if isinstance(value, bytes):
        content["blob"] = base64.b64encode(value).decode("ascii")
    else:
        content["text"] = value if isinstance(value, str) else _json.dumps(value)
    return [content]


def encode_state_cursor(tag: str, state: Sequence[Any]) -> str:
    """An opaque cursor holding a small JSON state: URL-safe base64 of ``[tag, *state]``
    (the tag tells one kind of cursor from another)."""
    raw = _json.dumps([tag, *state]).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_state_cursor(tag: str, cursor: Any) -> list[Any] | None:
    """The state of a cursor :func:`encode_state_cursor` made with ``tag``, or None."""
    if not isinstance(cursor, str):
        return None
    try:
        value = _json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, RemoteProtocolError):
        return None
    if not isinstance(value, list) or not value or value[0] != tag:
        return None
    return list(value[1:])


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode("ascii")


def decode_cursor(cursor: Any, size: int) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
        prefix, _, number = text.partition(":")
        offset = int(number)
        if prefix != "offset" or not 0 <= offset <= size:
            raise ValueError
    except (ValueError, UnicodeError, binascii.Error):
        raise InvalidParams(message=f"invalid cursor: {cursor!r}") from None
    return offset
