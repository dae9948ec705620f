"""The official MCP JSON schemas, per revision, as validators.

The schema files are not shipped with the package: they are read from
``<dir>/<revision>/schema.json`` where ``dir`` is the ``schema_dir`` given,
else ``$MCP_SCHEMA_DIR``, else ``../shared/mcp-schema`` beside the project
checkout.  :func:`find_schema_dir` says where (or None).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

__all__ = [
    "OfficialSchema",
    "find_schema_dir",
    "load_schema",
    "RESULT_DEFINITIONS",
]

#: Result definition per request method (the same name in every revision that has it);
#: the message catalogue (``_catalog``) names its results from here too.
RESULT_DEFINITIONS: dict[str, str] = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "server/discover": "DiscoverResult",
    "subscriptions/listen": "SubscriptionsListenResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "logging/setLevel": "EmptyResult",
    "completion/complete": "CompleteResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
    "elicitation/create": "ElicitResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/cancel": "CancelTaskResult",
    "tasks/list": "ListTasksResult",
}


def find_schema_dir(schema_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder holding ``<revision>/schema.json`` files, or None if none is found."""
    candidates: list[Path] = []
    if schema_dir is not None:
        candidates.append(Path(schema_dir))
    if os.environ.get("MCP_SCHEMA_DIR"):
        candidates.append(Path(os.environ["MCP_SCHEMA_DIR"]))
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "mcp-schema")
    candidates.append(Path.cwd().parent / "shared" / "mcp-schema")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return None


class OfficialSchema:
    """One revision's schema with cached validators for its named definitions."""

    def __init__(self, revision: str, path: Path) -> None:
        self.revision = revision
        self.path = path
        self.document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        self.defs_key = "$defs" if "$defs" in self.document else "definitions"
        self.defs: dict[str, Any] = self.document[self.defs_key]
        self.uri = f"urn:mcp-schema:{revision}"
        self.registry: Registry[Any] = Registry().with_resource(
            self.uri, Resource.from_contents(self.document)
        )
        self.validator_class = jsonschema.validators.validator_for(self.document)
        self._validators: dict[str, Any] = {}
        #: method -> request/notification definition
        self.method_defs: dict[str, str] = {}
        for name, definition in self.defs.items():
            method = definition.get("properties", {}).get("method", {}).get("const")
            if method is not None and (name.endswith("Request") or name.endswith("Notification")):
                self.method_defs[method] = name

    def validator(self, name: str) -> Any:
        if name not in self._validators:
            if name not in self.defs:
                raise KeyError(f"{self.revision} has no definition {name}")
            ref = {"$ref": f"{self.uri}#/{self.defs_key}/{name}"}
            self._validators[name] = self.validator_class(ref, registry=self.registry)
        return self._validators[name]

    def errors(self, name: str, instance: Any, limit: int = 3) -> list[str]:
        """Messages of the first ``limit`` validation errors (empty: valid)."""
        found = []
        for error in self.validator(name).iter_errors(instance):
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            found.append(f"{name} at {where}: {error.message[:240]}")
            if len(found) >= limit:
                break
        return found

    def is_valid(self, name: str, instance: Any) -> bool:
        return bool(self.validator(name).is_valid(instance))

    @property
    def error_definition(self) -> str:
        return "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in self.defs else "JSONRPCError"

    def message_problems(
        self, message: Any, *, sender: str, request_method: str | None = None
    ) -> list[str]:
        """Why ``message`` (sent by ``sender``) is not valid at this revision (empty: valid).

        ``request_method`` names the request a result answers, so the result is
        checked against its own definition too.
        """
        if isinstance(message, list):
            problems: list[str] = []
            for item in message:
                problems.extend(self.message_problems(item, sender=sender))
            return problems
        if isinstance(message, dict) and "error" in message and message.get("id", 0) is None:
            # JSON-RPC 2.0 answers an unidentifiable message with "id": null, which
            # the MCP schemas lack (from 2025-11-25 the id may be left out instead):
            # accepted, and the rest of the message is checked.
            message = {k: v for k, v in message.items() if k != "id"}
            if self.error_definition == "JSONRPCError":
                message["id"] = 0
        problems = self.errors("JSONRPCMessage", message)
        if problems or not isinstance(message, dict):
            return problems
        method = message.get("method")
        if isinstance(method, str):
            definition = self.method_defs.get(method)
            if definition is None:
                return [f"{method!r} is not a method of revision {self.revision}"]
            envelope = "JSONRPCRequest" if "id" in message else "JSONRPCNotification"
            problems.extend(self.errors(envelope, message))
            problems.extend(self.errors(definition, message))
            union = ("Server" if sender == "server" else "Client") + (
                "Request" if "id" in message else "Notification"
            )
            if union in self.defs and not problems:
                problems.extend(self.errors(union, message))
            return problems
        if "error" in message:
            return self.errors(self.error_definition, message)
        if "result" in message and request_method is not None:
            result = message["result"]
            definition = RESULT_DEFINITIONS.get(request_method)
            if (
                isinstance(result, dict)
                and result.get("resultType") == "input_required"
                and "InputRequiredResult" in self.defs
            ):
                definition = "InputRequiredResult"
            if definition is not None and definition in self.defs:
                problems.extend(self.errors(definition, result))
        return problems


@functools.cache
def _load(revision: str, directory: str) -> OfficialSchema | None:
    path = Path(directory) / revision / "schema.json"
    if not path.is_file():
        return None
    return OfficialSchema(revision, path)


def load_schema(
    revision: str, schema_dir: str | os.PathLike[str] | None = None
) -> OfficialSchema | None:
    """The official schema of ``revision``, or None when it cannot be found."""
    directory = find_schema_dir(schema_dir)
    if directory is None:
        return None
    return _load(revision, str(directory))
