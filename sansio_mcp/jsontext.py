"""JSON text in and out, as the library reads and writes it: limits checked before
the parser runs, non-finite numbers refused, orjson used when installed (with the
stdlib's results).  Applications that frame MCP-shaped JSON of their own use these."""

from ._json import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_MESSAGE_SIZE,
    dumps,
    encode,
    json_type,
    loads,
    stdlib_dumps,
    stdlib_loads,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "dumps",
    "encode",
    "json_type",
    "loads",
    "stdlib_dumps",
    "stdlib_loads",
]
