"""The checker's connections to the server under test: one recorded client
session per revision, over stdio (a sandboxed child process) or Streamable HTTP."""

from __future__ import annotations

import os
import shutil
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from sansio_mcp import ALL_REVISIONS, REVISIONS, Era, StderrLines, safe_environment
from sansio_mcp.runtime import ClientHandlers, HostBase
from trio_adapters._backend import NurseryGroup
from trio_adapters._process import PIPE, stop_process
from trio_adapters._runner import TrioRunner
from trio_adapters._util import unwrap_single_exception
from trio_adapters.client import Client, start_client

from ._options import CheckOptions
from ._recorder import LockedSendStream, Recorder, RecordingClientSession, SchemaProblem
from .report import Violation

__all__ = [
    "Connection",
    "Connector",
    "Lifeline",
    "ServerGone",
    "absolute_command",
    "describe_exit",
]

#: Times a server is restarted at one revision at the most (one that dies on
#: everything must not make the run endless).
MAX_RESTARTS = 12


class ServerGone(Exception):
    """The server died (already reported, unless ``transcript`` is given: the input
    that preceded the death, for the caller to report): this connection's checks stop."""

    def __init__(self, transcript: list[str] | None = None) -> None:
        super().__init__("the server is gone")
        self.transcript = transcript


@attrs.define
class Connection:
    client: Client
    session: RecordingClientSession
    host: HostBase
    recorder: Recorder
    revision: str
    raw: LockedSendStream | None = None
    process: trio.Process | None = None
    stderr_tail: deque[str] = attrs.field(factory=lambda: deque(maxlen=20))
    setup_end: int = 0
    dead: bool = False
    death: Violation | None = None

    @property
    def setup(self) -> list[str]:
        return self.recorder.window(0, self.setup_end)

    def transcript(self, start: int, end: int | None = None) -> list[str]:
        """The handshake lines, then the lines from ``start`` on."""
        return [*self.setup, *self.recorder.window(max(start, self.setup_end), end)]

    @property
    def alive(self) -> bool:
        if self.host.driver.closed:
            return False
        return self.process is None or self.process.returncode is None


def canned_handlers(workdir: str) -> ClientHandlers:
    """Canned answers, so servers can exercise sampling, elicitation and roots."""

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "a canned answer from sansio-mcp check"},
            "model": "sansio-mcp-check",
            "stopReason": "endTurn",
        }

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    return ClientHandlers(
        sampling=sample,
        elicitation=elicit,
        roots=[{"uri": f"file://{workdir}", "name": "sandbox"}],
    )


class Connector:
    """Opens connections to one server: ``command`` (stdio) or ``url`` (HTTP)."""

    def __init__(
        self,
        *,
        command: list[str] | None,
        url: str | None,
        options: CheckOptions,
        workdir: str,
        schema_dir: str | None,
        on_schema_problem: Callable[[SchemaProblem], None],
        say: Callable[[str], None] = lambda text: None,
        on_wire_problem: Callable[[SchemaProblem], None] | None = None,
    ) -> None:
        self.command = command
        self.url = url
        self.options = options
        self.workdir = workdir
        self.schema_dir = schema_dir
        self.on_schema_problem = on_schema_problem
        self.on_wire_problem = on_wire_problem
        #: Progress lines (a death is announced once its exit status is known).
        self.say = say
        #: The last stderr lines of the latest stdio server (to say why it was not reached).
        self.last_stderr: list[str] = []
        #: The exit status of the latest stdio server, when it exited on its own (None:
        #: it was still running when the checker stopped it, or it was not a process).
        self.last_exit_status: int | None = None

    @asynccontextmanager
    async def connect(self, revision: str) -> AsyncIterator[Connection]:
        era = REVISIONS[revision].era
        recorder = Recorder(
            revision,
            schema_dir=self.schema_dir,
            on_problem=self.on_schema_problem,
            on_wire_problem=self.on_wire_problem,
            max_messages=self.options.max_recorded_messages,
            max_bytes=self.options.max_recorded_bytes,
        )
        handlers = canned_handlers(self.workdir)
        session = RecordingClientSession(
            capabilities=handlers.capabilities(),
            client_info={"name": "sansio-mcp-check", "version": "0.1.0"},
            protocol_version=revision,
            mode="stateless" if era is Era.STATELESS else "handshake",
            supported_versions=ALL_REVISIONS,
        )
        session.attach(recorder)
        with unwrap_single_exception():
            if self.command is not None:
                async with self._connect_stdio(session, recorder, handlers, revision) as conn:
                    yield conn
            else:
                async with self._connect_http(session, recorder, handlers, revision) as conn:
                    yield conn

    @asynccontextmanager
    async def _connect_stdio(
        self,
        session: RecordingClientSession,
        recorder: Recorder,
        handlers: ClientHandlers,
        revision: str,
    ) -> AsyncIterator[Connection]:
        assert self.command is not None
        env = safe_environment(os.environ, dict(self.options.env))
        env.setdefault("TMPDIR", self.workdir)
        process = await trio.lowlevel.open_process(
            self.command,
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            env=env,
            cwd=self.options.cwd or self.workdir,
            start_new_session=os.name != "nt",
        )
        assert process.stdin and process.stdout and process.stderr
        tail: deque[str] = deque(maxlen=20)
        self.last_stderr = []
        self.last_exit_status = None
        raw = LockedSendStream(process.stdin)

        async def handle_request(event: Any) -> dict[str, Any]:
            return await handlers.answer(event.method, event.params)

        runner = TrioRunner(
            session,
            raw,
            process.stdout,
            handle_request=handle_request,
            handle_notification=handlers.notify,
            answer_input=handlers.answer,
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_drain, process.stderr, tail)
                await nursery.start(runner.run)
                conn: Connection | None = None
                try:
                    conn = await self._start(runner, session, handlers, recorder, revision)
                    conn.raw, conn.process, conn.stderr_tail = raw, process, tail
                    yield conn
                finally:
                    self.last_exit_status = await _exit_status(process, runner.driver.closed)
                    await stop_process(process, grace=1.0)
                    nursery.cancel_scope.cancel()
                    death = conn.death if conn is not None else None
                    if death is not None:
                        death.details["exit_status"] = process.returncode
                        death.details["stderr"] = list(tail)
                        death.message += " (" + describe_exit(process.returncode, tail) + ")"
                        self.say(f"  ! survival: {death.message}")
        finally:
            if process.returncode is None:
                await stop_process(process, grace=0)
            self.last_stderr = list(tail)[-5:]

    @asynccontextmanager
    async def _connect_http(
        self,
        session: RecordingClientSession,
        recorder: Recorder,
        handlers: ClientHandlers,
        revision: str,
    ) -> AsyncIterator[Connection]:
        from sansio_mcp.http import Endpoint, StreamableHTTPClient
        from trio_adapters.http_client import HTTPClientHost

        assert self.url is not None
        transport = StreamableHTTPClient(Endpoint.parse(self.url), session)
        host = HTTPClientHost(
            session,
            transport,
            handlers,
            max_body=16 << 20,
            ssl_context=None,
            auth=self.options.auth,
        )
        async with trio.open_nursery() as nursery:
            host.attach(NurseryGroup(nursery))
            try:
                yield await self._start(host, session, handlers, recorder, revision)
                with trio.CancelScope(shield=True):
                    await host.end_session()
            finally:
                session.close()
                host.driver.process_events()
                nursery.cancel_scope.cancel()

    async def _start(
        self,
        host: HostBase,
        session: RecordingClientSession,
        handlers: ClientHandlers,
        recorder: Recorder,
        revision: str,
    ) -> Connection:
        """The handshake on a running host; the recorded lines so far are the setup."""
        client = await start_client(host, session, handlers, self.options.timeout)
        await host.flush()  # notifications/initialized belongs to the setup
        conn = Connection(client, session, host, recorder, revision)
        conn.setup_end = recorder.setup_end = recorder.seq
        return conn


class Lifeline:
    """The connection at one revision, kept open by a task of its own so that any task
    can replace it: when the server dies or falls silent, it is restarted (a stdio
    server) or reconnected (a URL), and the remaining checks go on."""

    def __init__(self, connector: Connector, revision: str, nursery: trio.Nursery) -> None:
        self.connector = connector
        self.revision = revision
        self._nursery = nursery
        self._conn: Connection | None = None
        self._stop = trio.Event()
        self._closed = trio.Event()
        self.restarts = 0
        #: Schema checks made on the connections closed so far.
        self.schema_checks = 0
        #: The server's messages left out of their transcripts (over its bounds) on the
        #: connections closed so far, and their bytes.
        self.unrecorded = 0
        self.unrecorded_bytes = 0
        #: How the latest closed stdio server ended: its exit status, or None when it
        #: was still running (the checker stopped it).
        self.exit_status: int | None = None

    @property
    def conn(self) -> Connection:
        assert self._conn is not None, "open() first"
        return self._conn

    async def open(self) -> Connection:
        """Connect (raises what the handshake raised)."""
        self._stop, self._closed = trio.Event(), trio.Event()
        conn: Connection = await self._nursery.start(self._keep, self._stop, self._closed)
        self._conn = conn
        return conn

    async def _keep(
        self,
        stop: trio.Event,
        closed: trio.Event,
        task_status: trio.TaskStatus[Connection] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        try:
            async with self.connector.connect(self.revision) as conn:
                task_status.started(conn)
                started = True
                await stop.wait()
        except Exception:
            if not started:
                raise
            # Closing a connection whose server is already gone: nothing left to report.
        finally:
            closed.set()

    async def close(self) -> None:
        if self._conn is None:
            return
        self._stop.set()
        await self._closed.wait()
        self.schema_checks += self._conn.recorder.schema_checks
        self.unrecorded += self._conn.recorder.unrecorded
        self.unrecorded_bytes += self._conn.recorder.unrecorded_bytes
        self.exit_status = self.connector.last_exit_status
        self._conn = None

    async def restart(self, *, counted: bool = True) -> Connection:
        """A fresh connection (the old one closed first); raises ServerGone when the
        server cannot be reached again or was restarted too often (``counted``: the
        restarts a crash's shrinking needs are bounded by that run instead)."""
        old = self._conn
        await self.close()
        if counted and self.restarts >= MAX_RESTARTS:
            self._conn = old
            raise ServerGone()
        self.restarts += counted
        self.connector.say(f"[{self.revision}] restarting the server")
        try:
            return await self.open()
        except Exception:
            self._conn = old
            raise ServerGone() from None


def absolute_command(command: list[str]) -> list[str]:
    """The server runs in a temporary directory: the program and relative paths of
    existing files in its arguments are made absolute."""
    if not command:
        raise ValueError("the server command is empty")
    found = []
    for i, arg in enumerate(command):
        if i == 0 and os.sep not in arg:
            found.append(shutil.which(arg) or arg)
        elif not os.path.isabs(arg) and os.path.isfile(arg) and command[i - 1] != "-m":
            found.append(os.path.abspath(arg))
        else:
            found.append(arg)
    return found


def describe_exit(status: int | None, stderr: Iterable[str]) -> str:
    """``exit status 7; its stderr ended: a | b | c`` (the last three lines)."""
    last = [line if len(line) <= 200 else line[:200] + "…" for line in stderr if line.strip()]
    said = f"exit status {status}"
    if last:
        said += "; its stderr ended: " + " | ".join(last[-3:])
    else:
        said += "; nothing on its stderr"
    return said


async def _exit_status(process: trio.Process, output_ended: bool) -> int | None:
    """The process's exit status if it exited on its own: when its output ended
    (the session closed), it is given a moment to be reaped."""
    if output_ended and process.returncode is None:
        with trio.move_on_after(1.0):
            await process.wait()
    return process.returncode


async def _drain(stream: trio.abc.ReceiveStream, tail: deque[str]) -> None:
    lines = StderrLines()
    try:
        while chunk := await stream.receive_some(65536):
            tail.extend(lines.feed(chunk))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    tail.extend(lines.feed(b""))
