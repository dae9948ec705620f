"""The HTTP client's keep-alive connections: which idle connection a request
may take, and which connection is kept afterwards.  Pure bookkeeping; the
adapter opens and closes the streams."""

from __future__ import annotations

from typing import Generic, TypeVar

from ._http import DEFAULT_MAX_HEADERS, HTTPClientConnection

__all__ = ["ConnectionPool", "PooledConnection"]

S = TypeVar("S")


class PooledConnection(Generic[S]):
    """An adapter's byte stream ``S`` and the HTTP state of the connection it carries."""

    def __init__(self, origin: str, stream: S, http: HTTPClientConnection) -> None:
        self.origin = origin
        self.stream = stream
        self.http = http


class ConnectionPool(Generic[S]):
    """A client's idle keep-alive connections, by origin.

    A request takes an idle connection (the most recently used, the one a
    server is least likely to have closed) or the adapter opens a fresh one;
    afterwards :meth:`release` keeps the connection only if its exchange
    ended cleanly and the server allows reuse.  Requests in flight never
    share a connection: one whose answer is still streaming is not idle.
    """

    def __init__(
        self,
        *,
        max_idle: int = 4,
        max_headers: int = DEFAULT_MAX_HEADERS,
        fast_path: bool | None = None,
    ) -> None:
        self.max_idle = max_idle
        self.max_headers = max_headers
        #: For the connections it opens (see :mod:`._http`).
        self.fast_path = fast_path
        self.closed = False
        self._idle: dict[str, list[PooledConnection[S]]] = {}

    def take(self, origin: str) -> PooledConnection[S] | None:
        """An idle connection to ``origin``, or None: open one and call :meth:`opened`."""
        idle = self._idle.get(origin)
        return idle.pop() if idle else None

    def opened(self, origin: str, host_header: str, stream: S) -> PooledConnection[S]:
        return PooledConnection(
            origin,
            stream,
            HTTPClientConnection(
                host_header, max_headers=self.max_headers, fast_path=self.fast_path
            ),
        )

    def release(self, conn: PooledConnection[S]) -> bool:
        """Keep ``conn`` for a later request; False: the adapter closes its stream."""
        if self.closed or not conn.http.start_next():
            return False
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= self.max_idle:
            return False
        idle.append(conn)
        return True

    def close(self) -> list[S]:
        """Stop keeping connections; the streams of the idle ones, for the adapter to close."""
        self.closed = True
        streams = [conn.stream for idle in self._idle.values() for conn in idle]
        self._idle.clear()
        return streams

    def __len__(self) -> int:
        return sum(len(idle) for idle in self._idle.values())
