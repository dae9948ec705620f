"""A custom byte transport on the pure core: MCP over a Unix socket, with timers.

No event loop and no adapter: one ``selectors`` loop drives a server and a client, each a
sans-IO session over its end of a Unix socket. It shows the whole contract a transport
author keeps:

* feed the bytes you read, in order, with ``receive_data``; ``receive_data(b"")`` at the
  end of input;
* after every call, send what ``data_to_send()`` returns;
* take events with ``next_event()`` until ``NEED_DATA``;
* wake up by ``next_deadline()`` and call ``handle_timer(now)``: time is a number you pass.

Run it: ``python examples/unix_socket.py``.
"""

from __future__ import annotations

import os
import selectors
import socket
import tempfile
import time

from sansio_mcp import (
    NEED_DATA,
    ClientSession,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    ServerSession,
    Session,
)

TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]


def pump(session: Session, sock: socket.socket) -> None:
    """Send whatever the session queued (a blocking send is fine for a demo)."""
    if data := session.data_to_send():
        sock.sendall(data)


def serve_events(server: ServerSession, sock: socket.socket) -> None:
    while (event := server.next_event()) is not NEED_DATA:
        if isinstance(event, RequestReceived) and event.method == "tools/list":
            server.respond(event.request_id, {"tools": TOOLS})
        elif isinstance(event, RequestReceived) and event.method == "tools/call":
            if event.params["name"] == "slow":
                continue  # never answered: the client's timer ends it
            text = event.params.get("arguments", {}).get("text", "")
            server.respond(event.request_id, {"content": [{"type": "text", "text": text}]})
    pump(server, sock)


def main() -> list[str]:
    seen: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mcp.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen()
        client_sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client_sock.connect(path)
        server_sock, _ = listener.accept()
        listener.close()

        server = ServerSession(capabilities={"tools": {}})
        client = ClientSession()
        selector = selectors.DefaultSelector()
        selector.register(server_sock, selectors.EVENT_READ, server)
        selector.register(client_sock, selectors.EVENT_READ, client)

        client.initialize()
        pump(client, client_sock)
        asked = False
        while len(seen) < 3:
            deadline = client.next_deadline()
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            for key, _ in selector.select(timeout=wait):
                session = key.data
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                data = sock.recv(65536)
                session.receive_data(data)  # b"" here is the end of input
                if session is server:
                    serve_events(server, server_sock)
            client.handle_timer(time.monotonic())
            while (event := client.next_event()) is not NEED_DATA:
                if isinstance(event, ResponseReceived) and event.method == "tools/list":
                    seen.append(f"tools: {[t['name'] for t in event.result['tools']]}")
                elif isinstance(event, ResponseReceived) and event.method == "tools/call":
                    seen.append(f"echo: {event.result['content'][0]['text']}")
                elif isinstance(event, RequestFailed):
                    seen.append(f"{event.method} failed: {event.error.message}")
            if client.protocol_version and not asked:
                asked = True
                now = time.monotonic()
                client.send_request("tools/list", now=now, timeout=5.0)
                echo = {"name": "echo", "arguments": {"text": "over a Unix socket"}}
                client.send_request("tools/call", echo, now=now, timeout=5.0)
                client.send_request("tools/call", {"name": "slow"}, now=now, timeout=0.2)
            pump(client, client_sock)
        client_sock.close()  # the server reads b"": its session ends
        server.receive_data(server_sock.recv(65536))
        server_sock.close()
        selector.close()
    return seen


if __name__ == "__main__":
    for line in main():
        print(line)
