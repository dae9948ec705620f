"""RESP, the Redis protocol, sans-IO: :func:`encode_command` for what goes out and
:class:`RESPParser` for the replies that come back (the Redis store's client in
:mod:`sansio_mcp.runtime` drives them over a TCP stream)."""

from ._ndjson import NEED_DATA
from ._resp import (
    DEFAULT_MAX_ARRAY_LENGTH,
    DEFAULT_MAX_BULK_LENGTH,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_LINE_LENGTH,
    RedisError,
    RESPParser,
    encode_command,
)

__all__ = [
    "DEFAULT_MAX_ARRAY_LENGTH",
    "DEFAULT_MAX_BULK_LENGTH",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_LINE_LENGTH",
    "NEED_DATA",
    "RESPParser",
    "RedisError",
    "encode_command",
]
