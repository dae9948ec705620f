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

import os
import random
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence

import trio

from sansio_mcp import (
    ALL_REVISIONS,
    REVISIONS,
    ConnectionClosedError,
    Era,
    MCPError,
    ProtocolError,
    RequestTimeout,
    does_not_speak,
)

from ._connection import (
    Connection,
    Connector,
    Lifeline,
    ServerGone,
    absolute_command,
    describe_exit,
)
from ._findings import Findings
from ._options import PROPERTIES, CheckOptions
from ._protocol_probes import ProtocolProbes
from ._tool_probes import ToolProbes
from .report import Report
from .schemas import load_schema, missing_schema_message
from .stateful import run_stateful

__all__ = ["CheckOptions", "PROPERTIES", "check_server", "run_check"]


class Checker:
    """One run of the properties against one server: a connection per revision the
    server claims, on which the selected properties run in turn (see
    :meth:`_run_properties`); everything found goes into one :class:`Findings`."""

    def __init__(self, target: Sequence[str] | str, options: CheckOptions) -> None:
        self.command: list[str] | None = (
            None if isinstance(target, str) else absolute_command(list(target))
        )
        self.url: str | None = target if isinstance(target, str) else None
        self.options = options
        self.seed = options.seed if options.seed is not None else random.getrandbits(32)
        wanted = list(options.properties or PROPERTIES)
        unknown = [p for p in wanted if p not in PROPERTIES]
        if unknown:
            raise ValueError(f"unknown properties {unknown}; known: {list(PROPERTIES)}")
        self.report = Report(
            target=" ".join(self.command) if self.command else str(self.url),
            seed=self.seed,
            options={
                "examples": options.examples,
                "timeout": options.timeout,
                "call_budget": options.call_budget,
                "stateful_examples": options.stateful_examples,
                "allow_destructive": options.allow_destructive,
                "allow": list(options.allow),
                "deny": list(options.deny),
                "read_only": options.read_only,
                "protocol_versions": list(options.protocol_versions or []) or "all claimed",
            },
        )
        self.findings = Findings(
            self.report,
            seed=self.seed,
            enabled=wanted,
            progress=options.progress,
            status=options.status,
        )
        self.workdir = ""
        self.schema_dir = options.schema_dir
        #: Why the latest revision tried was not claimed (said when none was).
        self._last_refusal = ""
        #: Revisions the server answered with an error: (revision, method, error).
        self._refusals: list[tuple[str, str, MCPError]] = []

    async def run(self) -> Report:
        started = time.monotonic()
        owns_workdir = self.options.cwd is None
        self.workdir = self.options.cwd or tempfile.mkdtemp(prefix="sansio-mcp-check-")
        self.report.workdir = self.workdir
        try:
            candidates = self._candidates()
            self._note_missing_schemas(candidates)
            if self.command is not None and self.options.parallel and len(candidates) > 1:
                await self._run_in_parallel(candidates)
            else:
                connector = self._connector(self.workdir)
                for revision in candidates:
                    await self._run_revision(connector, revision)
            if not self.report.revisions_checked:
                why = f" (the last attempt: {self._last_refusal})" if self._last_refusal else ""
                self.findings.violate(
                    "initialize",
                    f"the server could not be initialized at any revision{why}",
                    [],
                    revision=None,
                )
            self._say_what_it_speaks()
            self.findings.finish()
        finally:
            self.report.duration = time.monotonic() - started
            if owns_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        return self.report

    def _connector(self, workdir: str) -> Connector:
        return Connector(
            command=self.command,
            url=self.url,
            options=self.options,
            workdir=workdir,
            schema_dir=self.schema_dir,
            on_schema_problem=self.findings.schema_problem,
            on_wire_problem=self.findings.wire_problem,
            say=self.findings.say,
        )

    async def _run_in_parallel(self, candidates: list[str]) -> None:
        """Each revision on a server of its own (a process each, in a directory of
        its own unless ``cwd`` was given), all at once; what each found is merged in the order of
        ``candidates``, so the report reads as a run one after the other would."""
        parts: list[Checker] = []
        async with trio.open_nursery() as nursery:
            for revision in candidates:
                part = Checker(self.command or [], self.options)
                part.seed = self.seed
                part.findings.seed = self.seed
                part.findings.enabled = set(self.findings.enabled)
                part.schema_dir = self.schema_dir
                # A directory of our own: one each (files one server leaves are not
                # another's); the caller's cwd: theirs, shared, as they asked.
                workdir = self.workdir
                if self.options.cwd is None:
                    workdir = os.path.join(self.workdir, revision)
                    os.makedirs(workdir, exist_ok=True)
                parts.append(part)
                nursery.start_soon(part._run_revision, part._connector(workdir), revision)
        for part in parts:
            self.findings.merge(part.report)
            self._refusals += part._refusals
            self._last_refusal = part._last_refusal or self._last_refusal

    def _candidates(self) -> list[str]:
        wanted = list(self.options.protocol_versions or ALL_REVISIONS)
        unknown = [v for v in wanted if v not in REVISIONS]
        if unknown:
            raise ValueError(f"unknown revisions {unknown}; known: {list(REVISIONS)}")
        # Newest first: the revision most servers speak best is tried first.
        return sorted(wanted, reverse=True)

    def _note_missing_schemas(self, revisions: list[str]) -> None:
        """Say which revisions' messages cannot be validated, and how to fix that."""
        if "schema" not in self.findings.enabled:
            return
        missing = [r for r in revisions if load_schema(r, self.schema_dir) is None]
        for revision in missing:
            self.findings.skip("schema", missing_schema_message(revision), revision)
            self.findings.say(f"  ! schema: {missing_schema_message(revision)}")
        if missing and len(missing) == len(revisions):
            self.findings.skip_property("schema", missing_schema_message(", ".join(missing)))

    async def _run_revision(self, connector: Connector, revision: str) -> None:
        findings = self.findings
        findings.say(f"[{revision}] connecting")
        async with trio.open_nursery() as nursery:
            line = Lifeline(connector, revision, nursery)
            try:
                conn = await line.open()
            except (MCPError, ProtocolError, OSError) as exc:
                self._not_claimed(revision, exc, connector)
                return
            except ServerGone:
                return
            try:
                await self._run_connected(line, conn)
            finally:
                await line.close()
                findings.count("schema", line.schema_checks)
                if line.unrecorded:
                    findings.skip(
                        "transcript",
                        f"{line.unrecorded} messages from the server "
                        f"({line.unrecorded_bytes} bytes) not recorded: over the transcript's "
                        f"bound of {self.options.max_recorded_messages} messages or "
                        f"{self.options.max_recorded_bytes} bytes per connection "
                        "(--max-recorded-messages, --max-recorded-bytes); they were checked",
                        revision,
                    )

    async def _run_connected(self, line: Lifeline, conn: Connection) -> None:
        findings, revision = self.findings, line.revision
        negotiated = conn.session.protocol_version
        findings.count("initialize")
        if negotiated != revision:
            findings.skip(
                f"revision {revision}",
                f"not claimed: the server answered initialize with {negotiated}",
                revision,
            )
            return
        self.report.revisions_checked.append(revision)
        if not self.report.server_info:
            self.report.server_info = dict(conn.client.server_info)
        findings.say(f"[{revision}] initialized ({conn.client.server_info.get('name')})")
        if await self._run_properties(line):
            await self._check_survival(line.conn, "the end of the run")

    def _not_claimed(self, revision: str, exc: BaseException, connector: Connector) -> None:
        era = REVISIONS[revision].era
        start = "server/discover" if era is Era.STATELESS else "initialize"
        stderr = connector.last_stderr
        if connector.last_exit_status is not None:
            # Whatever the session said (closed before a response, or not even sent),
            # the cause is that the server exited.
            reason = (
                f"the server exited before answering {start} ("
                + describe_exit(connector.last_exit_status, stderr)
                + ")"
            )
            stderr = []
        elif isinstance(exc, RequestTimeout):
            reason = f"{start} got no answer within {self.options.timeout}s"
        elif isinstance(exc, MCPError) and not isinstance(exc, ConnectionClosedError):
            # An answer, not a failure: what it speaks instead is added at the end.
            self._refusals.append((revision, start, exc))
            reason = does_not_speak(revision, start, exc)
        elif isinstance(exc, OSError):
            reason = f"could not start or reach the server: {exc}"
        else:
            reason = f"{start} failed: {exc}"
        if stderr:
            reason += " (server stderr: " + " | ".join(stderr)[-400:] + ")"
        self._last_refusal = reason
        self.findings.skip(f"revision {revision}", f"not claimed: {reason}", revision)
        self.findings.say(f"[{revision}] not claimed ({reason})")

    def _say_what_it_speaks(self) -> None:
        """A revision the server refused is explained with those it speaks."""
        spoken = self.report.revisions_checked or None  # none: the initialize violation
        for revision, method, error in self._refusals:
            for skip in self.report.skipped:
                if skip.what == f"revision {revision}":
                    skip.reason = "not claimed: " + does_not_speak(revision, method, error, spoken)

    async def _run_properties(self, line: Lifeline) -> bool:
        """Run the selected properties; a server that dies or falls silent is restarted
        and the next property goes on.  False: it could not be brought back."""
        tools = ToolProbes(self.findings, self.options, line)
        protocol = ProtocolProbes(self.findings, self.options, line)
        steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("tool-schemas", tools.tool_schemas),
            ("listings", protocol.listings),
            ("valid-arguments", tools.valid_arguments),
            ("invalid-arguments", tools.invalid_arguments),
            ("pagination", protocol.pagination),
            ("stateful", lambda: self._stateful(tools)),
            ("unknown-method", protocol.unknown_method),
            ("wire", protocol.wire),
            ("malformed-jsonrpc", protocol.malformed_jsonrpc),
        ]
        for name, step in steps:
            if name not in self.findings.enabled:
                continue
            if not line.conn.alive and not await self._revive(line, name):
                return False
            self.findings.step(line.revision, name)
            try:
                await step()
            except ServerGone:
                continue  # reported; revived before the next step
            except (MCPError, ProtocolError) as exc:
                # A failure of our own client (an answer it could not take, say): the
                # property stops, the run goes on.
                self.findings.skip(f"{name}: the rest", f"stopped: {exc}", line.revision)
            if not await self._answering(line.conn) and not await self._revive(line, name):
                return False
        return line.conn.alive or await self._revive(line, "the end of the run")

    async def _answering(self, conn: Connection) -> bool:
        """Whether the server still answers a ping (one that fell silent during a
        property, already reported there, is restarted for the next)."""
        if not conn.alive:
            return False
        try:
            await conn.client.ping(timeout=self.options.timeout)
        except RequestTimeout:
            return False
        except MCPError as exc:
            return not isinstance(exc, ConnectionClosedError)
        return True

    async def _revive(self, line: Lifeline, before: str) -> bool:
        try:
            await line.restart()
        except ServerGone:
            self.findings.skip(
                f"revision {line.revision}: from {before} on",
                "the server could not be restarted "
                + (f"(restarted {line.restarts} times already)" if line.restarts else ""),
                line.revision,
            )
            return False
        return True

    async def _stateful(self, tools: ToolProbes) -> None:
        # The same safety settings as the other properties (skips already reported
        # when valid-arguments ran).
        record = "valid-arguments" not in self.findings.enabled
        allowed = [
            tool
            for tool in tools.allowed(await tools.listed(), record=record)
            if tool["name"] not in self.findings.over_budget
        ]
        await run_stateful(
            self.findings,
            tools.conn,
            allowed,
            timeout=self.options.timeout,
            max_examples=self.options.stateful_examples,
            step_count=self.options.stateful_steps,
        )

    async def _check_survival(self, conn: Connection, when: str) -> None:
        if conn.dead:
            return  # already reported
        self.findings.count("survival")
        if conn.alive:
            try:
                await conn.client.ping(timeout=self.options.timeout)
                self.findings.count("responsive")
                return
            except RequestTimeout:
                self.findings.violate(
                    "responsive",
                    f"ping at {when} got no answer within {self.options.timeout}s",
                    conn.transcript(conn.recorder.seq - 1),
                    revision=conn.revision,
                )
                return
            except MCPError as exc:
                if not isinstance(exc, ConnectionClosedError):
                    return  # answered (with an error): alive
        self.findings.server_gone(conn, when)


async def check_server(target: Sequence[str] | str, options: CheckOptions | None = None) -> Report:
    """Check the server run by ``target`` (a command line) or at ``target`` (a URL)."""
    checker = Checker(target, options or CheckOptions())
    return await checker.run()


def run_check(target: Sequence[str] | str, options: CheckOptions | None = None) -> Report:
    """:func:`check_server`, blocking (runs its own Trio loop)."""
    return trio.run(check_server, target, options)
