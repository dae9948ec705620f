"""WebSocket on wsproto, one protocol message per text message.

This is the one WebSocket machine of the library: MCP and A2E both speak
through :class:`WebSocketConnection` and differ only in its class attributes
(their subprotocol, and whether a server insists on it).

No MCP revision defines a WebSocket transport; MCP follows the convention the
official SDKs use (subprotocol ``mcp``, one message per text message).
:class:`WebSocketFraming` sits between the bytes and a session exactly as
NDJSON framing does on stdio, so the same runner drives both.  A2E's
subclass, ``A2EWebSocket``, lives with the A2E codec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar, NamedTuple
from urllib.parse import urlsplit

import wsproto
import wsproto.events as ws
from wsproto.connection import ConnectionState

from ._http import url_hostname
from ._json import DEFAULT_MAX_MESSAGE_SIZE
from ._session import Session

__all__ = [
    "LOOPBACK_HOSTS",
    "SUBPROTOCOL",
    "MCPWebSocket",
    "WebSocketAddress",
    "WebSocketConnection",
    "WebSocketFraming",
]

SUBPROTOCOL = "mcp"
#: The Host (and Origin host) a server accepts unless told otherwise.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class WebSocketAddress(NamedTuple):
    """Where a ``ws://`` or ``wss://`` URL points: what a client connects to, and
    what its opening handshake names (every backend's openers read URLs alike)."""

    hostname: str
    port: int
    tls: bool
    #: The Host header's value.
    netloc: str
    #: The request target: the path and query.
    target: str

    @classmethod
    def parse(cls, url: str) -> WebSocketAddress:
        """Raises ValueError for anything but a ``ws://`` or ``wss://`` URL with a host."""
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"not a ws:// URL: {url!r}")
        tls = parts.scheme == "wss"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.hostname, parts.port or (443 if tls else 80), tls, parts.netloc, target)


class WebSocketConnection:
    """One WebSocket connection, client or server side: bytes in, complete text
    messages out; texts in, frames out.  A subclass names its protocol in
    :attr:`subprotocol` and :attr:`subprotocol_required`.

    Server side: the opening handshake is checked (path, subprotocol, loopback
    Host/Origin unless allowed otherwise) and refused with an HTTP status when
    wrong, or when :attr:`refuse_with` says so.  A binary frame closes with
    1003, an oversized message with 1009, frames wsproto finds broken with its
    code (1002, 1007).  Pings are answered; :meth:`ping` sends one for
    keep-alive, and :attr:`awaiting_pong` says whether it is still unanswered.
    Once we have sent a close frame (:attr:`closing`) nothing more is read but
    the peer's close reply, which makes :attr:`closed` true.
    """

    #: The subprotocol a client asks for and a server accepts.
    subprotocol: ClassVar[str]
    #: Whether a server refuses (HTTP 400) a client that does not ask for it.
    subprotocol_required: ClassVar[bool]

    def __init__(
        self,
        *,
        client: bool,
        host: str = "",
        target: str | None = None,
        path: str | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.path = path or f"/{self.subprotocol}"
        self.max_message_size = max_message_size
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or LOOPBACK_HOSTS)}
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
        #: Why the connection closed (code, reason), once it has (or began to).
        self.close_reason: tuple[int, str] | None = None
        #: The HTTP status a refused handshake got (or was given), if any.
        self.refused: int | None = None
        #: Set this before the handshake arrives to refuse it with that status.
        self.refuse_with: int | None = None
        #: A ping of ours is not answered yet (any pong answers it).
        self.awaiting_pong = False
        if client:
            self._out += self._ws.send(
                ws.Request(
                    host=host,
                    target=target or self.path,
                    subprotocols=[self.subprotocol],
                    extra_headers=_handshake_extras(extra_headers or {}),
                )
            )

    # Input -------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray) -> list[str]:
        """Feed bytes (``b""``: the TCP connection ended); the complete text messages."""
        texts: list[str] = []
        if self.closed:
            return texts
        try:
            self._receive(data, texts)
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
        return texts

    def _receive(self, data: bytes | bytearray, texts: list[str]) -> None:
        self._ws.receive_data(bytes(data) if data else None)
        for event in self._ws.events():
            if self.closed:
                return
            if self.closing and not isinstance(event, ws.CloseConnection):
                continue  # after our close (1003, 1009, or a clean one) only the reply counts
            if isinstance(event, ws.Request):
                self._on_handshake(event)
            elif isinstance(event, ws.AcceptConnection):
                self.open = True
            elif isinstance(event, ws.RejectConnection):
                self.refused = event.status_code
                self._end(1002, f"the server refused the WebSocket handshake ({event.status_code})")
            elif isinstance(event, ws.TextMessage):
                self._on_text(event, texts)
            elif isinstance(event, ws.BytesMessage):
                self.close(1003, f"{self.subprotocol.upper()} messages are text frames")
            elif isinstance(event, ws.Ping):
                self._send(event.response())
            elif isinstance(event, ws.Pong):
                self.awaiting_pong = False
            elif isinstance(event, ws.CloseConnection):
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    self._send(event.response())
                elif self._ws.state is ConnectionState.OPEN:
                    # wsproto found the peer's frames broken (1002, 1007): say so.
                    self._send(ws.CloseConnection(code=event.code, reason=event.reason))
                self._end(event.code, event.reason or "")

    def _on_handshake(self, request: ws.Request) -> None:
        status = self.refuse_with or self._check(request)
        if status is not None:
            self.refused = status
            self._send(ws.RejectConnection(status_code=status, has_body=False))
            self._end(1002, f"handshake refused with HTTP {status}")
            return
        offered = self.subprotocol in request.subprotocols
        self._send(ws.AcceptConnection(subprotocol=self.subprotocol if offered else None))
        self.open = True

    def _check(self, request: ws.Request) -> int | None:
        if request.target.split("?", 1)[0] != self.path:
            return 404
        host = url_hostname(f"//{request.host}")
        if host is None:
            return 400
        if host not in self.allowed_hosts:
            return 403
        # Header bytes may be anything; latin-1 decodes every byte.
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
        if self.subprotocol_required and self.subprotocol not in request.subprotocols:
            return 400
        return None

    def _on_text(self, event: ws.TextMessage, texts: list[str]) -> None:
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

    # Output ------------------------------------------------------------------------

    def send_text(self, text: str) -> None:
        if self.open and not self.closing and not self.closed:
            self._send(ws.Message(data=text))

    def ping(self, payload: bytes | None = None) -> None:
        """A keep-alive ping (its payload the subprotocol's name unless given)."""
        if self.open and not self.closing and not self.closed:
            self._send(ws.Ping(payload=self.subprotocol.encode() if payload is None else payload))
            self.awaiting_pong = True

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake (:attr:`closed` once the peer answers it)."""
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
            pass  # the connection is already closing


class MCPWebSocket(WebSocketConnection):
    """MCP's WebSocket: a server refuses a client that does not ask for ``mcp``."""

    subprotocol = SUBPROTOCOL
    subprotocol_required = True


class WebSocketFraming:
    """MCP over WebSocket for one session, client or server side: the texts of
    an :class:`MCPWebSocket` go to ``session``, its messages come back as text
    frames.  For the session the connection ends as soon as either side starts
    to close it (:attr:`closed`): nothing is read or sent after that.
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
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.session = session
        self.connection = MCPWebSocket(
            client=client,
            host=host,
            target=target,
            path=path,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_message_size=max_message_size,
            extra_headers=extra_headers,
        )

    @classmethod
    def client_to(
        cls, session: Session, url: str, headers: Mapping[str, str] | None = None
    ) -> WebSocketFraming:
        """The client side of a connection to ``url`` (``ws://`` or ``wss://``): the
        opening handshake names its host and path, and carries ``headers``."""
        address = WebSocketAddress.parse(url)
        return cls(
            session,
            client=True,
            host=address.netloc,
            target=address.target,
            extra_headers=headers,
        )

    @property
    def open(self) -> bool:
        return self.connection.open

    @property
    def closed(self) -> bool:
        return self.connection.closing or self.connection.closed

    @property
    def close_reason(self) -> tuple[int, str] | None:
        """Why the connection closed (code, reason), once it has."""
        return self.connection.close_reason

    @property
    def refused(self) -> int | None:
        """The HTTP status of a refused handshake, if any."""
        return self.connection.refused

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes; ``b""`` means the TCP connection ended."""
        if self.closed:
            return
        for text in self.connection.receive_data(data):
            self.session.receive_text(text)
        if self.closed:
            self.session.close()

    def data_to_send(self) -> bytes:
        """Frames for everything the session queued, plus control frames."""
        if self.open and not self.closed:
            for item in self.session.outgoing_to_send():
                # Compact JSON is valid UTF-8: the text wsproto encodes back to these bytes.
                self.connection.send_text(item.data.decode("utf-8"))
        return self.connection.data_to_send()

    def ping(self, payload: bytes = b"mcp") -> None:
        self.connection.ping(payload)

    @property
    def awaiting_pong(self) -> bool:
        """A ping of ours is not answered yet."""
        return self.connection.awaiting_pong

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start a clean close; the session ends at once."""
        self.connection.close(code, reason)
        self.session.close()


#: Headers the opening handshake writes itself: a caller's must not repeat them.
_HANDSHAKE_HEADERS = frozenset(
    {
        "host",
        "upgrade",
        "connection",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-protocol",
        "sec-websocket-extensions",
    }
)


def _handshake_extras(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """A client's own headers (credentials, say) for its opening handshake."""
    return [
        (name.encode(), value.encode())
        for name, value in headers.items()
        if name.lower() not in _HANDSHAKE_HEADERS
    ]
