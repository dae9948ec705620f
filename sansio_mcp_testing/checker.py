"""Property-based checks of a third-party MCP server (stdio command or URL).

:func:`check_server` (async, Trio) and :func:`run_check` (blocking) connect
to the server at every revision it claims and run the properties in
:data:`PROPERTIES`; the :class:`~sansio_mcp_testing.report.Report` lists each
violation with the exact JSON lines that reproduce it and the Hypothesis
seed, plus everything that was skipped and why.

Safety by default: tools annotated ``destructiveHint: true`` are not called
unless ``allow_destructive`` or ``allow`` says so (``read_only`` calls only
tools annotated ``readOnlyHint: true``); ``deny`` is never called; a stdio
server runs in a fresh temporary directory with a minimal environment; each
call has a timeout.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from sansio_mcp import (
    ConnectionClosedError,
    MCPError,
    ProtocolError,
    RequestTimeout,
)
from sansio_mcp._stdio import StderrLines, safe_environment
from sansio_mcp._versions import (
    ALL_REVISIONS,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    REVISIONS,
    Era,
)
from sansio_mcp.runtime._client import ClientHandlers
from trio_adapters._process import PIPE, stop_process
from trio_adapters._runner import TrioRunner, TrioSessionHost
from trio_adapters._util import unwrap_single_exception
from trio_adapters.client import Client, start_client

from ._recorder import LockedSendStream, Recorder, RecordingClientSession, SchemaProblem
from .report import PropertyResult, Report, Skip, Violation
from .schemas import find_schema_dir

__all__ = ["CheckOptions", "PROPERTIES", "check_server", "run_check"]

#: The properties, in the order they run.
PROPERTIES: dict[str, str] = {
    "initialize": "initialize/discover works at each revision the server claims",
    "schema": "every message the server sends validates against the official schema "
    "of the negotiated revision",
    "tool-schemas": "every tool's inputSchema (and outputSchema) is a valid JSON Schema",
    "valid-arguments": "calls with generated valid arguments never give a protocol error "
    "(tool failures are isError results); structured results match the outputSchema",
    "invalid-arguments": "calls with invalid arguments (or an unknown tool) give an isError "
    "result or -32602",
    "malformed-jsonrpc": "malformed JSON-RPC gets the right error code and the server keeps "
    "serving",
    "unknown-method": "an unknown method gets -32601",
    "pagination": "list cursors are stable, never loop, and a bogus cursor gets -32602",
    "stateful": "random interleavings of lists, reads, prompts, safe tool calls, pings and "
    "cancellations on one session: every request answered or cleanly cancelled, every "
    "message schema-valid, lists stable between list_changed notifications",
    "responsive": "every request is answered within the timeout",
    "survival": "the server survives the whole run",
}

_PROBE_TOOL = "sansio-mcp-check-no-such-tool"
_MAX_PAGES = 200
_MAX_SCHEMA_VIOLATIONS = 25


@attrs.define
class CheckOptions:
    """What to check and how carefully."""

    #: Revisions to try (None: every revision the library knows; checked where claimed).
    protocol_versions: Sequence[str] | None = None
    #: Generated examples per tool and property.
    examples: int = 20
    #: Hypothesis seed (None: a random one, reported).
    seed: int | None = None
    allow_destructive: bool = False
    #: Tools called even if annotated destructive.
    allow: Sequence[str] = ()
    #: Tools never called.
    deny: Sequence[str] = ()
    #: Call only tools annotated ``readOnlyHint: true``.
    read_only: bool = False
    #: Seconds per request.
    timeout: float = 10.0
    #: Where the official schemas are (see :func:`~sansio_mcp_testing.schemas.find_schema_dir`).
    schema_dir: str | None = None
    #: Extra environment variables for a stdio server (on top of a minimal environment).
    env: Mapping[str, str] = attrs.field(factory=dict)
    #: Working directory of a stdio server (None: a fresh temporary directory, removed after).
    cwd: str | None = None
    #: Only these properties (None: all).
    properties: Sequence[str] | None = None
    #: Examples and steps per example of the stateful property (kept small: it is slow).
    stateful_examples: int = 5
    stateful_steps: int = 10
    #: Called with a line of progress (for a terminal).
    progress: Callable[[str], None] | None = None


class _PropertyFailed(Exception):
    def __init__(self, message: str, transcript: list[str], details: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.transcript = transcript
        self.details = details


class _ServerGone(Exception):
    pass


@attrs.define
class _Connection:
    client: Client
    session: RecordingClientSession
    host: TrioSessionHost
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


def _handlers(workdir: str) -> ClientHandlers:
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


class Checker:
    """One run of the properties against one server."""

    def __init__(self, target: Sequence[str] | str, options: CheckOptions) -> None:
        self.command: list[str] | None = (
            None if isinstance(target, str) else _absolute_command(list(target))
        )
        self.url: str | None = target if isinstance(target, str) else None
        self.options = options
        self.seed = options.seed if options.seed is not None else random.getrandbits(32)
        wanted = list(options.properties or PROPERTIES)
        unknown = [p for p in wanted if p not in PROPERTIES]
        if unknown:
            raise ValueError(f"unknown properties {unknown}; known: {list(PROPERTIES)}")
        self.enabled = set(wanted)
        self.report = Report(
            target=" ".join(self.command) if self.command else str(self.url),
            seed=self.seed,
            options={
                "examples": options.examples,
                "timeout": options.timeout,
                "allow_destructive": options.allow_destructive,
                "allow": list(options.allow),
                "deny": list(options.deny),
                "read_only": options.read_only,
                "protocol_versions": list(options.protocol_versions or []) or "all claimed",
            },
        )
        for name, description in PROPERTIES.items():
            status = "passed" if name in self.enabled else "skipped"
            self.report.properties[name] = PropertyResult(name, description, status)
            if name not in self.enabled:
                self.report.properties[name].reason = "not selected"
        self._schema_seen: set[str] = set()
        #: Recorder line numbers of schema-invalid messages (for the stateful property).
        self._schema_problem_seqs: list[int] = []
        self._schema_checks = 0
        self._last_stderr: list[str] = []
        self._tools_cache: list[dict[str, Any]] | None = None
        self.workdir = ""
        schema_dir = find_schema_dir(options.schema_dir)
        self.schema_dir = str(schema_dir) if schema_dir else None
        if self.schema_dir is None and "schema" in self.enabled:
            self._skip_property(
                "schema",
                "the official schemas were not found: pass schema_dir or set MCP_SCHEMA_DIR",
            )

    # Reporting -----------------------------------------------------------------------

    def _say(self, text: str) -> None:
        if self.options.progress is not None:
            self.options.progress(text)

    def _skip_property(self, name: str, reason: str) -> None:
        result = self.report.properties[name]
        result.status = "skipped"
        result.reason = reason
        self.enabled.discard(name)

    def _count(self, name: str, n: int = 1) -> None:
        self.report.properties[name].checks += n

    def _violate(
        self,
        name: str,
        message: str,
        transcript: list[str],
        *,
        revision: str | None,
        tool: str | None = None,
        severity: str = "error",
        **details: Any,
    ) -> None:
        if name not in PROPERTIES:
            raise KeyError(name)
        self.report.properties[name].status = "failed"
        self.report.violations.append(
            Violation(
                property=name,
                message=message,
                revision=revision,
                tool=tool,
                severity=severity,
                seed=self.seed,
                transcript=transcript,
                details=details,
            )
        )
        self._say(f"  ! {name}: {message}")

    def _skip(self, what: str, reason: str, revision: str | None = None) -> None:
        skip = Skip(what, reason, revision)
        if skip not in self.report.skipped:  # several properties skip the same tool
            self.report.skipped.append(skip)

    # Connections ----------------------------------------------------------------------

    @asynccontextmanager
    async def _connect(self, revision: str) -> AsyncIterator[_Connection]:
        era = REVISIONS[revision].era
        recorder = Recorder(revision, schema_dir=self.schema_dir, on_problem=self._schema_problem)
        handlers = _handlers(self.workdir)
        session = RecordingClientSession(
            capabilities=handlers.capabilities(),
            client_info={"name": "sansio-mcp-check", "version": "0.1.0"},
            protocol_version=revision,
            mode="modern" if era is Era.MODERN else "legacy",
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
    ) -> AsyncIterator[_Connection]:
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
        self._last_stderr = []
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
                conn: _Connection | None = None
                try:
                    client = await start_client(runner, session, handlers, self.options.timeout)
                    await runner.flush()  # notifications/initialized belongs to the setup
                    conn = _Connection(
                        client, session, runner, recorder, revision, raw, process, tail
                    )
                    conn.setup_end = recorder.seq
                    yield conn
                finally:
                    await stop_process(process, grace=1.0)
                    nursery.cancel_scope.cancel()
                    death = conn.death if conn is not None else None
                    if death is not None:
                        death.details["exit_status"] = process.returncode
                        death.details["stderr"] = list(tail)
                        death.message += f" (exit status {process.returncode})"
        finally:
            if process.returncode is None:
                await stop_process(process, grace=0)
            self._last_stderr = list(tail)[-5:]

    @asynccontextmanager
    async def _connect_http(
        self,
        session: RecordingClientSession,
        recorder: Recorder,
        handlers: ClientHandlers,
        revision: str,
    ) -> AsyncIterator[_Connection]:
        from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
        from trio_adapters.http_client import _HTTPClientHost

        assert self.url is not None
        transport = StreamableHTTPClient(Endpoint.parse(self.url), session)
        host = _HTTPClientHost(session, transport, handlers, max_body=16 << 20, ssl_context=None)
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            try:
                client = await start_client(host, session, handlers, self.options.timeout)
                await host.flush()
                conn = _Connection(client, session, host, recorder, revision)
                conn.setup_end = recorder.seq
                yield conn
                with trio.CancelScope(shield=True):
                    await host.end_session()
            finally:
                session.close()
                host.driver.process_events()
                nursery.cancel_scope.cancel()

    def _schema_problem(self, problem: SchemaProblem) -> None:
        self._schema_problem_seqs.append(problem.line.seq)
        if "schema" not in self.enabled:
            return
        key = f"{problem.revision}|{problem.problems[0][:120]}"
        if key in self._schema_seen:
            return
        self._schema_seen.add(key)
        if len(self._schema_seen) > _MAX_SCHEMA_VIOLATIONS:
            return
        transcript = [problem.request.render()] if problem.request is not None else []
        transcript.append(problem.line.render())
        self._violate(
            "schema",
            "; ".join(problem.problems),
            transcript,
            revision=problem.revision,
        )

    # The run ---------------------------------------------------------------------------

    async def run(self) -> Report:
        started = time.monotonic()
        owns_workdir = self.options.cwd is None
        self.workdir = self.options.cwd or tempfile.mkdtemp(prefix="sansio-mcp-check-")
        self.report.workdir = self.workdir
        try:
            for revision in self._candidates():
                await self._run_revision(revision)
            if not self.report.revisions_checked:
                self._violate(
                    "initialize",
                    "the server could not be initialized at any revision",
                    [],
                    revision=None,
                )
            self._finish_schema_counts()
        finally:
            self.report.duration = time.monotonic() - started
            if owns_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        return self.report

    def _candidates(self) -> list[str]:
        wanted = list(self.options.protocol_versions or ALL_REVISIONS)
        unknown = [v for v in wanted if v not in REVISIONS]
        if unknown:
            raise ValueError(f"unknown revisions {unknown}; known: {list(REVISIONS)}")
        # Newest first: the revision most servers speak best is tried first.
        return sorted(wanted, reverse=True)

    def _finish_schema_counts(self) -> None:
        result = self.report.properties["schema"]
        result.checks = self._schema_checks
        if "schema" in self.enabled and result.status != "failed" and not result.checks:
            result.status, result.reason = "skipped", "no message was checked"

    async def _run_revision(self, revision: str) -> None:
        self._say(f"[{revision}] connecting")
        try:
            async with self._connect(revision) as conn:
                negotiated = conn.session.protocol_version
                self._count("initialize")
                if negotiated != revision:
                    self._skip(
                        f"revision {revision}",
                        f"not claimed: the server answered initialize with {negotiated}",
                        revision,
                    )
                    self._schema_checks += conn.recorder.schema_checks
                    return
                self.report.revisions_checked.append(revision)
                if not self.report.server_info:
                    self.report.server_info = dict(conn.client.server_info)
                self._say(f"[{revision}] initialized ({conn.client.server_info.get('name')})")
                await self._run_properties(conn)
                self._schema_checks += conn.recorder.schema_checks
                await self._check_survival(conn, "the end of the run")
        except (MCPError, ProtocolError, OSError) as exc:
            self._not_claimed(revision, exc)
        except _ServerGone:
            pass

    def _not_claimed(self, revision: str, exc: BaseException) -> None:
        era = REVISIONS[revision].era
        start = "server/discover" if era is Era.MODERN else "initialize"
        if isinstance(exc, RequestTimeout):
            reason = f"{start} got no answer within {self.options.timeout}s"
        elif isinstance(exc, OSError):
            reason = f"could not start or reach the server: {exc}"
        else:
            reason = f"{start} failed: {exc}"
        if self._last_stderr:
            reason += " (server stderr: " + " | ".join(self._last_stderr)[-400:] + ")"
        self._skip(f"revision {revision}", f"not claimed: {reason}", revision)
        self._say(f"[{revision}] not claimed ({reason})")

    async def _run_properties(self, first: _Connection) -> None:
        conn: _Connection | None = first
        steps: list[tuple[str, Callable[[_Connection], Awaitable[None]]]] = [
            ("tool-schemas", self._tool_schemas),
            ("valid-arguments", self._valid_arguments),
            ("invalid-arguments", self._invalid_arguments),
            ("pagination", self._pagination),
            ("stateful", self._stateful),
            ("unknown-method", self._unknown_method),
            ("malformed-jsonrpc", self._malformed),
        ]
        self._tools_cache = None
        for name, step in steps:
            if name not in self.enabled:
                continue
            assert conn is not None
            if not conn.alive:
                return
            self._say(f"[{conn.revision}] {name}")
            try:
                await step(conn)
            except _ServerGone:
                return

    async def _check_survival(self, conn: _Connection, when: str) -> None:
        if conn.dead:
            return  # already reported
        self._count("survival")
        if conn.alive:
            try:
                await conn.client.ping(timeout=self.options.timeout)
                self._count("responsive")
                return
            except RequestTimeout:
                self._violate(
                    "responsive",
                    f"ping at {when} got no answer within {self.options.timeout}s",
                    conn.transcript(conn.recorder.seq - 1),
                    revision=conn.revision,
                )
                return
            except MCPError as exc:
                if not isinstance(exc, ConnectionClosedError):
                    return  # answered (with an error): alive
        self._gone(conn, when)

    def _gone(self, conn: _Connection, when: str, start: int | None = None) -> None:
        conn.dead = True
        begin = start if start is not None else max(conn.setup_end, conn.recorder.seq - 4)
        self._violate(
            "survival",
            f"the server died during {when}",
            conn.transcript(begin),
            revision=conn.revision,
            stderr=list(conn.stderr_tail),
            exit_status=None,
        )
        # The exit status and the last stderr lines are filled in once it is reaped.
        conn.death = self.report.violations[-1]

    # Requests ---------------------------------------------------------------------------

    async def _request(
        self, conn: _Connection, method: str, params: dict[str, Any] | None, what: str
    ) -> tuple[str, Any, list[str]]:
        """("result", result) | ("error", MCPError) | ("timeout", None); raises _ServerGone."""
        start = conn.recorder.seq
        try:
            result = await conn.client.request(
                method, params, timeout=self.options.timeout, fresh=True
            )
            outcome: tuple[str, Any] = ("result", result)
        except RequestTimeout:
            transcript = conn.transcript(start)
            tool_call = method == "tools/call"
            self._violate(
                "responsive",
                f"{what}: no answer within {self.options.timeout}s"
                + (
                    " (the call was cancelled; a tool may legitimately run this long)"
                    if tool_call
                    else ""
                ),
                transcript,
                revision=conn.revision,
                severity="warning" if tool_call else "error",
                tool=(params or {}).get("name") if tool_call else None,
            )
            return "timeout", None, transcript
        except ConnectionClosedError:
            self._gone(conn, what, start)
            raise _ServerGone() from None
        except MCPError as error:
            outcome = ("error", error)
        self._count("responsive")
        return outcome[0], outcome[1], conn.transcript(start)

    async def _tools(self, conn: _Connection) -> list[dict[str, Any]]:
        if "tools" not in conn.client.server_capabilities:
            return []
        kind, value, _ = await self._request(conn, "tools/list", None, "tools/list")
        if kind != "result":
            return []
        tools: list[dict[str, Any]] = list(value.get("tools") or [])
        cursor = value.get("nextCursor")
        pages = 1
        seen: set[str] = set()
        while isinstance(cursor, str) and cursor not in seen and pages < _MAX_PAGES:
            seen.add(cursor)
            kind, value, _ = await self._request(
                conn, "tools/list", {"cursor": cursor}, "tools/list"
            )
            if kind != "result":
                break
            tools.extend(value.get("tools") or [])
            cursor = value.get("nextCursor")
            pages += 1
        return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]

    def _callable(
        self, tools: list[dict[str, Any]], revision: str, *, record: bool = True
    ) -> list[dict[str, Any]]:
        allowed: list[dict[str, Any]] = []
        options = self.options
        for tool in tools:
            name = tool["name"]
            annotations = (
                tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
            )
            assert isinstance(annotations, dict)
            reason = None
            if name in options.deny:
                reason = "denied (--deny)"
            elif name in options.allow:
                reason = None
            elif options.read_only and annotations.get("readOnlyHint") is not True:
                reason = "not annotated readOnlyHint: true (read-only run)"
            elif annotations.get("destructiveHint") is True and not options.allow_destructive:
                reason = "annotated destructiveHint: true (use --allow-destructive or --allow)"
            if reason is None:
                allowed.append(tool)
            elif record:
                self._skip(f"tool {name}", reason, revision)
        return allowed

    async def _tool_list(self, conn: _Connection) -> list[dict[str, Any]]:
        if self._tools_cache is None:
            self._tools_cache = await self._tools(conn)
            self.report.tools.setdefault(conn.revision, [t["name"] for t in self._tools_cache])
        return self._tools_cache

    # Properties --------------------------------------------------------------------------

    async def _tool_schemas(self, conn: _Connection) -> None:
        import jsonschema

        for tool in await self._tool_list(conn):
            for key in ("inputSchema", "outputSchema"):
                schema = tool.get(key)
                if schema is None:
                    continue
                self._count("tool-schemas")
                problem = _schema_problem(schema, jsonschema)
                if (
                    problem is None
                    and key == "inputSchema"
                    and not (isinstance(schema, dict) and schema.get("type") == "object")
                ):
                    problem = 'an inputSchema must have "type": "object"'
                if problem is not None:
                    self._violate(
                        "tool-schemas",
                        f"{key} of tool {tool['name']!r} is not a valid JSON Schema: {problem}",
                        [json.dumps({key: schema})[:2000]],
                        revision=conn.revision,
                        tool=tool["name"],
                    )

    async def _valid_arguments(self, conn: _Connection) -> None:
        from .strategies import from_schema

        tools = self._callable(await self._tool_list(conn), conn.revision)
        for tool in tools:
            converted = from_schema(tool.get("inputSchema") or {"type": "object"})
            if converted.unsupported:
                self._skip(
                    f"tool {tool['name']}: part of its inputSchema",
                    "generated by filtering, not by construction: "
                    + "; ".join(converted.unsupported),
                    conn.revision,
                )
            await self._hypothesis(
                conn, tool, converted.strategy, "valid-arguments", self._expect_success
            )

    def _expect_success(self, tool: dict[str, Any], kind: str, value: Any) -> str | None:
        if kind == "error":
            assert isinstance(value, MCPError)
            return (
                f"a call with valid arguments got a protocol error {value.code} "
                f"({value.message!r}): tool failures must be isError results"
            )
        if kind == "result":
            return _structured_problem(tool, value)
        return None

    async def _invalid_arguments(self, conn: _Connection) -> None:
        from .strategies import from_schema

        tools = self._callable(await self._tool_list(conn), conn.revision)
        if tools or "tools" in conn.client.server_capabilities:
            kind, value, transcript = await self._request(
                conn, "tools/call", {"name": _PROBE_TOOL, "arguments": {}}, "call an unknown tool"
            )
            self._count("invalid-arguments")
            problem = self._expect_rejection({"name": _PROBE_TOOL}, kind, value)
            if problem is not None:
                self._violate(
                    "invalid-arguments",
                    f"calling an unknown tool: {problem}",
                    transcript,
                    revision=conn.revision,
                    tool=_PROBE_TOOL,
                )
        for tool in tools:
            converted = from_schema(tool.get("inputSchema") or {"type": "object"})
            if converted.invalid is None:
                self._skip(
                    f"tool {tool['name']}: invalid arguments",
                    converted.invalid_reason or "none could be made",
                    conn.revision,
                )
                continue
            await self._hypothesis(
                conn, tool, converted.invalid, "invalid-arguments", self._expect_rejection
            )

    def _expect_rejection(self, tool: dict[str, Any], kind: str, value: Any) -> str | None:
        if kind == "result":
            if value.get("isError") is True:
                return None
            return "invalid arguments were accepted (no isError result, no -32602 error)"
        if kind == "error":
            assert isinstance(value, MCPError)
            if value.code == -32602:
                return None
            return f"invalid arguments got error {value.code} ({value.message!r}), not -32602"
        return None

    async def _hypothesis(
        self,
        conn: _Connection,
        tool: dict[str, Any],
        strategy: Any,
        prop: str,
        judge: Callable[[dict[str, Any], str, Any], str | None],
    ) -> None:
        """Run one property over generated arguments, shrinking a failure to a minimal call."""
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hypothesis_seed
        from hypothesis.errors import FailedHealthCheck, Unsatisfiable

        name = tool["name"]
        token = trio.lowlevel.current_trio_token()
        gone: list[bool] = []
        timed_out: list[Any] = []

        async def call(arguments: Any) -> tuple[str, Any, list[str]]:
            return await self._request(
                conn, "tools/call", {"name": name, "arguments": arguments}, f"tools/call {name}"
            )

        def body(arguments: Any) -> None:
            if gone or timed_out:
                return
            try:
                kind, value, transcript = trio.from_thread.run(call, arguments, trio_token=token)
            except _ServerGone:
                gone.append(True)
                return
            if kind == "timeout":
                timed_out.append(arguments)
                return
            self._count(prop)
            problem = judge(tool, kind, value)
            if problem is not None:
                raise _PropertyFailed(problem, transcript, {"arguments": arguments})

        test = settings(
            max_examples=max(1, self.options.examples),
            database=None,
            deadline=None,
            derandomize=False,
            report_multiple_bugs=False,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )(hypothesis_seed(self.seed)(given(strategy)(body)))  # type: ignore[no-untyped-call]

        def run() -> _PropertyFailed | str | None:
            try:
                test()
            except _PropertyFailed as failure:
                return failure
            except (Unsatisfiable, FailedHealthCheck) as exc:
                return f"could not generate arguments: {str(exc).splitlines()[0]}"
            return None

        outcome = await trio.to_thread.run_sync(run)
        if gone:
            raise _ServerGone()
        if timed_out:
            self._skip(
                f"tool {name}: rest of {prop}",
                f"stopped after a call timed out (arguments {json.dumps(timed_out[0])[:200]})",
                conn.revision,
            )
        if isinstance(outcome, _PropertyFailed):
            self._violate(
                prop,
                f"tool {name!r}: {outcome.message}",
                outcome.transcript,
                revision=conn.revision,
                tool=name,
                **outcome.details,
            )
        elif isinstance(outcome, str):
            self._skip(f"tool {name}: {prop}", outcome, conn.revision)

    async def _pagination(self, conn: _Connection) -> None:
        caps = conn.client.server_capabilities
        lists = [
            ("tools/list", "tools", "tools"),
            ("prompts/list", "prompts", "prompts"),
            ("resources/list", "resources", "resources"),
            ("resources/templates/list", "resourceTemplates", "resources"),
        ]
        for method, key, capability in lists:
            if capability not in caps:
                continue
            await self._walk_pages(conn, method, key)
            # A bogus cursor SHOULD get -32602.
            params: dict[str, Any] = {"cursor": "sansio-mcp-check-bogus-cursor"}
            kind, value, transcript = await self._request(conn, method, params, f"{method} bogus")
            self._count("pagination")
            if kind == "result":
                self._violate(
                    "pagination",
                    f"{method} accepted a cursor it never issued (SHOULD be -32602)",
                    transcript,
                    revision=conn.revision,
                    severity="warning",
                )
            elif kind == "error" and value.code != -32602:
                self._violate(
                    "pagination",
                    f"{method} answered a bogus cursor with {value.code}, not -32602",
                    transcript,
                    revision=conn.revision,
                    severity="warning",
                )

    async def _walk_pages(self, conn: _Connection, method: str, key: str) -> None:
        first_walk: list[tuple[str | None, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        start = conn.recorder.seq
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            kind, value, transcript = await self._request(conn, method, params, method)
            if kind != "result":
                return
            self._count("pagination")
            first_walk.append((cursor, _page_items(value, key)))
            next_cursor = value.get("nextCursor")
            if next_cursor is None:
                break
            if not isinstance(next_cursor, str):
                return  # the schema property reports it
            if next_cursor in seen:
                self._violate(
                    "pagination",
                    f"{method} returned cursor {next_cursor!r} twice (a pagination loop)",
                    conn.transcript(start),
                    revision=conn.revision,
                )
                return
            seen.add(next_cursor)
            cursor = next_cursor
        else:
            self._violate(
                "pagination",
                f"{method} did not end after {_MAX_PAGES} pages",
                [],
                revision=conn.revision,
            )
            return
        # Stability: every cursor, asked again, gives the same page.
        for cursor, items in first_walk:
            params = {"cursor": cursor} if cursor is not None else None
            begin = conn.recorder.seq
            kind, value, transcript = await self._request(conn, method, params, method)
            if kind != "result":
                self._violate(
                    "pagination",
                    f"{method} refused cursor {cursor!r} the second time it was used",
                    transcript,
                    revision=conn.revision,
                )
                return
            self._count("pagination")
            if _page_items(value, key) != items:
                self._violate(
                    "pagination",
                    f"{method} with cursor {cursor!r} gave a different page the second time",
                    conn.transcript(begin),
                    revision=conn.revision,
                    cursor=cursor,
                )
                return

    async def _stateful(self, conn: _Connection) -> None:
        from .stateful import run_stateful

        # The same safety settings as the other properties (skips already reported
        # when valid-arguments ran).
        record = "valid-arguments" not in self.enabled
        tools = self._callable(await self._tool_list(conn), conn.revision, record=record)
        await run_stateful(
            self,
            conn,
            tools,
            max_examples=self.options.stateful_examples,
            step_count=self.options.stateful_steps,
        )

    async def _unknown_method(self, conn: _Connection) -> None:
        params: dict[str, Any] = {}
        if REVISIONS[conn.revision].era is Era.MODERN:
            params = {}  # the session adds the per-request _meta
        start = conn.recorder.seq
        request_id = conn.session.send_request(
            "sansio-mcp-check/no-such-method",
            params,
            experimental=True,
            now=trio.current_time(),
            timeout=self.options.timeout,
        )
        outcome: tuple[str, Any]
        try:
            await conn.host.wait_for(request_id, timed=True)
            outcome = ("result", None)
        except RequestTimeout:
            outcome = ("timeout", None)
        except ConnectionClosedError:
            self._gone(conn, "an unknown-method request", start)
            raise _ServerGone() from None
        except MCPError as error:
            outcome = ("error", error)
        self._count("unknown-method")
        transcript = conn.transcript(start)
        if outcome[0] == "timeout":
            self._violate(
                "unknown-method",
                f"an unknown method got no answer within {self.options.timeout}s",
                transcript,
                revision=conn.revision,
            )
        elif outcome[0] == "result":
            self._violate(
                "unknown-method",
                "an unknown method got a result",
                transcript,
                revision=conn.revision,
            )
        elif isinstance(outcome[1], MCPError) and outcome[1].code != -32601:
            self._violate(
                "unknown-method",
                f"an unknown method got error {outcome[1].code}, not -32601",
                transcript,
                revision=conn.revision,
            )

    async def _malformed(self, conn: _Connection) -> None:
        if conn.raw is None:
            self._skip(
                "malformed-jsonrpc",
                "raw malformed lines are only sent over stdio",
                conn.revision,
            )
            return
        modern = REVISIONS[conn.revision].era is Era.MODERN
        meta = {
            "_meta": {
                META_PROTOCOL_VERSION: conn.revision,
                META_CLIENT_CAPABILITIES: {},
            }
        }
        tools_params = dict(meta) if modern else {}
        probes: list[tuple[str, str, Any, set[int]]] = [
            ("a JSON string", '"just a string"', None, {-32600}),
            ("an empty batch", "[]", None, {-32600}),
            (
                "a method that is a number",
                '{"jsonrpc":"2.0","id":"probe-4","method":42}',
                "probe-4",
                {-32600},
            ),
            (
                'jsonrpc "1.0"',
                json.dumps(
                    {
                        "jsonrpc": "1.0",
                        "id": "probe-5",
                        "method": "tools/list",
                        "params": tools_params,
                    }
                ),
                "probe-5",
                {-32600},
            ),
            (
                "params that are a string",
                '{"jsonrpc":"2.0","id":"probe-6","method":"tools/list","params":"oops"}',
                "probe-6",
                {-32600, -32602},
            ),
            (
                "an id that is an object",
                '{"jsonrpc":"2.0","id":{"nested":1},"method":"tools/list"}',
                None,
                {-32600},
            ),
            # Last: the probe most likely to take a fragile server down.
            ("not JSON", '{"jsonrpc": "2.0", "id": "probe-1", "method": "ping"', None, {-32700}),
        ]
        for what, text, probe_id, codes in probes:
            start = conn.recorder.seq
            conn.recorder.sent_bytes(text.encode("utf-8"))
            try:
                await conn.raw.send_all(text.encode("utf-8") + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._gone(conn, f"malformed input ({what})", start)
                raise _ServerGone() from None

            def answers(line: Any, probe_id: Any = probe_id) -> bool:
                obj = line.obj
                if not isinstance(obj, dict) or "error" not in obj or "method" in obj:
                    return False
                return bool(obj.get("id") == probe_id)

            # The server keeps serving: a ping right behind the probe is answered.  Once
            # it is, an answer to the probe has had its chance (stdio is ordered).
            alive = True
            try:
                await conn.client.ping(timeout=self.options.timeout)
            except RequestTimeout:
                alive = False
            except ConnectionClosedError:
                self._gone(conn, f"malformed input ({what})", start)
                raise _ServerGone() from None
            except MCPError:
                pass
            grace = 0.5 if alive else 0.0
            answer = await conn.recorder.wait_for(answers, after=start, timeout=grace)
            self._count("malformed-jsonrpc")
            transcript = conn.transcript(start)
            if answer is None:
                self._violate(
                    "malformed-jsonrpc",
                    f"{what}: no error response (expected {_codes(codes)} with id "
                    f"{json.dumps(probe_id)})",
                    transcript,
                    revision=conn.revision,
                )
            else:
                code = (answer.obj.get("error") or {}).get("code")
                if code not in codes:
                    self._violate(
                        "malformed-jsonrpc",
                        f"{what}: error {code}, expected {_codes(codes)}",
                        transcript,
                        revision=conn.revision,
                    )
            if not alive:
                self._violate(
                    "malformed-jsonrpc",
                    f"after {what}, the server stopped answering (a ping got no answer "
                    f"within {self.options.timeout}s)",
                    transcript,
                    revision=conn.revision,
                )
                return


def _absolute_command(command: list[str]) -> list[str]:
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


def _codes(codes: set[int]) -> str:
    return " or ".join(str(c) for c in sorted(codes))


def _page_items(result: dict[str, Any], key: str) -> str:
    return json.dumps(result.get(key), sort_keys=True)


def _schema_problem(schema: Any, jsonschema: Any) -> str | None:
    if not isinstance(schema, dict):
        return "not an object"
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        cls(schema).is_valid({})  # resolves local references lazily; surfaces bad $refs early
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"at {where}: {exc.message[:200]}"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def _structured_problem(tool: dict[str, Any], result: dict[str, Any]) -> str | None:
    """A tool with an outputSchema MUST return conforming structuredContent."""
    schema = tool.get("outputSchema")
    if not isinstance(schema, dict) or result.get("isError") is True:
        return None
    if "structuredContent" not in result:
        return "the tool has an outputSchema but its result has no structuredContent"
    import jsonschema

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        error = jsonschema.exceptions.best_match(
            cls(schema).iter_errors(result["structuredContent"])
        )
    except Exception:
        return None  # an invalid outputSchema is the tool-schemas property's business
    if error is not None:
        return f"structuredContent does not match the outputSchema: {error.message[:200]}"
    return None


async def _drain(stream: trio.abc.ReceiveStream, tail: deque[str]) -> None:
    lines = StderrLines()
    try:
        while chunk := await stream.receive_some(65536):
            tail.extend(lines.feed(chunk))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    tail.extend(lines.feed(b""))


async def check_server(target: Sequence[str] | str, options: CheckOptions | None = None) -> Report:
    """Check the server run by ``target`` (a command line) or at ``target`` (a URL)."""
    checker = Checker(target, options or CheckOptions())
    return await checker.run()


def run_check(target: Sequence[str] | str, options: CheckOptions | None = None) -> Report:
    """:func:`check_server`, blocking (runs its own Trio loop)."""
    return trio.run(check_server, target, options)
