"""Run one async test body on either backend, and serve on either backend.

pytest-trio's ``trio_mode`` claims every ``async def`` test, so parity tests
are plain functions that hand their async body to :func:`run`.  The body is
written once against the runtime's ``Backend`` protocol, :data:`BACKENDS` (``fail_after``,
``move_on_after``, ``sleep``, ``connect``) plus the few neutral helpers here.

Leak rules enforced here (fds and child processes are checked by the
package conftest):

* Trio: ``trio.run`` returns only once every task is done, so nothing can
  outlive the body.
* asyncio: when the body returns, ``asyncio.all_tasks()`` must be empty
  (apart from the runner's own task) -- a task left behind fails the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import queue
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any, TypeVar

import trio

import asyncio_adapters
import trio_adapters
from sansio_mcp.runtime import Context, Server, TransportBackend
from sansio_mcp.runtime._client import ClientHandlers
from sansio_mcp_apps.example_server import TOOL_NAMES, build_server

__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "BUDGET",
    "EXAMPLE_TOOLS",
    "CountingProxy",
    "INITIALIZE",
    "POST_HEADERS",
    "PAIRS",
    "Answers",
    "Probe",
    "StrayTasks",
    "cancellable",
    "parity_server",
    "raw_request",
    "run",
    "serving",
    "serving_in_loop",
    "texts",
    "url_for",
    "wait_until",
]

#: Each backend by its ``--backend`` name.
BACKENDS: dict[str, TransportBackend] = {
    "trio": trio_adapters.BACKEND,
    "asyncio": asyncio_adapters.BACKEND,
}

T = TypeVar("T")

BACKEND_NAMES = ("trio", "asyncio")
#: (server backend, client backend): same-backend and both cross-backend pairs.
PAIRS = [(s, c) for s in BACKEND_NAMES for c in BACKEND_NAMES]
#: Seconds for one whole test body, start-up and shutdown included.
BUDGET = 30.0
#: How long finishing tasks may take to go away before they count as leaked.
_TASK_GRACE = 1.0

EXAMPLE_TOOLS = set(TOOL_NAMES)
ROOT = {"uri": "file:///work/parity-project", "name": "parity-project"}
COUNTER_URI = "example://counter"


class StrayTasks(AssertionError):
    """asyncio tasks were still alive when the test body (or a server) finished."""


# Running a body -------------------------------------------------------------------------


async def _no_stray_asyncio_tasks(what: str) -> None:
    me = asyncio.current_task()
    deadline = time.monotonic() + _TASK_GRACE
    while True:
        others = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        if not others:
            return
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.01)
    names = sorted(f"{t.get_name()}: {t.get_coro()!r}" for t in others)
    for task in others:  # leave the loop clean for asyncio.run's own shutdown
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    raise StrayTasks(f"{len(others)} asyncio task(s) outlived {what}: {names}")


def run(backend: str, body: Callable[..., Awaitable[T]], *args: Any, budget: float = BUDGET) -> T:
    """Run ``body(*args)`` on ``backend`` ("trio" or "asyncio"), bounded by ``budget``."""
    if backend == "trio":

        async def trio_main() -> T:
            with trio.fail_after(budget):
                return await body(*args)

        return trio.run(trio_main)

    async def asyncio_main() -> T:
        async with asyncio.timeout(budget):
            result = await body(*args)
        await _no_stray_asyncio_tasks("the test body")
        return result

    return asyncio.run(asyncio_main())


async def wait_until(
    backend: TransportBackend, predicate: Callable[[], bool], timeout: float = 5.0
) -> None:
    """Poll ``predicate`` (state changed by another thread, a handler, a log) until it holds."""
    async with backend.fail_after(timeout):
        while not predicate():
            await backend.sleep(0.02)


@asynccontextmanager
async def cancellable(backend: str) -> AsyncIterator[Callable[[], None]]:
    """A block that a callback can cancel: yields ``cancel()``; the block then ends
    quietly (a Trio cancel scope; on asyncio a rescheduled ``asyncio.timeout``)."""
    if backend == "trio":
        with trio.CancelScope() as scope:
            yield scope.cancel
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(None) as timeout:
            yield lambda: timeout.reschedule(asyncio.get_running_loop().time())


# Servers --------------------------------------------------------------------------------

_SERVE = {
    "http": ("http_server", "serve_http"),
    "router": ("http_server", "serve_router"),
    "sse": ("sse", "serve_sse"),
    "ws": ("websocket", "serve_ws"),
}


def _serve_fn(backend: str, transport: str) -> Callable[..., Any]:
    module_name, fn_name = _SERVE[transport]
    package = "trio_adapters" if backend == "trio" else "asyncio_adapters"
    module = __import__(f"{package}.{module_name}", fromlist=[fn_name])
    return getattr(module, fn_name)  # type: ignore[no-any-return]


@contextmanager
def serving(backend: str, transport: str, server: Server, **options: Any) -> Iterator[int]:
    """Serve ``server`` on ``transport`` with ``backend``'s adapter, in a thread with
    its own event loop, on 127.0.0.1:0; yields the port.  On exit the server is
    stopped, its thread joined, and (asyncio) no task of its loop may remain."""
    serve = _serve_fn(backend, transport)
    ports: queue.Queue[int | BaseException] = queue.Queue()
    stop_box: list[Callable[[], None]] = []
    failure: list[BaseException] = []

    async def trio_main() -> None:
        with trio.CancelScope() as scope:
            token = trio.lowlevel.current_trio_token()
            stop_box.append(lambda: trio.from_thread.run_sync(scope.cancel, trio_token=token))
            async with trio.open_nursery() as nursery:
                port = await nursery.start(
                    partial(serve, server, host="127.0.0.1", port=0, **options)
                )
                ports.put(port)

    async def asyncio_main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        stop_box.append(lambda: loop.call_soon_threadsafe(stop.set))
        started: asyncio.Future[int] = loop.create_future()
        task = asyncio.create_task(
            serve(server, host="127.0.0.1", port=0, started=started, **options)
        )
        await asyncio.wait([started, task], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # it failed before binding: report why
        ports.put(started.result())
        await stop.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await _no_stray_asyncio_tasks(f"the {transport} server")

    def thread_main() -> None:
        try:
            if backend == "trio":
                trio.run(trio_main)
            else:
                asyncio.run(asyncio_main())
        except BaseException as exc:
            failure.append(exc)
            ports.put(exc)

    thread = threading.Thread(target=thread_main, name=f"{backend}-{transport}-server")
    thread.start()
    try:
        got = ports.get(timeout=10)
        if isinstance(got, BaseException):
            raise got
        yield got
    finally:
        if stop_box:
            with contextlib.suppress(trio.RunFinishedError, RuntimeError):
                stop_box[0]()
        thread.join(timeout=10)
        assert not thread.is_alive(), f"the {backend} {transport} server did not stop"
    if failure:
        raise failure[0]


@asynccontextmanager
async def serving_in_loop(
    backend: str, transport: str, server: Server, **options: Any
) -> AsyncIterator[int]:
    """Serve in the caller's own event loop (a nursery task, or an asyncio task);
    yields the port; the server is cancelled, and waited for, on exit."""
    serve = _serve_fn(backend, transport)
    if backend == "trio":
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(serve, server, host="127.0.0.1", port=0, **options))
            try:
                yield port
            finally:
                nursery.cancel_scope.cancel()
        return
    started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(server, host="127.0.0.1", port=0, started=started, **options))
    try:
        await asyncio.wait([started, task], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # it failed before binding: report why
        yield started.result()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class CountingProxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream_port``, in threads of its own:
    it counts the connections clients open (:attr:`accepted`), knows how many are
    still open (:attr:`open`), and can drop them all at once (:meth:`drop_all`), as
    a server closing its idle keep-alive connections would.  Use it as a context
    manager: every socket and thread is gone when the block ends."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._open: dict[int, tuple[socket.socket, socket.socket]] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, name="proxy-accept")

    @property
    def open(self) -> int:
        with self._lock:
            return len(self._open)

    def __enter__(self) -> CountingProxy:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._acceptor.join(timeout=5)
        self._listener.close()
        self.drop_all()
        for thread in self._threads:
            thread.join(timeout=5)

    def drop_all(self) -> None:
        """Close every proxied connection, both ways."""
        with self._lock:
            pairs = list(self._open.values())
            self._open.clear()
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                downstream, _ = self._listener.accept()
            except TimeoutError:
                continue
            downstream.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._lock:
                self.accepted += 1
                key = self.accepted
                self._open[key] = (downstream, upstream)
            pumps = [
                threading.Thread(target=self._pump, args=(key, downstream, upstream)),
                threading.Thread(target=self._pump, args=(key, upstream, downstream)),
            ]
            self._threads += pumps
            for pump in pumps:
                pump.start()

    def _pump(self, key: int, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._open.pop(key, None)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        # Each pump closes the socket it read from; the other pump closes the other.
        source.close()


def raw_request(
    port: int,
    method: str,
    target: str,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, dict[str, str], bytes]:
    """One blocking HTTP/1.1 request (the server runs in its own thread)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        conn.request(method, target, body=data, headers=headers or {})
        response = conn.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read(),
        )
    finally:
        conn.close()


POST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-parity-client", "version": "0"},
    },
}


def url_for(transport: str, port: int) -> str:
    if transport == "ws":
        return f"ws://127.0.0.1:{port}/mcp"
    if transport == "sse":
        return f"http://127.0.0.1:{port}/sse"
    return f"http://127.0.0.1:{port}/mcp"


# The server under test ------------------------------------------------------------------


class Probe:
    """What the ``block`` tool saw (thread-safe: the server may run in another thread)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.cancelled = False
        self.finished = False


def parity_server(probe: Probe | None = None) -> Server:
    """The bundled example server plus ``block``: waits, reporting progress once,
    and records in ``probe`` whether it finished or was cancelled."""
    server = build_server()
    seen = probe if probe is not None else Probe()

    @server.tool()
    async def block(ctx: Context, seconds: float = 30.0) -> str:
        """Wait ``seconds`` unless cancelled."""
        seen.started.set()
        try:
            await ctx.report_progress(0, 1, "started")
            await ctx.sleep(seconds)
            seen.finished = True
            return "finished"
        except BaseException:  # trio.Cancelled or asyncio.CancelledError
            seen.cancelled = True
            raise
        finally:
            seen.stopped.set()

    return server


# The client's side ----------------------------------------------------------------------


class Answers:
    """Backend-neutral client handlers (no sleeps, no loop calls) that record each question."""

    def __init__(self) -> None:
        self.elicited: list[str] = []
        self.sampled: list[str] = []
        self.roots_asked = 0

    def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicited.append(params["message"])
        return {"action": "accept", "content": {"answer": f"answer to {params['message']}"}}

    async def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        content = params["messages"][-1]["content"]
        self.sampled.append(content.get("text", "") if isinstance(content, dict) else "")
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "parity-model",
            "stopReason": "endTurn",
        }

    def roots(self) -> list[dict[str, Any]]:
        self.roots_asked += 1
        return [ROOT]

    def handlers(self) -> ClientHandlers:
        return ClientHandlers(
            sampling=self.sampling, elicitation=self.elicitation, roots=self.roots
        )


def texts(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result.get("content", []) if c.get("type") == "text")
