"""Row 8's floor: a transparent TCP relay in plain Python, parsing nothing.

``python bench/servers/relay.py UPSTREAM_PORT`` listens on a free loopback port,
prints ``PORT <n>``, and relays each connection it accepts to 127.0.0.1 on
``UPSTREAM_PORT`` byte for byte.  A call through it pays what any proxy on this
machine pays at the least (one more loopback hop each way, one more process to
wake), so row 8 shows the gateway's cost beside it.  It stops on SIGTERM, or
when its stdin is closed.
"""

from __future__ import annotations

import selectors
import signal
import socket
import sys


def main() -> None:
    upstream = ("127.0.0.1", int(sys.argv[1]))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    while True:
        for key, _ in selector.select():
            sock = key.fileobj
            if sock is sys.stdin:
                if not sys.stdin.buffer.read1(4096):
                    return
            elif sock is listener:
                client, _ = listener.accept()
                server = socket.create_connection(upstream)
                for one, other in ((client, server), (server, client)):
                    one.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    selector.register(one, selectors.EVENT_READ, other)
            else:
                assert isinstance(sock, socket.socket)
                peer: socket.socket = key.data
                try:
                    data = sock.recv(65536)
                    if data:
                        # Blocking send: the peer reads promptly on loopback.
                        peer.sendall(data)
                        continue
                except OSError:
                    pass
                for end in (sock, peer):
                    if end.fileno() != -1:  # not closed earlier in this batch
                        selector.unregister(end)
                        end.close()


if __name__ == "__main__":
    main()
