"""Every MCP message kind of every revision, as specs (see :mod:`._spec`).

Written from the official schemas, and checked against them by the test
suite (``tests/toolkit/test_strategies.py``): every value a spec generates
validates against the named definition of its revision.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

import attrs
from hypothesis import strategies as st

from sansio_mcp import (
    CACHEABLE_METHODS,
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MRTR_METHODS,
    REVISIONS,
    Era,
)

from ._spec import (
    AnyJSON,
    Arr,
    Bool,
    Const,
    Enum,
    Int,
    Map,
    Null,
    Num,
    Obj,
    Opaque,
    Spec,
    Str,
    Union,
    json_values,
)
from .schemas import RESULT_DEFINITIONS

__all__ = ["MessageKind", "catalog"]

CATEGORIES = ("request", "notification", "result", "error")


@attrs.frozen
class MessageKind:
    """One kind of message of one revision.

    For requests, notifications and errors ``spec`` describes the whole
    JSON-RPC message; for results it describes the ``result`` object (see
    :func:`sansio_mcp_testing.strategies.responses` for whole responses).
    ``definition`` names the official schema definition it validates against.
    """

    revision: str
    category: str
    sender: str
    method: str | None
    definition: str
    spec: Spec = attrs.field(eq=False, repr=False)

    @property
    def envelope(self) -> str:
        """The JSON-RPC definition a whole message of this kind must satisfy."""
        if self.category == "request":
            return "JSONRPCRequest"
        if self.category == "notification":
            return "JSONRPCNotification"
        if self.category == "error":
            return self.definition
        return "JSONRPCResultResponse" if self.revision >= "2025-11-25" else "JSONRPCResponse"

    @property
    def name(self) -> str:
        what = self.method or "error"
        return f"{self.revision} {self.sender} {self.category} {what} ({self.definition})"


# ----------------------------------------------------------------- leaves

_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=16
)
_names = st.from_regex(r"[a-z][a-z0-9_\-]{0,15}", fullmatch=True)
_uris = st.builds(
    lambda scheme, path: f"{scheme}:///{path}",
    st.sampled_from(["file", "https", "example", "mem"]),
    st.from_regex(r"[a-z0-9_\-/]{1,20}", fullmatch=True),
)
_base64 = st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode("ascii"))
_timestamps = st.datetimes().map(lambda d: d.isoformat() + "Z")
_versions = st.from_regex(r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}", fullmatch=True)


def _text() -> Str:
    return Str(strategy=_words)


def _name() -> Str:
    return Str(strategy=_names)


def _uri() -> Str:
    return Str(strategy=_uris)


def _notifications_filter() -> Obj:
    """What ``subscriptions/listen`` asks for, and its acknowledgement grants."""
    return Obj(
        {},
        {
            "toolsListChanged": Bool(),
            "promptsListChanged": Bool(),
            "resourcesListChanged": Bool(),
            "resourceSubscriptions": Arr(_uri(), max_size=2),
        },
    )


def request_id() -> Union:
    return Union(Str(strategy=st.from_regex(r"[a-zA-Z0-9\-]{1,12}", fullmatch=True)), Int(0, 2**31))


def _open(*values: Any) -> Enum:
    """Values we choose to send where the schema takes any string."""
    return Enum(*values, closed=False)


def _empty_object() -> Obj:
    return Obj()


class _Rev:
    """Spec builders for one revision."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stateless = REVISIONS[name].era is Era.STATELESS

    def at_least(self, revision: str) -> bool:
        return self.name >= revision

    def json_object(self) -> Opaque:
        """A JSON object (2026-07-28's ``JSONObject``: no nulls, no fractions)."""
        return Opaque(
            st.dictionaries(_names, json_values(6, stateless=self.stateless), max_size=3),
            ["object"],
        )

    # Metadata ------------------------------------------------------------------

    def icons(self) -> dict[str, Spec]:
        if not self.at_least("2025-11-25"):
            return {}
        icon = Obj(
            {"src": Str(strategy=st.just("https://example.com/icon.png"))},
            {
                "mimeType": _open("image/png", "image/svg+xml"),
                "sizes": Arr(_open("48x48", "any")),
                "theme": Enum("light", "dark"),
            },
        )
        return {"icons": Arr(icon, max_size=2)}

    def implementation(self) -> Obj:
        optional: dict[str, Spec] = {}
        if self.at_least("2025-06-18"):
            optional["title"] = _text()
        if self.at_least("2025-11-25"):
            optional.update(self.icons())
            optional["description"] = _text()
            optional["websiteUrl"] = Str(strategy=st.just("https://example.com"))
        return Obj({"name": _name(), "version": Str(strategy=_versions)}, optional)

    def meta(self) -> Spec:
        """A plain ``_meta`` object."""
        return Opaque(
            st.dictionaries(
                st.sampled_from(["com.example/trace", "note", "org.test/x"]),
                json_values(4),
                max_size=2,
            ),
            ["object"],
        )

    def request_meta(self) -> Obj:
        if not self.stateless:
            return Obj({}, {"progressToken": request_id()})
        optional: dict[str, Spec] = {
            META_CLIENT_INFO: self.implementation(),
            META_LOG_LEVEL: Enum(*LOG_LEVELS),
            "progressToken": request_id(),
        }
        return Obj(
            {
                META_PROTOCOL_VERSION: Const(self.name, closed=False),
                META_CLIENT_CAPABILITIES: self.client_capabilities(),
            },
            optional,
        )

    def result_meta(self) -> Spec:
        if not self.stateless:
            return self.meta()
        return Obj({}, {META_SERVER_INFO: self.implementation()})

    def notification_meta(self) -> Spec:
        if not self.stateless:
            return self.meta()
        return Obj({}, {META_SUBSCRIPTION_ID: request_id()})

    # Capabilities ----------------------------------------------------------------

    def client_capabilities(self) -> Obj:
        optional: dict[str, Spec] = {
            "experimental": Map(self.json_object(), keys=_names, max_size=2),
            "roots": Obj() if self.stateless else Obj({}, {"listChanged": Bool()}),
        }
        if self.at_least("2025-11-25"):
            optional["sampling"] = Obj({}, {"context": _empty_object(), "tools": _empty_object()})
            optional["elicitation"] = Obj({}, {"form": _empty_object(), "url": _empty_object()})
        else:
            optional["sampling"] = _empty_object()
            if self.at_least("2025-06-18"):
                optional["elicitation"] = _empty_object()
        if self.name == "2025-11-25":
            optional["tasks"] = Obj({}, {"list": _empty_object(), "cancel": _empty_object()})
        if self.stateless:
            optional["extensions"] = Map(self.json_object(), keys=_names, max_size=2)
        return Obj({}, optional)

    def server_capabilities(self) -> Obj:
        optional: dict[str, Spec] = {
            "experimental": Map(self.json_object(), keys=_names, max_size=2),
            "logging": _empty_object(),
            "prompts": Obj({}, {"listChanged": Bool()}),
            "resources": Obj({}, {"listChanged": Bool(), "subscribe": Bool()}),
            "tools": Obj({}, {"listChanged": Bool()}),
        }
        if self.at_least("2025-03-26"):
            optional["completions"] = _empty_object()
        if self.name == "2025-11-25":
            optional["tasks"] = Obj({}, {"list": _empty_object(), "cancel": _empty_object()})
        if self.stateless:
            optional["extensions"] = Map(self.json_object(), keys=_names, max_size=2)
        return Obj({}, optional)

    # Content -----------------------------------------------------------------------

    def annotations(self) -> dict[str, Spec]:
        fields: dict[str, Spec] = {
            "audience": Arr(Enum("user", "assistant"), max_size=2),
            "priority": Num(0, 1, floor=0, ceil=1),
        }
        if self.at_least("2025-06-18"):
            fields["lastModified"] = Str(strategy=_timestamps)
        return {"annotations": Obj({}, fields)}

    def _block(self, type_: str, required: dict[str, Spec]) -> Obj:
        optional = self.annotations()
        if self.at_least("2025-06-18"):
            optional["_meta"] = self.meta()
        return Obj({"type": Const(type_), **required}, optional)

    def text_content(self) -> Obj:
        return self._block("text", {"text": _text()})

    def image_content(self) -> Obj:
        return self._block(
            "image",
            {"data": Str(strategy=_base64), "mimeType": _open("image/png", "image/jpeg")},
        )

    def audio_content(self) -> Obj:
        return self._block(
            "audio", {"data": Str(strategy=_base64), "mimeType": _open("audio/wav", "audio/mpeg")}
        )

    def resource_contents(self) -> Union:
        optional: dict[str, Spec] = {"mimeType": _open("text/plain", "application/json")}
        if self.at_least("2025-06-18"):
            optional["_meta"] = self.meta()
        text = Obj({"uri": _uri(), "text": _text()}, optional)
        blob = Obj({"uri": _uri(), "blob": Str(strategy=_base64)}, optional)
        return Union(text, blob)

    def embedded_resource(self) -> Obj:
        return self._block("resource", {"resource": self.resource_contents()})

    def resource_link(self) -> Obj:
        base = self._block("resource_link", {"uri": _uri(), "name": _name()})
        return base.extend(
            optional={
                "description": _text(),
                "mimeType": _open("text/plain"),
                "title": _text(),
                "size": Int(0, 2**31),
                **self.icons(),
            }
        )

    def content_block(self) -> Union:
        blocks: list[Spec] = [self.text_content(), self.image_content()]
        if self.at_least("2025-03-26"):
            blocks.append(self.audio_content())
        if self.at_least("2025-06-18"):
            blocks.append(self.resource_link())
        blocks.append(self.embedded_resource())
        return Union(*blocks)

    def sampling_content(self) -> Union:
        blocks: list[Spec] = [self.text_content(), self.image_content()]
        if self.at_least("2025-03-26"):
            blocks.append(self.audio_content())
        return Union(*blocks)

    # Entities ----------------------------------------------------------------------

    def _entity(self, required: dict[str, Spec], optional: dict[str, Spec]) -> Obj:
        extra: dict[str, Spec] = {"description": _text()}
        if self.at_least("2025-06-18"):
            extra["title"] = _text()
            extra["_meta"] = self.meta()
        extra.update(self.icons())
        return Obj(required, {**extra, **optional})

    def tool(self) -> Obj:
        property_schemas = st.dictionaries(
            _names,
            st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "boolean"}]),
            max_size=3,
        )
        # 2026-07-28 leaves everything but "type" to JSON Schema itself.
        typed = [] if self.stateless else ["object"]
        input_schema = Obj(
            {"type": Const("object")},
            {
                "properties": Opaque(property_schemas, typed),
                "required": Opaque(
                    st.lists(_names, max_size=2), [] if self.stateless else ["array"]
                ),
            },
        )
        optional: dict[str, Spec] = {}
        if self.at_least("2025-03-26"):
            optional["annotations"] = Obj(
                {},
                {
                    "title": _text(),
                    "readOnlyHint": Bool(),
                    "destructiveHint": Bool(),
                    "idempotentHint": Bool(),
                    "openWorldHint": Bool(),
                },
            )
        if self.stateless:
            optional["outputSchema"] = Opaque(st.just({"type": "object"}), ["object"])
        elif self.at_least("2025-06-18"):
            optional["outputSchema"] = Obj({"type": Const("object")})
        return self._entity({"name": _name(), "inputSchema": input_schema}, optional)

    def resource(self) -> Obj:
        optional: dict[str, Spec] = {"mimeType": _open("text/plain", "image/png")}
        optional["size"] = Int(0, 2**31)
        optional.update(self.annotations())
        return self._entity({"uri": _uri(), "name": _name()}, optional)

    def resource_template(self) -> Obj:
        optional: dict[str, Spec] = {"mimeType": _open("text/plain"), **self.annotations()}
        template = Str(strategy=_uris.map(lambda u: u + "/{id}"))
        return self._entity({"uriTemplate": template, "name": _name()}, optional)

    def prompt(self) -> Obj:
        argument_optional: dict[str, Spec] = {"description": _text(), "required": Bool()}
        if self.at_least("2025-06-18"):
            argument_optional["title"] = _text()
        argument = Obj({"name": _name()}, argument_optional)
        return self._entity({"name": _name()}, {"arguments": Arr(argument)})

    def prompt_message(self) -> Obj:
        return Obj({"role": Enum("user", "assistant"), "content": self.content_block()})

    def task(self) -> dict[str, Spec]:
        return {
            "taskId": _name(),
            "status": Enum("working", "input_required", "completed", "failed", "cancelled"),
            "createdAt": Str(strategy=_timestamps),
            "lastUpdatedAt": Str(strategy=_timestamps),
            "ttl": Union(Int(0, 10**7), Null()),
        }

    # Params ------------------------------------------------------------------------

    def params(self, required: dict[str, Spec], optional: dict[str, Spec] | None = None) -> Obj:
        """Request params: ``_meta`` is required on every stateless request."""
        optional = dict(optional or {})
        if self.stateless:
            return Obj({"_meta": self.request_meta(), **required}, optional)
        return Obj(required, {"_meta": self.request_meta(), **optional})

    def mrtr(self) -> dict[str, Spec]:
        """The MRTR retry fields of tools/call, prompts/get and resources/read."""
        if not self.stateless:
            return {}
        return {
            "inputResponses": Map(self.input_response(), keys=_names, max_size=2),
            "requestState": _text(),
        }

    def create_message_params(self) -> Obj:
        message_optional: dict[str, Spec] = {}
        if self.at_least("2025-11-25"):
            message_optional["_meta"] = self.meta()
        message = Obj(
            {"role": Enum("user", "assistant"), "content": self.sampling_content()},
            message_optional,
        )
        hint = Obj({}, {"name": _name()})
        preferences = Obj(
            {},
            {
                "hints": Arr(hint, max_size=2),
                "costPriority": Num(0, 1, floor=0, ceil=1),
                "speedPriority": Num(0, 1, floor=0, ceil=1),
                "intelligencePriority": Num(0, 1, floor=0, ceil=1),
            },
        )
        optional: dict[str, Spec] = {
            "systemPrompt": _text(),
            "includeContext": Enum("none", "thisServer", "allServers"),
            "temperature": Num(0, 2),
            "stopSequences": Arr(_text(), max_size=2),
            "metadata": self.json_object(),
            "modelPreferences": preferences,
        }
        if self.at_least("2025-11-25"):
            optional["toolChoice"] = Obj({}, {"mode": Enum("auto", "none", "required")})
        required = {"messages": Arr(message, min_size=1), "maxTokens": Int(1, 100_000)}
        if self.stateless:
            return Obj(required, optional)
        return Obj(required, {"_meta": self.request_meta(), **optional})

    def requested_schema(self) -> Opaque:
        primitive = st.sampled_from(
            [
                {"type": "string"},
                {"type": "string", "format": "email"},
                {"type": "number", "minimum": 0},
                {"type": "integer"},
                {"type": "boolean", "default": False},
                {"type": "string", "enum": ["a", "b"]},
            ]
        )
        schema = st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(_names, primitive, min_size=1, max_size=3),
            }
        ).map(lambda s: {**s, "required": sorted(s["properties"])[:1]})
        return Opaque(schema, ["object"])

    def elicit_params(self) -> Spec:
        form_optional: dict[str, Spec] = {}
        if self.at_least("2025-11-25"):
            form_optional["mode"] = Const("form")
        if not self.stateless and self.at_least("2025-11-25"):
            form_optional["_meta"] = self.request_meta()
        form = Obj({"message": _text(), "requestedSchema": self.requested_schema()}, form_optional)
        if not self.at_least("2025-11-25"):
            return form
        url_required: dict[str, Spec] = {
            "mode": Const("url"),
            "message": _text(),
            "url": Str(strategy=st.just("https://example.com/authorize")),
        }
        if not self.stateless:
            url_required["elicitationId"] = _name()
        return Union(form, Obj(url_required))

    # Client results for server requests / MRTR ---------------------------------------------

    def create_message_result(self) -> Obj:
        optional: dict[str, Spec] = {
            "stopReason": _open("endTurn", "stopSequence", "maxTokens"),
            "_meta": self.meta(),
        }
        return Obj(
            {
                "role": Enum("assistant", "user"),
                "content": self.sampling_content(),
                "model": _name(),
            },
            optional,
        )

    def list_roots_result(self) -> Obj:
        root_optional: dict[str, Spec] = {"name": _name()}
        if self.at_least("2025-06-18"):
            root_optional["_meta"] = self.meta()
        root = Obj(
            {"uri": Str(strategy=st.from_regex(r"file:///[a-z]{1,10}", fullmatch=True))},
            root_optional,
        )
        optional: dict[str, Spec] = {} if self.stateless else {"_meta": self.meta()}
        return Obj({"roots": Arr(root)}, optional)

    def elicit_result(self) -> Obj:
        value = Union(_text(), Int(-1000, 1000), Bool())
        if self.at_least("2025-11-25"):
            value = Union(_text(), Int(-1000, 1000), Bool(), Arr(_text(), max_size=2))
        optional: dict[str, Spec] = {"content": Map(value, keys=_names, max_size=3)}
        if not self.stateless:
            optional["_meta"] = self.meta()
        return Obj({"action": Enum("accept", "decline", "cancel")}, optional)

    def input_response(self) -> Union:
        return Union(self.create_message_result(), self.list_roots_result(), self.elicit_result())

    def input_request(self) -> Union:
        return Union(
            Obj(
                {
                    "method": Const("sampling/createMessage"),
                    "params": self.create_message_params(),
                }
            ),
            Obj({"method": Const("roots/list")}, {"params": Obj()}),
            Obj({"method": Const("elicitation/create"), "params": self.elicit_params()}),
        )


def _request(method: str, params: Spec | None, *, params_required: bool) -> Obj:
    required: dict[str, Spec] = {
        "jsonrpc": Const("2.0"),
        "id": request_id(),
        "method": Const(method),
    }
    optional: dict[str, Spec] = {}
    if params is not None:
        (required if params_required else optional)["params"] = params
    return Obj(required, optional)


def _notification(method: str, params: Spec | None, *, params_required: bool) -> Obj:
    required: dict[str, Spec] = {"jsonrpc": Const("2.0"), "method": Const(method)}
    optional: dict[str, Spec] = {}
    if params is not None:
        (required if params_required else optional)["params"] = params
    return Obj(required, optional)


def _definition_name(method: str) -> str:
    return {
        "initialize": "InitializeRequest",
        "ping": "PingRequest",
        "server/discover": "DiscoverRequest",
        "subscriptions/listen": "SubscriptionsListenRequest",
        "resources/list": "ListResourcesRequest",
        "resources/templates/list": "ListResourceTemplatesRequest",
        "resources/read": "ReadResourceRequest",
        "resources/subscribe": "SubscribeRequest",
        "resources/unsubscribe": "UnsubscribeRequest",
        "prompts/list": "ListPromptsRequest",
        "prompts/get": "GetPromptRequest",
        "tools/list": "ListToolsRequest",
        "tools/call": "CallToolRequest",
        "logging/setLevel": "SetLevelRequest",
        "completion/complete": "CompleteRequest",
        "sampling/createMessage": "CreateMessageRequest",
        "roots/list": "ListRootsRequest",
        "elicitation/create": "ElicitRequest",
        "tasks/get": "GetTaskRequest",
        "tasks/result": "GetTaskPayloadRequest",
        "tasks/cancel": "CancelTaskRequest",
        "tasks/list": "ListTasksRequest",
        "notifications/cancelled": "CancelledNotification",
        "notifications/initialized": "InitializedNotification",
        "notifications/progress": "ProgressNotification",
        "notifications/roots/list_changed": "RootsListChangedNotification",
        "notifications/resources/list_changed": "ResourceListChangedNotification",
        "notifications/resources/updated": "ResourceUpdatedNotification",
        "notifications/prompts/list_changed": "PromptListChangedNotification",
        "notifications/tools/list_changed": "ToolListChangedNotification",
        "notifications/message": "LoggingMessageNotification",
        "notifications/tasks/status": "TaskStatusNotification",
        "notifications/elicitation/complete": "ElicitationCompleteNotification",
        "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    }[method]


def _client_request_params(r: _Rev, method: str) -> tuple[Spec | None, bool]:
    """(params spec, params required) of a client request."""
    cursor: dict[str, Spec] = {"cursor": _text()}
    uri: dict[str, Spec] = {"uri": _uri()}
    if method == "initialize":
        return (
            Obj(
                {
                    "protocolVersion": Const(r.name, closed=False),
                    "capabilities": r.client_capabilities(),
                    "clientInfo": r.implementation(),
                }
            ),
            True,
        )
    if method == "ping":
        return Obj({}, {"_meta": r.request_meta()}), False
    if method == "server/discover":
        return r.params({}), True
    if method == "subscriptions/listen":
        return r.params({"notifications": _notifications_filter()}), True
    if method in ("resources/list", "resources/templates/list", "prompts/list", "tools/list"):
        return r.params({}, cursor), r.stateless
    if method == "tasks/list":
        return r.params({}, cursor), False
    if method == "resources/read":
        return r.params(uri, r.mrtr()), True
    if method in ("resources/subscribe", "resources/unsubscribe"):
        return r.params(uri), True
    if method == "prompts/get":
        return r.params(
            {"name": _name()}, {"arguments": Map(_text(), keys=_names), **r.mrtr()}
        ), True
    if method == "tools/call":
        return (
            r.params(
                {"name": _name()},
                {
                    "arguments": Opaque(
                        st.dictionaries(_names, json_values(4), max_size=3), ["object"]
                    ),
                    **r.mrtr(),
                },
            ),
            True,
        )
    if method == "logging/setLevel":
        return r.params({"level": Enum(*LOG_LEVELS)}), True
    if method == "completion/complete":
        prompt_ref = Obj({"type": Const("ref/prompt"), "name": _name()})
        resource_ref = Obj({"type": Const("ref/resource"), "uri": _uri()})
        optional: dict[str, Spec] = {}
        if r.at_least("2025-06-18"):
            optional["context"] = Obj({}, {"arguments": Map(_text(), keys=_names)})
        return (
            r.params(
                {
                    "ref": Union(prompt_ref, resource_ref),
                    "argument": Obj({"name": _name(), "value": _text()}),
                },
                optional,
            ),
            True,
        )
    if method in ("tasks/get", "tasks/result", "tasks/cancel"):
        return Obj({"taskId": _name()}), True
    raise KeyError(method)


def _server_request_params(r: _Rev, method: str) -> tuple[Spec | None, bool]:
    if method == "ping":
        return Obj({}, {"_meta": r.request_meta()}), False
    if method == "sampling/createMessage":
        return r.create_message_params(), True
    if method == "roots/list":
        return Obj({}, {"_meta": r.request_meta()}), False
    if method == "elicitation/create":
        return r.elicit_params(), True
    if method in ("tasks/get", "tasks/result", "tasks/cancel"):
        return Obj({"taskId": _name()}), True
    if method == "tasks/list":
        return Obj({}, {"cursor": _text()}), False
    raise KeyError(method)


def _notification_params(r: _Rev, method: str) -> tuple[Spec | None, bool]:
    meta = {"_meta": r.notification_meta()}
    if method == "notifications/cancelled":
        if r.name == "2025-11-25":  # optional there (tasks are cancelled otherwise)
            return Obj({}, {"reason": _text(), **meta}, always={"requestId": request_id()}), True
        return Obj({"requestId": request_id()}, {"reason": _text(), **meta}), True
    if method == "notifications/progress":
        optional: dict[str, Spec] = {"total": Num(0, 1000), **meta}
        if r.at_least("2025-03-26"):
            optional["message"] = _text()
        return Obj({"progressToken": request_id(), "progress": Num(0, 1000)}, optional), True
    if method == "notifications/message":
        return (
            Obj(
                {"level": Enum(*LOG_LEVELS), "data": AnyJSON(stateless=r.stateless)},
                {"logger": _name(), **meta},
            ),
            True,
        )
    if method == "notifications/resources/updated":
        return Obj({"uri": _uri()}, meta if r.at_least("2025-11-25") else {}), True
    if method == "notifications/tasks/status":
        return Obj(r.task(), {"statusMessage": _text()}), True
    if method == "notifications/elicitation/complete":
        return Obj({"elicitationId": _name()}), True
    if method == "notifications/subscriptions/acknowledged":
        return Obj({"notifications": _notifications_filter()}, meta), True
    # list_changed, initialized
    return Obj({}, meta), False


def _result(r: _Rev, method: str) -> Obj:
    """The complete (non-error) result object of ``method``."""
    meta = {"_meta": r.result_meta()}
    cursor = {"nextCursor": _text()}
    required: dict[str, Spec]
    optional: dict[str, Spec] = dict(meta)
    if method == "initialize":
        required = {
            "protocolVersion": Const(r.name, closed=False),
            "capabilities": r.server_capabilities(),
            "serverInfo": r.implementation(),
        }
        optional["instructions"] = _text()
    elif method in (
        "ping",
        "resources/subscribe",
        "resources/unsubscribe",
        "logging/setLevel",
        "tasks/result",
    ):
        required = {}
    elif method == "server/discover":
        required = {
            "supportedVersions": Arr(Const(r.name, closed=False), min_size=1, max_size=1),
            "capabilities": r.server_capabilities(),
        }
        optional["instructions"] = _text()
    elif method == "subscriptions/listen":
        required = {
            "_meta": Obj(
                {META_SUBSCRIPTION_ID: request_id()}, {META_SERVER_INFO: r.implementation()}
            )
        }
        optional = {}
    elif method == "tools/list":
        required, optional = {"tools": Arr(r.tool(), max_size=2)}, {**optional, **cursor}
    elif method == "resources/list":
        required, optional = {"resources": Arr(r.resource(), max_size=2)}, {**optional, **cursor}
    elif method == "resources/templates/list":
        required = {"resourceTemplates": Arr(r.resource_template(), max_size=2)}
        optional.update(cursor)
    elif method == "prompts/list":
        required, optional = {"prompts": Arr(r.prompt(), max_size=2)}, {**optional, **cursor}
    elif method == "tasks/list":
        required, optional = {"tasks": Arr(Obj(r.task()), max_size=2)}, {**optional, **cursor}
    elif method == "resources/read":
        required = {"contents": Arr(r.resource_contents(), max_size=2)}
    elif method == "prompts/get":
        required = {"messages": Arr(r.prompt_message(), max_size=2)}
        optional["description"] = _text()
    elif method == "tools/call":
        required = {"content": Arr(r.content_block(), max_size=3)}
        optional["isError"] = Bool()
        if r.stateless:  # 2026-07-28: "any JSON value", no longer only an object
            optional["structuredContent"] = AnyJSON(stateless=True)
        elif r.at_least("2025-06-18"):
            optional["structuredContent"] = r.json_object()
    elif method == "completion/complete":
        completion = Obj(
            {"values": Arr(_text(), max_size=100 if r.stateless else 5)},
            {"total": Int(0, 1000), "hasMore": Bool()},
        )
        required = {"completion": completion}
    elif method in ("tasks/get", "tasks/cancel"):
        required = r.task()
        optional["statusMessage"] = _text()
    elif method == "sampling/createMessage":
        return r.create_message_result()
    elif method == "roots/list":
        return r.list_roots_result()
    elif method == "elicitation/create":
        return r.elicit_result()
    else:
        raise KeyError(method)
    if r.stateless:
        required["resultType"] = Const("complete", closed=False)
        if method in CACHEABLE_METHODS:
            required["ttlMs"] = Int(0, 10**7, floor=0)
            required["cacheScope"] = Enum("public", "private")
    return Obj(required, optional)


def _input_required(r: _Rev) -> Obj:
    # The schema requires only resultType; we always send inputRequests (the
    # spec's "at least one of inputRequests or requestState").
    return Obj(
        {"resultType": Const("input_required", closed=False)},
        {"requestState": _text(), "_meta": r.result_meta()},
        always={"inputRequests": Map(r.input_request(), keys=_names, max_size=2)},
    )


def _error(r: _Rev) -> Obj:
    error = Obj(
        {"code": Int(-32768, 32767), "message": _text()},
        {"data": AnyJSON(stateless=r.stateless)},
    )
    required: dict[str, Spec] = {"jsonrpc": Const("2.0"), "error": error}
    optional: dict[str, Spec] = {}
    (optional if r.at_least("2025-11-25") else required)["id"] = request_id()
    return Obj(required, optional)


@functools.cache
def catalog(revision: str) -> tuple[MessageKind, ...]:
    """Every message kind of ``revision``."""
    info = REVISIONS[revision]
    r = _Rev(revision)
    kinds: list[MessageKind] = []
    requests = (
        ("client", "server", info.client_requests, _client_request_params),
        ("server", "client", info.server_requests, _server_request_params),
    )
    for sender, answerer, methods, request_params in requests:
        for method in sorted(methods):
            params, needed = request_params(r, method)
            kinds.append(
                MessageKind(
                    revision,
                    "request",
                    sender,
                    method,
                    _definition_name(method),
                    _request(method, params, params_required=needed),
                )
            )
            result = _result(r, method)
            kinds.append(
                MessageKind(
                    revision, "result", answerer, method, RESULT_DEFINITIONS[method], result
                )
            )
            if r.stateless and method in MRTR_METHODS:  # client requests only
                kinds.append(
                    MessageKind(
                        revision,
                        "result",
                        answerer,
                        method,
                        "InputRequiredResult",
                        _input_required(r),
                    )
                )
    for sender, methods in (
        ("client", info.client_notifications),
        ("server", info.server_notifications),
    ):
        for method in sorted(methods):
            params, needed = _notification_params(r, method)
            kinds.append(
                MessageKind(
                    revision,
                    "notification",
                    sender,
                    method,
                    _definition_name(method),
                    _notification(method, params, params_required=needed),
                )
            )
    error_definition = "JSONRPCErrorResponse" if r.at_least("2025-11-25") else "JSONRPCError"
    for sender in ("client", "server") if info.server_requests else ("server",):
        kinds.append(MessageKind(revision, "error", sender, None, error_definition, _error(r)))
    return tuple(kinds)


def response_envelope(result: Spec) -> Obj:
    """A whole result response around ``result``."""
    return Obj({"jsonrpc": Const("2.0"), "id": request_id(), "result": result})
