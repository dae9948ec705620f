"""JSON-RPC 2.0 messages as MCP uses them: classify, validate, serialize."""

from __future__ import annotations

from typing import Any, TypeAlias, TypeGuard

import attrs

from ._errors import ErrorCode, MCPError, RemoteProtocolError
from ._json import json_type

__all__ = [
    "RequestId",
    "JSONRPCRequest",
    "JSONRPCNotification",
    "JSONRPCResponse",
    "JSONRPCError",
    "JSONRPCMessage",
    "parse_message",
    "message_to_obj",
    "is_request_id",
    "request_id_problem",
]

RequestId: TypeAlias = str | int


def is_request_id(value: object) -> TypeGuard[RequestId]:
    """A string or an integer (and never a bool, which Python calls an int)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_id_problem(message: dict[str, Any]) -> str | None:
    """Why a message with a method carries an id no request may have (None: it does not).

    Such a message is neither a request (its id is not one) nor a notification (it has
    an id), and is answered -32600 with a null id.
    """
    if "method" not in message or "id" not in message or is_request_id(message["id"]):
        return None
    raw_id = message["id"]
    what = "null" if raw_id is None else _json_type(raw_id)
    return f"a request id must be a string or an integer, not {what}"


@attrs.frozen
class JSONRPCRequest:
    """A request: it expects exactly one response with the same ``id``."""

    id: RequestId
    method: str
    params: dict[str, Any] | None = None


@attrs.frozen
class JSONRPCNotification:
    """A one-way message; it is never answered."""

    method: str
    params: dict[str, Any] | None = None


@attrs.frozen
class JSONRPCResponse:
    """A successful response."""

    id: RequestId
    result: dict[str, Any]


@attrs.frozen
class JSONRPCError:
    """An error response; ``id`` is ``None`` when the request's id could not be read."""

    id: RequestId | None
    error: MCPError = attrs.field(eq=False)

    @property
    def code(self) -> int:
        return self.error.code


JSONRPCMessage: TypeAlias = JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError

# parse_message builds messages by setting their slots directly: the same
# frozen objects attrs' __init__ makes (these classes have no validators or
# converters), at about half the cost, which shows on every message received.
_new = object.__new__
_set = {
    (cls, name): getattr(cls, name).__set__
    for cls in (JSONRPCRequest, JSONRPCNotification, JSONRPCResponse)
    for name in attrs.fields_dict(cls)
}
_set_request_id = _set[JSONRPCRequest, "id"]
_set_request_method = _set[JSONRPCRequest, "method"]
_set_request_params = _set[JSONRPCRequest, "params"]
_set_notification_method = _set[JSONRPCNotification, "method"]
_set_notification_params = _set[JSONRPCNotification, "params"]
_set_response_id = _set[JSONRPCResponse, "id"]
_set_response_result = _set[JSONRPCResponse, "result"]


def _request(request_id: RequestId, method: str, params: dict[str, Any] | None) -> JSONRPCRequest:
    message: JSONRPCRequest = _new(JSONRPCRequest)
    _set_request_id(message, request_id)
    _set_request_method(message, method)
    _set_request_params(message, params)
    return message


def _notification(method: str, params: dict[str, Any] | None) -> JSONRPCNotification:
    message: JSONRPCNotification = _new(JSONRPCNotification)
    _set_notification_method(message, method)
    _set_notification_params(message, params)
    return message


def _response(request_id: RequestId, result: dict[str, Any]) -> JSONRPCResponse:
    message: JSONRPCResponse = _new(JSONRPCResponse)
    _set_response_id(message, request_id)
    _set_response_result(message, result)
    return message


def _invalid(
    message: str,
    *,
    request_id: RequestId | None = None,
    answer: bool = True,
    code: int = ErrorCode.INVALID_REQUEST,
) -> RemoteProtocolError:
    error = RemoteProtocolError(message, code=code, request_id=request_id)
    error.answer = answer
    return error


def parse_message(obj: Any) -> JSONRPCMessage:
    """Classify one decoded JSON value as a JSON-RPC message.

    Raises :class:`RemoteProtocolError`; its ``answer`` attribute says whether
    the peer should get an error response (never for notifications or
    response-like messages, so two peers cannot bounce errors forever), and
    ``request_id`` says where to address it.
    """
    # Well-formed requests, notifications and results, as parsed JSON gives
    # them, are recognized here at once; everything else (errors, and every
    # malformed message, with its precise complaint) takes the full path below.
    if type(obj) is dict and obj.get("jsonrpc") == "2.0" and "error" not in obj:
        method = obj.get("method")
        if type(method) is str:
            if "result" not in obj:
                params = obj.get("params")
                if type(params) is dict or "params" not in obj:
                    if "id" not in obj:
                        return _notification(method, params)
                    raw_id = obj["id"]
                    if type(raw_id) is str or type(raw_id) is int:
                        return _request(raw_id, method, params)
        elif method is None and "method" not in obj:
            result = obj.get("result")
            raw_id = obj.get("id")
            if type(result) is dict and (type(raw_id) is str or type(raw_id) is int):
                return _response(raw_id, result)
    return _parse_fully(obj)


def _parse_fully(obj: Any) -> JSONRPCMessage:
    if not isinstance(obj, dict):
        raise _invalid(f"a JSON-RPC message must be an object, not {_json_type(obj)}")
    method = obj.get("method")
    has_id = "id" in obj
    raw_id = obj.get("id")
    if "method" in obj:
        request_id = raw_id if is_request_id(raw_id) else None
        answer = has_id
        if obj.get("jsonrpc") != "2.0":
            raise _invalid('"jsonrpc" must be "2.0"', request_id=request_id, answer=answer)
        if not isinstance(method, str):
            raise _invalid('"method" must be a string', request_id=request_id, answer=answer)
        problem = request_id_problem(obj)
        if problem is not None:
            raise _invalid(problem)
        if "result" in obj or "error" in obj:
            raise _invalid(
                'a request must not carry "result" or "error"', request_id=request_id, answer=answer
            )
        params = obj.get("params")
        if "params" in obj and not isinstance(params, dict):
            raise _invalid(
                f'"params" must be an object, not {_json_type(params)}',
                request_id=request_id,
                answer=answer,
                code=ErrorCode.INVALID_PARAMS,
            )
        if request_id is not None:
            return JSONRPCRequest(request_id, method, params)
        return JSONRPCNotification(method, params)

    # A response (or garbage): never answered.
    response_id = raw_id if is_request_id(raw_id) else None
    if "result" not in obj and "error" not in obj:
        # Neither a request nor a response: JSON-RPC says answer with a null id.
        raise _invalid('a message needs "method", "result" or "error"', request_id=response_id)
    if obj.get("jsonrpc") != "2.0":
        raise _invalid('"jsonrpc" must be "2.0"', request_id=response_id, answer=False)
    if "result" in obj and "error" in obj:
        raise _invalid(
            'a response must not carry both "result" and "error"',
            request_id=response_id,
            answer=False,
        )
    if "result" in obj:
        if response_id is None:
            raise _invalid("a result response needs a string or integer id", answer=False)
        result = obj["result"]
        if not isinstance(result, dict):
            raise _invalid(
                f'"result" must be an object, not {_json_type(result)}',
                request_id=response_id,
                answer=False,
            )
        return JSONRPCResponse(response_id, result)
    error = obj["error"]
    if has_id and raw_id is not None and not is_request_id(raw_id):
        raise _invalid("an error response id must be a string, an integer or null", answer=False)
    if not isinstance(error, dict):
        raise _invalid('"error" must be an object', request_id=response_id, answer=False)
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise _invalid('"error.code" must be an integer', request_id=response_id, answer=False)
    message = error.get("message")
    if not isinstance(message, str):
        raise _invalid('"error.message" must be a string', request_id=response_id, answer=False)
    return JSONRPCError(response_id, MCPError(code, message, error.get("data")))


def message_to_obj(message: JSONRPCMessage, *, null_error_id: bool = True) -> dict[str, Any]:
    """The JSON object for ``message``.

    An error with no id is written with ``"id": null`` (JSON-RPC 2.0), or with
    no ``id`` at all when ``null_error_id`` is false (allowed from 2025-11-25).
    """
    if isinstance(message, JSONRPCRequest):
        obj: dict[str, Any] = {"jsonrpc": "2.0", "id": message.id, "method": message.method}
        if message.params is not None:
            obj["params"] = message.params
        return obj
    if isinstance(message, JSONRPCResponse):
        return {"jsonrpc": "2.0", "id": message.id, "result": message.result}
    if isinstance(message, JSONRPCNotification):
        obj = {"jsonrpc": "2.0", "method": message.method}
        if message.params is not None:
            obj["params"] = message.params
        return obj
    obj = {"jsonrpc": "2.0"}
    if message.id is not None or null_error_id:
        obj["id"] = message.id
    obj["error"] = message.error.to_dict()
    return obj


_PHRASES = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "a number",
    "number": "a number",
    "string": "a string",
    "array": "an array",
}


def _json_type(value: object) -> str:
    """The type of a JSON value as an error message phrases it ("a string")."""
    return _PHRASES.get(json_type(value), "an object")
