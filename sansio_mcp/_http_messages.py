"""What an HTTP/1.1 connection hands its user: whole requests, response heads,
and how a connection ended or broke.  Both engines of :mod:`._http` (the fast
path of :mod:`._http_fast`, and h11) produce these same values."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ._ndjson import NEED_DATA

__all__ = [
    "ClientEvent",
    "ConnectionEnded",
    "HTTPError",
    "HTTPRequest",
    "HTTPResponseHead",
    "ServerEvent",
]


@attrs.frozen
class HTTPRequest:
    method: str
    target: str
    headers: Mapping[str, str]
    body: bytes = b""

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""


@attrs.frozen
class HTTPResponseHead:
    status: int
    headers: Mapping[str, str]


@attrs.frozen
class HTTPError:
    """The peer broke HTTP; ``status`` is what a server should answer (if it still can)."""

    status: int
    reason: str


@attrs.frozen
class ConnectionEnded:
    """The peer closed the connection cleanly."""


#: What a server connection's ``next_request`` gives.
ServerEvent = HTTPRequest | HTTPError | ConnectionEnded | type[NEED_DATA]
#: What a client connection's ``next_event`` gives: the response head, then body
#: chunks (bytes), then None at its end.
ClientEvent = HTTPResponseHead | bytes | ConnectionEnded | HTTPError | type[NEED_DATA] | None
