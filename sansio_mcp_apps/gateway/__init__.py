"""The aggregating gateway's pure part: configuration, the catalog (names,
overrides, pagination, freshness), connector status and the store, what an
upstream sends fitted to its client's revision, and the sessionless HTTP
machine.  The async part is :mod:`sansio_mcp_apps.gateway.runtime`."""

from ._catalog import (
    DEFAULT_TTL_MS,
    Catalog,
    ConnectorTools,
    apply_overrides,
    list_freshness,
    qualified_name,
    split_tool_name,
)
from ._config import (
    CONNECTOR_NAME,
    DEFAULT_MAX_TOOLS_PER_CONNECTOR,
    TRANSPORTS,
    ConfigError,
    ConnectorConfig,
    GatewayConfig,
    GatewayOAuth,
    ToolOverride,
    VirtualMCP,
    parse_config,
)
from ._fit import fit_input_request, fit_tool_result
from ._oauth import GatewayOAuthRouter, GatewayTokenVerifier
from ._router import Access, GatewayHTTPServer
from ._status import (
    CONNECTOR_TRANSITIONS,
    Backoff,
    ConnectorStatus,
    IllegalConnectorTransition,
    StatusTrigger,
    backoff_delay,
    next_status,
    render_connector_table,
)
from ._store import (
    CatalogView,
    ConnectorRecord,
    GatewayStore,
    MemoryStore,
    catalog_of,
    move,
    status_report,
)
from ._tasks import TaskRoute, TaskRouteLimits, TaskRoutes

__all__ = [
    "CONNECTOR_NAME",
    "CONNECTOR_TRANSITIONS",
    "DEFAULT_MAX_TOOLS_PER_CONNECTOR",
    "DEFAULT_TTL_MS",
    "TRANSPORTS",
    "Access",
    "Backoff",
    "Catalog",
    "CatalogView",
    "ConfigError",
    "ConnectorConfig",
    "ConnectorRecord",
    "ConnectorStatus",
    "ConnectorTools",
    "GatewayConfig",
    "GatewayHTTPServer",
    "GatewayOAuth",
    "GatewayOAuthRouter",
    "GatewayTokenVerifier",
    "GatewayStore",
    "IllegalConnectorTransition",
    "MemoryStore",
    "StatusTrigger",
    "TaskRoute",
    "TaskRouteLimits",
    "TaskRoutes",
    "ToolOverride",
    "VirtualMCP",
    "apply_overrides",
    "backoff_delay",
    "catalog_of",
    "fit_input_request",
    "fit_tool_result",
    "list_freshness",
    "move",
    "next_status",
    "parse_config",
    "qualified_name",
    "render_connector_table",
    "split_tool_name",
    "status_report",
]
