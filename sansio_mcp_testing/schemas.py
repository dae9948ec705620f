"""The official MCP JSON schemas, per revision, as validators.

The schema files are not shipped with the package (``sansio-mcp schemas fetch``
downloads them, pinned and checked, into the user's cache). Each revision's
``<dir>/<revision>/schema.json`` is looked for in, in order: the ``schema_dir``
given, ``$MCP_SCHEMA_DIR``, the cache (:func:`user_cache_dir`), then
``../shared/mcp-schema`` beside the project checkout. :func:`find_schema` says
where one revision's schema is (or None), :func:`schema_search_path` lists the
places.  Finding the files needs nothing beyond the library (``sansio-mcp schemas
where`` works without the ``testing`` extra); validating needs jsonschema.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from referencing import Registry

__all__ = [
    "FETCH_COMMAND",
    "OfficialSchema",
    "SCHEMA_NAMES",
    "find_schema",
    "find_schema_dir",
    "load_schema",
    "missing_schema_message",
    "schema_search_path",
    "user_cache_dir",
    "RESULT_DEFINITIONS",
]

#: Every schema the project knows: the revisions, the spec's draft, the tasks extension.
SCHEMA_NAMES = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "draft",
    "ext-tasks/draft",
)

#: What a user runs to get the schemas (said wherever one is missing).
FETCH_COMMAND = "sansio-mcp schemas fetch"

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


def user_cache_dir() -> Path:
    """Where ``sansio-mcp schemas fetch`` stores the schemas by default.

    ``$XDG_CACHE_HOME/sansio-mcp/mcp-schema`` (``~/.cache`` when unset); on macOS
    ``~/Library/Caches``, on Windows ``%LOCALAPPDATA%``.
    """
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sansio-mcp" / "mcp-schema"


def schema_search_path(
    schema_dir: str | os.PathLike[str] | None = None,
) -> list[tuple[str, Path]]:
    """The folders searched for schemas, in order, each with where it comes from."""
    places: list[tuple[str, Path]] = []
    if schema_dir is not None:
        places.append(("--schema-dir", Path(schema_dir)))
    if os.environ.get("MCP_SCHEMA_DIR"):
        places.append(("$MCP_SCHEMA_DIR", Path(os.environ["MCP_SCHEMA_DIR"])))
    places.append(("cache", user_cache_dir()))
    beside = Path(__file__).resolve().parents[2] / "shared" / "mcp-schema"
    places.append(("../shared/mcp-schema", beside))
    from_cwd = Path.cwd().parent / "shared" / "mcp-schema"
    if from_cwd.resolve() != beside.resolve():
        places.append(("../shared/mcp-schema", from_cwd))
    return places


def find_schema(name: str, schema_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The first ``<dir>/<name>/schema.json`` along :func:`schema_search_path`, or None."""
    for _, directory in schema_search_path(schema_dir):
        path = directory / name / "schema.json"
        if path.is_file():
            return path.resolve()
    return None


def missing_schema_message(name: str) -> str:
    """Why schema ``name`` is not used, and the command that fixes it."""
    return (
        f"the official {name} schema was not found (--schema-dir, $MCP_SCHEMA_DIR, "
        f"{user_cache_dir()}): run `{FETCH_COMMAND}`"
    )


def find_schema_dir(schema_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The first folder on the search path that holds any schema, or None."""
    for _, directory in schema_search_path(schema_dir):
        if any((directory / name / "schema.json").is_file() for name in SCHEMA_NAMES):
            return directory.resolve()
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
        # Imported here: finding schemas (``schemas where``) must not need the extra.
        import jsonschema
        from referencing import Registry, Resource

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

    @functools.cached_property
    def content_types(self) -> frozenset[str]:
        """The ``type`` of every content block a tool result may hold."""
        items = self.defs["CallToolResult"]["properties"]["content"]["items"]
        found: set[str] = set()
        pending = [items]
        while pending:
            node = pending.pop()
            if "$ref" in node:
                pending.append(self.defs[node["$ref"].rsplit("/", 1)[-1]])
            pending.extend(node.get("anyOf", []) + node.get("oneOf", []))
            const = node.get("properties", {}).get("type", {}).get("const")
            if isinstance(const, str):
                found.add(const)
        return frozenset(found)

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
def _load(revision: str, path: Path) -> OfficialSchema:
    return OfficialSchema(revision, path)


def load_schema(
    revision: str, schema_dir: str | os.PathLike[str] | None = None
) -> OfficialSchema | None:
    """The official schema of ``revision``, or None when it cannot be found."""
    path = find_schema(revision, schema_dir)
    if path is None:
        return None
    return _load(revision, path)
