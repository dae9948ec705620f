"""WebSocket, sans-IO: a ``ws://``/``wss://`` address, one connection's framing
(:class:`WebSocketConnection`), and an MCP session framed over it
(:class:`WebSocketFraming`)."""

from ._websocket import WebSocketAddress, WebSocketConnection, WebSocketFraming

__all__ = ["WebSocketAddress", "WebSocketConnection", "WebSocketFraming"]
