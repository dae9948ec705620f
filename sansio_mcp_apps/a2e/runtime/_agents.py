"""The bridge's agent side, backend-neutral: one agent over NDJSON on a byte
stream pair (stdio), or agents over WebSocket one at a time.  An adapter's
listener hands each accepted connection over as a
:class:`~sansio_mcp.runtime.ByteStream`."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Unpack

from sansio_mcp.runtime import ByteStream, ListenOptions, OnBound, Sender

from ...a2e._codec import A2EWebSocket, encode, encode_line
from ...a2e._messages import A2EMessage
from ._runner import AgentSink, BridgeRunner

__all__ = ["AgentServeOptions", "WebSocketAgents", "serve_agent_pipes", "serve_agent_ws"]

logger = logging.getLogger("sansio_mcp_apps.a2e")

_READ_SIZE = 65536


class AgentServeOptions(ListenOptions, total=False):
    """The bridge's ``serve_agent_ws`` keywords: the WebSocket ``path`` (``/a2e``),
    the DNS-rebinding guard's lists, and the keep-alive: a ping after every
    ``ping_interval`` seconds (20; None: never), and an agent that has not answered
    one ``pong_timeout`` seconds later (15) is disconnected, which frees the
    bridge's one agent slot."""

    path: str
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None
    ping_interval: float | None
    pong_timeout: float


async def serve_agent_pipes(bridge: BridgeRunner, send: ByteStream, receive: ByteStream) -> None:
    """Serve one agent over NDJSON (stdio) until its input ends: what it sends goes
    to the host as it arrives, what the host has for it is written at once (what
    the pipe does not take goes from a task; reading waits while much is left)."""
    host, backend = bridge.host, bridge.backend
    sender = Sender(backend, send, lambda: logger.debug("the agent stopped reading"))

    def sink(message: A2EMessage) -> None:
        sender.write(encode_line(message))

    async with backend.open_task_group() as group:
        group.start_soon(sender.run)
        host.agent_connected(bridge.now())
        bridge.attach_agent(sink)
        try:
            while True:
                try:
                    data = await receive.receive_some(_READ_SIZE)
                except OSError:
                    data = b""
                host.receive_agent_data(data, bridge.now())
                bridge.poke()
                if not data:
                    break
                if sender.pending > _READ_SIZE:
                    await sender.flushed()
            await sender.drained(1.0)
        finally:
            bridge.attach_agent(None)
            group.cancel()


class WebSocketAgents:
    """Agents over WebSocket, one at a time: the first whose opening handshake
    succeeds is attached; one that connects meanwhile is refused with HTTP 409.
    One per listener; :meth:`connection` per accepted socket."""

    def __init__(
        self,
        runner: BridgeRunner,
        *,
        path: str = "/a2e",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        ping_interval: float | None = 20.0,
        pong_timeout: float = 15.0,
    ) -> None:
        if ping_interval is not None and ping_interval <= 0:
            raise ValueError("ping_interval must be positive (or None: no pings)")
        if pong_timeout <= 0:
            raise ValueError("pong_timeout must be positive")
        self.runner = runner
        self.busy = False
        self._path = path
        self._allowed_hosts = allowed_hosts
        self._allowed_origins = allowed_origins
        self._ping_interval = ping_interval
        self._pong_timeout = pong_timeout

    async def serve(self, stream: ByteStream) -> None:
        """Serve one accepted connection until it closes."""
        backend = self.runner.backend
        framing = A2EWebSocket(
            client=False,
            path=self._path,
            allowed_hosts=self._allowed_hosts,
            allowed_origins=self._allowed_origins,
        )
        sender = Sender(backend, stream)

        def flush() -> None:
            data = framing.data_to_send()
            if data:
                sender.write(data)

        def send(message: A2EMessage) -> None:
            framing.send_text(encode(message))
            flush()

        agent = self.connection(framing, send)

        async def keep_alive() -> None:
            # A dead or stalled agent would hold the one agent slot for good.
            assert self._ping_interval is not None
            while not framing.closed:
                await backend.sleep(self._ping_interval)
                framing.ping()
                flush()
                await backend.sleep(self._pong_timeout)
                if framing.awaiting_pong and not framing.closed:
                    logger.info(
                        "the agent answered no ping within %g s; disconnecting it",
                        self._pong_timeout,
                    )
                    group.cancel()
                    return

        try:
            async with backend.open_task_group() as group:
                group.start_soon(sender.run)
                if self._ping_interval is not None:
                    group.start_soon(keep_alive)
                try:
                    while not framing.closed and not sender.broken:
                        try:
                            data = await stream.receive_some(_READ_SIZE)
                        except OSError:
                            data = b""
                        agent.received(data)
                        flush()
                        await sender.flushed()
                        if not data:
                            break
                finally:
                    agent.release()
                    flush()

                    async def last_words() -> None:
                        await sender.drained(1.0)

                    await backend.shielded(last_words)
                    group.cancel()
        finally:
            await stream.aclose()

    def connection(self, framing: A2EWebSocket, sink: AgentSink) -> _WebSocketAgent:
        if self.busy:
            framing.refuse_with = 409
        return _WebSocketAgent(self, framing, sink)


class _WebSocketAgent:
    def __init__(self, agents: WebSocketAgents, framing: A2EWebSocket, sink: AgentSink) -> None:
        self._agents = agents
        self._framing = framing
        self._sink = sink
        self._mine = False

    def received(self, data: bytes | bytearray) -> None:
        """Bytes from the socket (``b""`` at its end): messages go to the host."""
        agents, framing, runner = self._agents, self._framing, self._agents.runner
        texts = framing.receive_data(data)
        if framing.open and not self._mine and framing.refused is None and not agents.busy:
            agents.busy = self._mine = True
            runner.host.agent_connected(runner.now())
            runner.attach_agent(self._sink)
        for text in texts:
            runner.host.receive_agent_text(text, runner.now())
        runner.poke()
        if framing.closed:
            self.release()

    def release(self) -> None:
        """This agent is gone (called before the close reply goes out, so the next
        agent may connect at once)."""
        if self._mine:
            self._agents.busy = self._mine = False
            runner = self._agents.runner
            runner.attach_agent(None)
            runner.host.agent_disconnected(runner.now())
            runner.poke()


async def serve_agent_ws(
    bridge: BridgeRunner, on_bound: OnBound, **options: Unpack[AgentServeOptions]
) -> None:
    """Serve agents of ``bridge`` over WebSocket at ``ws://host:port/path`` (by
    default ``127.0.0.1``, any free port, ``/a2e``), one at a time (a second
    concurrent agent is refused with HTTP 409), until cancelled."""
    agents = WebSocketAgents(
        bridge,
        path=options.get("path", "/a2e"),
        allowed_hosts=options.get("allowed_hosts"),
        allowed_origins=options.get("allowed_origins"),
        ping_interval=options.get("ping_interval", 20.0),
        pong_timeout=options.get("pong_timeout", 15.0),
    )
    host, port = options.get("host", "127.0.0.1"), options.get("port", 0)
    await bridge.backend.serve_tcp(agents.serve, host, port, on_bound=on_bound)
