"""The protocol revision registry: what each revision defines and gates.

Every revision-dependent decision in the library reads this table instead of
comparing version strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

import attrs

__all__ = [
    "Era",
    "ERA_STATELESS",
    "Revision",
    "REVISIONS",
    "HANDSHAKE_REVISIONS",
    "STATELESS_REVISIONS",
    "MODERN_REVISIONS",
    "ALL_REVISIONS",
    "LATEST_HANDSHAKE_REVISION",
    "LATEST_STATELESS_REVISION",
    "LATEST_MODERN_REVISION",
    "MRTR_METHODS",
    "CACHEABLE_METHODS",
    "INPUT_REQUEST_CAPABILITIES",
    "META_PROTOCOL_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SUBSCRIPTION_ID",
    "META_SERVER_INFO",
    "get_revision",
    "CLIENT_REQUEST_GATES",
    "SERVER_REQUEST_GATES",
    "SERVER_NOTIFICATION_GATES",
    "CLIENT_NOTIFICATION_GATES",
]


class Era(Enum):
    """A revision's era.  ``LEGACY`` and ``MODERN`` are deprecated aliases of
    ``HANDSHAKE`` and ``STATELESS`` (the same members)."""

    HANDSHAKE = "handshake"  # the initialize handshake (2024-11-05 … 2025-11-25)
    STATELESS = "stateless"  # stateless, per-request _meta (2026-07-28 …)
    LEGACY = "handshake"
    MODERN = "stateless"

    @classmethod
    def _missing_(cls, value: object) -> Era | None:
        # The values before the rename: Era("legacy") still finds the handshake era.
        return {"legacy": cls.HANDSHAKE, "modern": cls.STATELESS}.get(str(value))


#: ``Era.STATELESS`` for the code that runs for every message (see ``_state.STATE_CLOSED``).
ERA_STATELESS = Era.STATELESS


@attrs.frozen
class Revision:
    """What one protocol revision allows."""

    name: str
    era: Era
    batching: bool
    error_id_optional: bool
    client_requests: frozenset[str]
    server_requests: frozenset[str]
    client_notifications: frozenset[str]
    server_notifications: frozenset[str]
    client_capabilities: frozenset[str]
    server_capabilities: frozenset[str]
    implementation_fields: frozenset[str]
    completion_gated: bool
    #: The content block types its messages may carry.
    content_types: frozenset[str]
    #: The modes a server may elicit in (none: no elicitation at all).
    elicitation_modes: frozenset[str]
    #: Whether a form may ask for several choices (an array field: a multi-select).
    multi_select_elicitation: bool
    #: Whether sampling may offer tools: ``tools``/``toolChoice``, ``tool_use`` and
    #: ``tool_result`` blocks, and a message content that is a list of blocks.
    sampling_tools: bool

    def __str__(self) -> str:
        return self.name

    def __lt__(self, other: Revision) -> bool:
        return self.name < other.name


_BASE_CLIENT_REQUESTS = frozenset(
    {
        "initialize",
        "ping",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "tools/list",
        "tools/call",
        "logging/setLevel",
        "completion/complete",
    }
)
_BASE_SERVER_REQUESTS = frozenset({"ping", "sampling/createMessage", "roots/list"})
_BASE_CLIENT_NOTIFICATIONS = frozenset(
    {
        "notifications/cancelled",
        "notifications/initialized",
        "notifications/progress",
        "notifications/roots/list_changed",
    }
)
_BASE_SERVER_NOTIFICATIONS = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
        "notifications/tools/list_changed",
        "notifications/message",
    }
)
_TASK_REQUESTS = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"})
_BASE_CLIENT_CAPS = frozenset({"experimental", "roots", "sampling"})
_BASE_SERVER_CAPS = frozenset({"experimental", "logging", "prompts", "resources", "tools"})
_IMPL_2024 = frozenset({"name", "version"})
_CONTENT_2024 = frozenset({"text", "image", "resource"})
_ALL_CONTENT = _CONTENT_2024 | {"audio", "resource_link"}
_ALL_ELICITATION_MODES = frozenset({"form", "url"})

_R_2024_11_05 = Revision(
    name="2024-11-05",
    era=Era.HANDSHAKE,
    batching=False,
    error_id_optional=False,
    client_requests=_BASE_CLIENT_REQUESTS,
    server_requests=_BASE_SERVER_REQUESTS,
    client_notifications=_BASE_CLIENT_NOTIFICATIONS,
    server_notifications=_BASE_SERVER_NOTIFICATIONS,
    client_capabilities=_BASE_CLIENT_CAPS,
    server_capabilities=_BASE_SERVER_CAPS,
    implementation_fields=_IMPL_2024,
    completion_gated=False,
    content_types=_CONTENT_2024,
    elicitation_modes=frozenset(),
    multi_select_elicitation=False,
    sampling_tools=False,
)
_R_2025_03_26 = attrs.evolve(
    _R_2024_11_05,
    name="2025-03-26",
    batching=True,
    server_capabilities=_BASE_SERVER_CAPS | {"completions"},
    completion_gated=True,
    content_types=_CONTENT_2024 | {"audio"},
)
_R_2025_06_18 = attrs.evolve(
    _R_2025_03_26,
    name="2025-06-18",
    batching=False,
    server_requests=_BASE_SERVER_REQUESTS | {"elicitation/create"},
    client_capabilities=_BASE_CLIENT_CAPS | {"elicitation"},
    implementation_fields=_IMPL_2024 | {"title"},
    content_types=_ALL_CONTENT,
    elicitation_modes=frozenset({"form"}),
)
_R_2025_11_25 = attrs.evolve(
    _R_2025_06_18,
    name="2025-11-25",
    error_id_optional=True,
    client_requests=_BASE_CLIENT_REQUESTS | _TASK_REQUESTS,
    server_requests=_R_2025_06_18.server_requests | _TASK_REQUESTS,
    client_notifications=_BASE_CLIENT_NOTIFICATIONS | {"notifications/tasks/status"},
    server_notifications=_BASE_SERVER_NOTIFICATIONS
    | {"notifications/tasks/status", "notifications/elicitation/complete"},
    client_capabilities=_R_2025_06_18.client_capabilities | {"tasks"},
    server_capabilities=_R_2025_06_18.server_capabilities | {"tasks"},
    implementation_fields=_IMPL_2024 | {"title", "description", "icons", "websiteUrl"},
    elicitation_modes=_ALL_ELICITATION_MODES,
    multi_select_elicitation=True,
    sampling_tools=True,
)

_R_2026_07_28 = Revision(
    name="2026-07-28",
    era=Era.STATELESS,
    batching=False,
    error_id_optional=True,
    client_requests=frozenset(
        {
            "server/discover",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "subscriptions/listen",
            "prompts/list",
            "prompts/get",
            "tools/list",
            "tools/call",
            "completion/complete",
        }
    ),
    # Servers never send requests in this revision; input reaches them through MRTR.
    server_requests=frozenset(),
    client_notifications=frozenset({"notifications/cancelled"}),
    server_notifications=frozenset(
        {
            "notifications/cancelled",
            "notifications/progress",
            "notifications/message",
            "notifications/resources/list_changed",
            "notifications/resources/updated",
            "notifications/prompts/list_changed",
            "notifications/tools/list_changed",
            "notifications/subscriptions/acknowledged",
        }
    ),
    client_capabilities=frozenset(
        {"experimental", "roots", "sampling", "elicitation", "extensions"}
    ),
    server_capabilities=frozenset(
        {"experimental", "logging", "completions", "prompts", "resources", "tools", "extensions"}
    ),
    implementation_fields=_IMPL_2024 | {"title", "description", "icons", "websiteUrl"},
    completion_gated=True,
    content_types=_ALL_CONTENT,
    elicitation_modes=_ALL_ELICITATION_MODES,
    multi_select_elicitation=True,
    sampling_tools=True,
)

REVISIONS: Mapping[str, Revision] = {
    r.name: r for r in (_R_2024_11_05, _R_2025_03_26, _R_2025_06_18, _R_2025_11_25, _R_2026_07_28)
}
#: Revisions that use the initialize handshake, oldest first.
HANDSHAKE_REVISIONS: tuple[str, ...] = tuple(
    name for name, r in REVISIONS.items() if r.era is Era.HANDSHAKE
)
#: Stateless revisions (per-request ``_meta``), oldest first.
STATELESS_REVISIONS: tuple[str, ...] = tuple(
    name for name, r in REVISIONS.items() if r.era is Era.STATELESS
)
ALL_REVISIONS: tuple[str, ...] = tuple(REVISIONS)
LATEST_HANDSHAKE_REVISION = HANDSHAKE_REVISIONS[-1]
LATEST_STATELESS_REVISION = STATELESS_REVISIONS[-1]
#: Deprecated names of :data:`STATELESS_REVISIONS` and :data:`LATEST_STATELESS_REVISION`
#: (the stateless era was once called "modern").
MODERN_REVISIONS = STATELESS_REVISIONS
LATEST_MODERN_REVISION = LATEST_STATELESS_REVISION

#: Methods whose stateless results may be ``input_required`` (MRTR).
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Methods whose stateless complete results carry ``ttlMs`` / ``cacheScope``.
CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
#: Capability each kind of MRTR input request needs from the client.
INPUT_REQUEST_CAPABILITIES: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

# Reserved _meta keys of the stateless revision.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def get_revision(name: str) -> Revision:
    """The :class:`Revision` called ``name``; ``KeyError`` if unknown."""
    return REVISIONS[name]


# 2025-11-25's tasks/* requests, which either side may serve.
_TASK_GATES: Mapping[str, tuple[str, ...]] = {
    "tasks/get": ("tasks",),
    "tasks/result": ("tasks",),
    "tasks/list": ("tasks", "list"),
    "tasks/cancel": ("tasks", "cancel"),
}
# method -> capability path that the *receiving* side must have advertised.
CLIENT_REQUEST_GATES: Mapping[str, tuple[str, ...]] = {
    "resources/list": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/read": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts",),
    "prompts/get": ("prompts",),
    "tools/list": ("tools",),
    "tools/call": ("tools",),
    "logging/setLevel": ("logging",),
    "completion/complete": ("completions",),
    **_TASK_GATES,
}
SERVER_REQUEST_GATES: Mapping[str, tuple[str, ...]] = {
    "sampling/createMessage": ("sampling",),
    "roots/list": ("roots",),
    "elicitation/create": ("elicitation",),
    **_TASK_GATES,
}
# method -> capability path that the *sending* side must have advertised.
SERVER_NOTIFICATION_GATES: Mapping[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools", "listChanged"),
    "notifications/prompts/list_changed": ("prompts", "listChanged"),
    "notifications/resources/list_changed": ("resources", "listChanged"),
    "notifications/resources/updated": ("resources", "subscribe"),
    "notifications/message": ("logging",),
}
CLIENT_NOTIFICATION_GATES: Mapping[str, tuple[str, ...]] = {
    "notifications/roots/list_changed": ("roots", "listChanged"),
}
