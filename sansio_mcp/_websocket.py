"""MCP over WebSocket (wsproto): one JSON-RPC message per text frame.

No MCP revision defines a WebSocket transport; this follows the convention
the official SDKs use (subprotocol ``mcp``, one message per text message).
:class:`WebSocketFraming` sits between the bytes and a session exactly as
NDJSON framing does on stdio, so the same runner drives both.
"""

from __future__ import annotations

from collections.abc import Iterable

import wsproto
import wsproto.events as ws
from wsproto.connection import ConnectionState

from . import _json
from ._http import url_hostname
from ._session import Session

__all__ = ["WebSocketFraming", "SUBPROTOCOL"]

SUBPROTOCOL = "mcp"
DEFAULT_MAX_MESSAGE = 8 * 1024 * 1024


class WebSocketFraming:
    """WebSocket framing for one session, client or server side.

    Server side: the opening handshake is checked (path, ``mcp``
    subprotocol, loopback Host/Origin unless allowed otherwise) and refused
    with an HTTP status when wrong.  Text frames become messages; a binary
    frame closes with 1003, an oversized message with 1009.  Pings are
    answered; :meth:`ping` sends one for keep-alive.
    """

    def __init__(
        self,
        session: Session,
        *,
        client: bool,
        host: str = "",
        target: str = "/mcp",
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE,
    ) -> None:
        self.session = session
        self.max_message_size = max_message_size
        self.path = path
        self.allowed_hosts = {
            h.lower() for h in (allowed_hosts or ("127.0.0.1", "localhost", "::1", "[::1]"))
        }
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or ())}
        self._ws = wsproto.WSConnection(
            wsproto.ConnectionType.CLIENT if client else wsproto.ConnectionType.SERVER
        )
        self._out = bytearray()
        self._parts: list[str] = []
        self._size = 0
        self.open = False
        self.closed = False
        #: Why the connection closed (code, reason), once it has.
        self.close_reason: tuple[int, str] | None = None
        #: The HTTP status of a refused handshake (server side), if any.
        self.refused: int | None = None
        if client:
            self._out += self._ws.send(
                ws.Request(host=host, target=target, subprotocols=[SUBPROTOCOL])
            )

    # Input -------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes; ``b""`` means the TCP connection ended."""
        if self.closed:
            return
        try:
            self._receive(data)
        except wsproto.utilities.RemoteProtocolError as exc:
            # A broken opening handshake (or bytes that are no WebSocket at all):
            # refuse it with the HTTP status wsproto suggests, and end.
            hint = exc.event_hint
            if isinstance(hint, ws.RejectConnection) and not self.open:
                self.refused = hint.status_code
                self._send(hint)
            self._end(1002, f"WebSocket protocol error: {exc}")
        if not data:
            self._end(1006, "the connection dropped")

    def _receive(self, data: bytes | bytearray) -> None:
        self._ws.receive_data(bytes(data) if data else None)
        for event in self._ws.events():
            if self.closed:
                return  # what follows a close (1003, 1009) in the same read is dropped
            if isinstance(event, ws.Request):
                self._on_handshake(event)
            elif isinstance(event, ws.AcceptConnection):
                self.open = True
            elif isinstance(event, ws.RejectConnection):
                self.refused = event.status_code
                self._end(1002, f"the server refused the WebSocket handshake ({event.status_code})")
            elif isinstance(event, ws.TextMessage):
                self._on_text(event)
            elif isinstance(event, ws.BytesMessage):
                self._close(1003, "MCP messages are text frames")
            elif isinstance(event, ws.Ping):
                self._send(event.response())
            elif isinstance(event, ws.CloseConnection):
                self.close_reason = (event.code, event.reason or "")
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    self._send(event.response())
                elif self._ws.state is ConnectionState.OPEN:
                    # wsproto found the peer's frames broken (1002, 1007): say so.
                    self._send(ws.CloseConnection(code=event.code, reason=event.reason))
                self._end(event.code, event.reason or "")

    def _on_handshake(self, request: ws.Request) -> None:
        status = self._check(request)
        if status is not None:
            self.refused = status
            self._send(ws.RejectConnection(status_code=status, has_body=False))
            self._end(1002, f"handshake refused with HTTP {status}")
            return
        self._send(ws.AcceptConnection(subprotocol=SUBPROTOCOL))
        self.open = True

    def _check(self, request: ws.Request) -> int | None:
        if request.target.split("?", 1)[0] != self.path:
            return 404
        host = url_hostname(f"//{request.host}")
        if host is None:
            return 400
        if host not in self.allowed_hosts:
            return 403
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.extra_headers
        }
        origin = headers.get("origin")
        if origin is not None:
            bare = origin.lower().rstrip("/")
            if bare not in self.allowed_origins and (
                self.allowed_origins or url_hostname(origin) not in self.allowed_hosts
            ):
                return 403
        if SUBPROTOCOL not in request.subprotocols:
            return 400
        return None

    def _on_text(self, event: ws.TextMessage) -> None:
        self._parts.append(event.data)
        self._size += len(event.data)
        if self._size > self.max_message_size:
            self._parts.clear()
            self._size = 0
            self._close(1009, f"message over {self.max_message_size} bytes")
            return
        if event.message_finished:
            text = "".join(self._parts)
            self._parts.clear()
            self._size = 0
            self.session.receive_text(text)

    # Output ------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Frames for everything the session queued, plus control frames."""
        if self.open and not self.closed:
            for obj in self.session.messages_to_send():
                self._send(ws.Message(data=_json.dumps(obj)))
        out = bytes(self._out)
        self._out.clear()
        return out

    def ping(self, payload: bytes = b"mcp") -> None:
        if self.open and not self.closed:
            self._send(ws.Ping(payload=payload))

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start a clean close."""
        self._close(code, reason)

    def _close(self, code: int, reason: str) -> None:
        if self._ws.state is ConnectionState.OPEN:
            self._send(ws.CloseConnection(code=code, reason=reason))
        self._end(code, reason)

    def _end(self, code: int, reason: str) -> None:
        if self.close_reason is None:
            self.close_reason = (code, reason)
        if not self.closed:
            self.closed = True
            self.session.close()

    def _send(self, event: ws.Event) -> None:
        try:
            self._out += self._ws.send(event)
        except wsproto.utilities.LocalProtocolError:
            pass  # the connection is already closing
