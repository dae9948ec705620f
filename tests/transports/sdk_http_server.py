"""Serve the ``mcp`` SDK peer (``tests/interop/sdk_server.py``) over HTTP under uvicorn.

``python tests/transports/sdk_http_server.py MODE`` with MODE one of
``stateful`` (Streamable HTTP with sessions), ``stateless`` (Streamable HTTP,
``stateless_http=True``), ``json`` (stateful, ``json_response=True``) or
``sse`` (the legacy HTTP+SSE app).  It binds 127.0.0.1 on a free port,
prints ``PORT <n>`` once it accepts connections, and stops when its stdin
is closed.
"""

from __future__ import annotations

import importlib.util
import logging
import socket
import sys
import threading
import warnings
from pathlib import Path

import uvicorn

warnings.simplefilter("ignore")

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "sdk_interop_server", HERE.parent / "interop" / "sdk_server.py"
)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
mcp_server = _module.server


def main() -> None:
    mode = sys.argv[1]
    if mode == "sse":
        app = mcp_server.sse_app()
    else:
        app = mcp_server.streamable_http_app(
            stateless_http=mode == "stateless", json_response=mode == "json"
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)

    def watch_stdin() -> None:
        sys.stdin.read()  # returns at EOF: the parent's signal to stop
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        print(f"PORT {port}", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
