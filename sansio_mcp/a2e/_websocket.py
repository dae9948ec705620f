"""A2E over WebSocket (wsproto): one A2E message per text frame.

The bridge's agent side on a socket.  The server side checks the opening
handshake (the path, and a loopback Host/Origin unless told otherwise) and
accepts the subprotocol ``a2e`` when offered (it is not required).  Pure:
bytes in, texts out, bytes to send.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import wsproto
import wsproto.events as ws
from wsproto.connection import ConnectionState

__all__ = ["A2EWebSocket", "SUBPROTOCOL"]

SUBPROTOCOL = "a2e"
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class A2EWebSocket:
    """WebSocket framing for an A2E peer, client or server side."""

    def __init__(
        self,
        *,
        client: bool,
        host: str = "",
        target: str = "/a2e",
        path: str = "/a2e",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_message_size: int = 8 * 1024 * 1024,
    ) -> None:
        self.path = path
        self.max_message_size = max_message_size
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or _LOOPBACK)}
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or ())}
        self._ws = wsproto.WSConnection(
            wsproto.ConnectionType.CLIENT if client else wsproto.ConnectionType.SERVER
        )
        self._out = bytearray()
        self._parts: list[str] = []
        self._size = 0
        self.open = False
        #: We sent a close frame and wait for the peer's.
        self.closing = False
        #: The connection is over (both close frames exchanged, refused, or dropped).
        self.closed = False
        self.close_reason: tuple[int, str] | None = None
        #: The HTTP status a refused handshake got (or was given), if any.
        self.refused: int | None = None
        #: Set this before the handshake arrives to refuse it (409: one agent at a time).
        self.refuse_with: int | None = None
        if client:
            self._out += self._ws.send(
                ws.Request(host=host, target=target, subprotocols=[SUBPROTOCOL])
            )

    def receive_data(self, data: bytes | bytearray) -> list[str]:
        """Feed bytes (``b""``: the TCP connection ended); the complete text messages."""
        texts: list[str] = []
        if self.closed:
            return texts
        self._ws.receive_data(bytes(data) if data else None)
        for event in self._ws.events():
            if isinstance(event, ws.Request):
                self._on_handshake(event)
            elif isinstance(event, ws.AcceptConnection):
                self.open = True
            elif isinstance(event, ws.RejectConnection):
                self.refused = event.status_code
                self._end(1002, f"the handshake was refused ({event.status_code})")
            elif isinstance(event, ws.TextMessage):
                self._parts.append(event.data)
                self._size += len(event.data)
                if self._size > self.max_message_size:
                    self._parts.clear()
                    self._size = 0
                    self.close(1009, f"message over {self.max_message_size} bytes")
                elif event.message_finished:
                    texts.append("".join(self._parts))
                    self._parts.clear()
                    self._size = 0
            elif isinstance(event, ws.BytesMessage):
                self.close(1003, "A2E messages are text frames")
            elif isinstance(event, ws.Ping):
                self._send(event.response())
            elif isinstance(event, ws.CloseConnection):
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    self._send(event.response())
                self._end(event.code, event.reason or "")
        if not data:
            self._end(1006, "the connection dropped")
        return texts

    def _on_handshake(self, request: ws.Request) -> None:
        status = self.refuse_with or self._check(request)
        if status is not None:
            self.refused = status
            self._send(ws.RejectConnection(status_code=status, has_body=False))
            self._end(1002, f"handshake refused with HTTP {status}")
            return
        subprotocol = SUBPROTOCOL if SUBPROTOCOL in request.subprotocols else None
        self._send(ws.AcceptConnection(subprotocol=subprotocol))
        self.open = True

    def _check(self, request: ws.Request) -> int | None:
        if request.target.split("?", 1)[0] != self.path:
            return 404
        host = (urlsplit(f"//{request.host}").hostname or "").lower()
        if host not in self.allowed_hosts:
            return 403
        headers = {k.decode().lower(): v.decode() for k, v in request.extra_headers}
        origin = headers.get("origin")
        if origin is not None:
            bare = origin.lower().rstrip("/")
            if bare not in self.allowed_origins and (
                self.allowed_origins
                or (urlsplit(origin).hostname or "").lower() not in self.allowed_hosts
            ):
                return 403
        return None

    def send_text(self, text: str) -> None:
        if self.open and not self.closed and not self.closing:
            self._send(ws.Message(data=text))

    def ping(self, payload: bytes = b"a2e") -> None:
        if self.open and not self.closed and not self.closing:
            self._send(ws.Ping(payload=payload))

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake (``closed`` once the peer answers it)."""
        if self._ws.state is ConnectionState.OPEN:
            self._send(ws.CloseConnection(code=code, reason=reason))
            self.closing = True
            if self.close_reason is None:
                self.close_reason = (code, reason)
        else:
            self._end(code, reason)

    def data_to_send(self) -> bytes:
        out = bytes(self._out)
        self._out.clear()
        return out

    def _end(self, code: int, reason: str) -> None:
        if self.close_reason is None:
            self.close_reason = (code, reason)
        self.closed = True

    def _send(self, event: ws.Event) -> None:
        try:
            self._out += self._ws.send(event)
        except wsproto.utilities.LocalProtocolError:
            pass  # already closing
