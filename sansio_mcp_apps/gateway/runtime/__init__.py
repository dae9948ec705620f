"""The aggregating gateway's async part (see :mod:`sansio_mcp_apps.gateway` for the pure one)."""

from ._gateway import Gateway, transport_opener
from ._record import CallRecord, CallRecorder
from ._server import META_MISSING_CONNECTORS, GatewayServer
from ._upstream import ConnectorUnavailable, Opener, Upstream, UpstreamSettings

__all__ = [
    "META_MISSING_CONNECTORS",
    "CallRecord",
    "CallRecorder",
    "ConnectorUnavailable",
    "Gateway",
    "GatewayServer",
    "Opener",
    "Upstream",
    "UpstreamSettings",
    "transport_opener",
]
