"""The aggregating gateway's async part (see :mod:`sansio_mcp_apps.gateway` for the pure one)."""

from ._gateway import Gateway, transport_opener
from ._parked import ParkingLimits, ParkingLot
from ._record import CallRecord, CallRecorder
from ._replicas import (
    MemoryParkedCallOwners,
    ParkedCallOwners,
    RedisParkedCallOwners,
    ReplicaLink,
    parked_call_owners,
)
from ._server import META_MISSING_CONNECTORS, GatewayServer
from ._upstream import ConnectorUnavailable, Opener, Upstream, UpstreamSettings

__all__ = [
    "META_MISSING_CONNECTORS",
    "CallRecord",
    "CallRecorder",
    "ConnectorUnavailable",
    "Gateway",
    "GatewayServer",
    "MemoryParkedCallOwners",
    "Opener",
    "ParkedCallOwners",
    "ParkingLimits",
    "ParkingLot",
    "RedisParkedCallOwners",
    "ReplicaLink",
    "Upstream",
    "UpstreamSettings",
    "parked_call_owners",
    "transport_opener",
]
