"""One replica as a process of its own, for the kill tests: the example's task tools,
tasks in the Redis store named on the command line, Streamable HTTP on a free loopback
port (printed on stdout once bound); runs until killed.

    python replica_process.py BACKEND REDIS_URL NAMESPACE REPLICA_ID LEASE
"""

from __future__ import annotations

import sys
from typing import Any


def main(backend_name: str, url: str, namespace: str, replica_id: str, lease: float) -> None:
    from sansio_mcp.runtime import Server, open_stores
    from sansio_mcp_apps.example_server import add_task_tools

    def announce(port: int) -> None:
        print(port, flush=True)

    if backend_name == "trio":
        import trio

        from trio_adapters import BACKEND, http_server

        class Started:
            def started(self, port: int) -> None:
                announce(port)

        async def serve(server: Server) -> None:
            await http_server.serve_http(server, port=0, task_status=Started())

    else:
        import asyncio

        from asyncio_adapters import BACKEND, http_server  # type: ignore[no-redef]

        async def serve(server: Server) -> None:
            started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            started.add_done_callback(lambda f: announce(f.result()))
            await http_server.serve_http(server, port=0, started=started)  # type: ignore[call-arg]

    async def run() -> None:
        async with open_stores(url, BACKEND, replica_id=replica_id, namespace=namespace) as stores:
            server = Server("replica", "1", stores=stores, task_lease=lease)
            add_task_tools(server, max_seconds=60)
            await serve(server)

    runner: Any = trio.run if backend_name == "trio" else BACKEND.run
    runner(run)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
