"""Opening an A2E client, backend-neutral: over a pipe pair (NDJSON), to a bridge
child process, or to a bridge in this process.  Each adapter's ``open_a2e_*``
names its backend and its client class and calls these."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic, TypeVar

from sansio_mcp import safe_environment
from sansio_mcp.runtime import (
    Backend,
    ByteStream,
    Sender,
    TaskGroup,
    TimedOut,
    drain_stderr,
    stop_process,
    unwrap_single_exception,
)
from sansio_mcp.websocket import WebSocketAddress

from ...a2e._codec import A2EFramer, A2EWebSocket, decode_text, encode, encode_line
from ...a2e._config import BridgeConfig
from ...a2e._host import BridgeHost
from ...a2e._messages import A2EMessage
from ._client import A2EClientBase, AgentInbox, bridge_invocation
from ._runner import BridgeRunner, direct_bridge

__all__ = [
    "A2EOpeners",
    "MakeClient",
    "open_a2e_bridge",
    "open_a2e_direct",
    "open_a2e_pipes",
    "open_a2e_websocket",
    "running",
]

C = TypeVar("C", bound=A2EClientBase)
#: Makes the client, given how it sends a message.
MakeClient = Callable[[Callable[[A2EMessage], Awaitable[None]]], C]


@asynccontextmanager
async def running(client: A2EClientBase) -> AsyncIterator[TaskGroup]:
    """The client's task group; on the way out its waits fail and its tasks are
    cancelled (a lone failure among them comes out unwrapped, as from a Trio nursery)."""
    with unwrap_single_exception():
        async with client.backend.open_task_group() as group:
            client.attach(group)
            try:
                yield group
            finally:
                client.stop()
                group.cancel()


@asynccontextmanager
async def open_a2e_pipes(
    make_client: MakeClient[C], send: ByteStream, receive: ByteStream
) -> AsyncIterator[C]:
    """A client speaking NDJSON: messages out on ``send``, in from ``receive``.
    A message is written whole or not at all (what the pipe does not take at once
    goes from the client's sender task), so cancelling a request never leaves half
    a line; a request waits while much is left unsent.  Once the bridge stops
    reading, sending raises :class:`ConnectionError`."""

    async def send_message(message: A2EMessage) -> None:
        if sender.broken:
            raise ConnectionError("the bridge stopped reading")
        sender.write(encode_line(message))
        if sender.pending > 65536:
            await sender.flushed()

    client = make_client(send_message)
    sender = Sender(client.backend, send)
    framer = A2EFramer()

    async def read() -> None:
        try:
            while True:
                data = await receive.receive_some(65536)
                for item in framer.feed(data):
                    client.feed(item)
                if not data:
                    return
        finally:
            client.close()

    async with running(client) as group:
        group.start_soon(sender.run)
        group.start_soon(read)
        yield client


@asynccontextmanager
async def open_a2e_bridge(
    backend: Backend,
    make_client: MakeClient[C],
    command: Sequence[str] | None,
    config: Mapping[str, Any] | None,
    bridge_args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | None,
    shutdown_grace: float,
) -> AsyncIterator[C]:
    """Start the bridge (``sansio-mcp bridge``, or ``command``) and talk A2E to it
    over its stdin/stdout; on the way out it is stopped (stdin closed, then
    SIGTERM, then SIGKILL after ``shutdown_grace``)."""
    command, config_path = bridge_invocation(command, config, bridge_args)
    try:
        process = await backend.open_process(
            command, env=safe_environment(os.environ, env), cwd=cwd
        )
        try:
            async with open_a2e_pipes(make_client, process.stdin, process.stdout) as client:
                client.spawn(lambda: drain_stderr(process.stderr, "a2e-bridge"))
                try:
                    yield client
                finally:
                    await stop_process(backend, process, grace=shutdown_grace)
        finally:
            if process.returncode is None:
                await stop_process(backend, process, grace=0)
    finally:
        if config_path is not None:
            os.unlink(config_path)


@asynccontextmanager
async def open_a2e_websocket(
    backend: Backend, make_client: MakeClient[C], url: str, *, open_timeout: float = 10.0
) -> AsyncIterator[C]:
    """A client over WebSocket (``ws://host:port/a2e``, or ``wss://``): one message
    per text frame.  A bridge that refuses the connection (HTTP 409: it has an
    agent) raises :class:`ConnectionError`; on the way out the closing handshake
    is given two seconds."""
    address = WebSocketAddress.parse(url)
    stream = await backend.open_tcp_stream(address.hostname, address.port, tls=address.tls)
    framing = A2EWebSocket(client=True, host=address.netloc, target=address.target)
    sender = Sender(backend, stream)
    opened, finished = backend.new_signal(), backend.new_signal()

    def flush() -> None:
        data = framing.data_to_send()
        if data:
            sender.write(data)

    async def send(message: A2EMessage) -> None:
        if sender.broken:
            raise ConnectionError("the bridge closed the connection")
        framing.send_text(encode(message))
        flush()

    client = make_client(send)

    async def read() -> None:
        try:
            while not framing.closed:
                try:
                    data = await stream.receive_some(65536)
                except OSError:
                    data = b""
                for text in framing.receive_data(data):
                    client.feed(decode_text(text))
                if framing.open or framing.closed:
                    opened.set()
                flush()
                if not data:
                    break
        finally:
            opened.set()
            finished.set()
            client.close()

    async def goodbye() -> None:
        async with backend.move_on_after(2):
            await sender.flushed()
            await finished.wait()  # the bridge's close reply

    try:
        async with running(client) as group:
            group.start_soon(sender.run)
            group.start_soon(read)
            flush()
            try:
                async with backend.fail_after(open_timeout):
                    await opened.wait()
            except TimedOut:
                raise client.timeout_error(
                    f"the bridge did not open the WebSocket within {open_timeout:g} s"
                ) from None
            if not framing.open:
                raise ConnectionError(f"the bridge refused the WebSocket (HTTP {framing.refused})")
            try:
                yield client
            finally:
                framing.close(1000, "agent done")
                flush()
                await backend.shielded(goodbye)
    finally:
        await stream.aclose()


@asynccontextmanager
async def open_a2e_direct(make_client: MakeClient[C], bridge: BridgeRunner) -> AsyncIterator[C]:
    """``bridge`` running in this task's event loop and a client talking to it
    directly: messages pass as objects (no encoding, no pipe), a tool call as its
    fields.  On the way out the agent leaves and the bridge stops its servers."""
    client = make_client(bridge.agent_send)
    client.hand_over_call = bridge.agent_tool_call
    inbox = AgentInbox(client)
    async with running(client) as group:
        group.start_soon(bridge.run)
        group.start_soon(inbox.run)
        await bridge.started.wait()
        bridge.connect_agent(inbox.deliver, inbox.answer)
        try:
            yield client
        finally:
            bridge.disconnect_agent()


class A2EOpeners(Generic[C]):
    """A backend's ``open_a2e_*`` functions (its modules name them
    ``open_a2e_stdio = openers.stdio`` and so on), for its ``client`` class and its
    ``bridge`` class (called as ``bridge(host, clock=..., shutdown_grace=...)``)."""

    def __init__(self, client: type[C], bridge: Callable[..., BridgeRunner]) -> None:
        self._client = client
        self._bridge = bridge

    def _maker(self, options: dict[str, Any]) -> MakeClient[C]:
        return lambda send: self._client(send, **options)

    def stdio(
        self,
        command: Sequence[str] | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        bridge_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        shutdown_grace: float = 5.0,
        **options: Any,
    ) -> AbstractAsyncContextManager[C]:
        """Start the bridge (``sansio-mcp bridge``, or ``command``) and talk A2E to it
        over its stdin/stdout.  ``config`` is written to a temporary file and given
        as ``--config``; ``bridge_args`` are more options (``--backend asyncio``).
        ``options`` go to the client (``on_sample``, ``clock``, ...)."""
        backend = self._client.backend
        return open_a2e_bridge(
            backend, self._maker(options), command, config, bridge_args, env, cwd, shutdown_grace
        )

    def ws(self, url: str, **options: Any) -> AbstractAsyncContextManager[C]:
        """A client over WebSocket (``ws://host:port/a2e``)."""
        return open_a2e_websocket(self._client.backend, self._maker(options), url)

    @asynccontextmanager
    async def direct(
        self,
        config: Mapping[str, Any] | BridgeConfig | None = None,
        *,
        host: BridgeHost | None = None,
        shutdown_grace: float = 2.0,
        clock: Callable[[], float] | None = None,
        **options: Any,
    ) -> AsyncIterator[C]:
        """The bridge in this process and this event loop, and a client talking to it
        directly: messages pass as objects (no encoding, no pipe).

        ``clock`` stamps both sides' messages (seconds since the epoch; by default
        the backend's wall clock).  ``config`` is what ``sansio-mcp bridge
        --config`` reads (``servers``, ``roots``, ``elicitation``,
        ``ping_interval``; a dict or a :class:`~sansio_mcp_apps.a2e.BridgeConfig`); or
        give a ready ``host``.  Every
        message is checked as the codec would check it and copied on the way in,
        and the bridge keeps nothing of what it hands out, so neither side ever
        sees the other change a message.  On exit the servers are stopped
        (stdin closed, then SIGTERM, then SIGKILL after ``shutdown_grace``).
        """
        bridge = direct_bridge(
            lambda host: self._bridge(host, clock=clock, shutdown_grace=shutdown_grace),
            config,
            host,
        )
        maker = self._maker({"clock": bridge.clock, **options})
        async with open_a2e_direct(maker, bridge) as client:
            yield client
