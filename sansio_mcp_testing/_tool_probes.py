"""The checker's tool probes: the tool-schemas, valid-arguments and
invalid-arguments properties, over generated arguments (Hypothesis) shrunk to a
minimal failing call."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import trio

from sansio_mcp import ErrorCode, MCPError, RequestTimeout
from sansio_mcp.capabilities import lacking_capabilities
from sansio_mcp.tasks import task_only_refusal

from ._connection import Lifeline, ServerGone, describe_exit
from ._findings import Findings, PropertyFailure
from ._options import CheckOptions
from ._probe import Probe
from ._regex import unsupported
from ._validation import (
    UNEVALUATED_UNCHECKED,
    BudgetExceeded,
    checked_validator_for,
    time_budget,
    unevaluated_unchecked,
)
from .schemas import load_schema

__all__ = ["ToolProbes"]

#: A tool name no server has: calling it must be rejected like invalid arguments.
_PROBE_TOOL = "sansio-mcp-check-no-such-tool"
#: Why a tool that only runs as a task is not called: the checker does not declare
#: the tasks extension (nor sends 2025-11-25's ``params.task``).
#: The one revision with -32042 (URL elicitation required): 2026-07-28 may not emit it.
_URL_ELICITATION_ERROR = "2025-11-25"
_TASK_ONLY = "it only runs as a task (the tasks extension), which the checker does not ask for"


def _capability_refusal(error: MCPError, revision: str, declared: dict[str, Any]) -> str | None:
    """Why ``error`` rightly refused a call: it needs a client capability the checker
    did not declare (-32021 naming it, or 2025-11-25's -32042 for URL elicitation).
    None: it is no such refusal."""
    data = error.data if isinstance(error.data, dict) else {}
    if error.code == ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY:
        lacking = lacking_capabilities(data.get("requiredCapabilities"), declared)
    elif error.code == ErrorCode.URL_ELICITATION_REQUIRED and revision == _URL_ELICITATION_ERROR:
        lacking = lacking_capabilities({"elicitation": {"url": {}}}, declared)
    else:
        return None
    if not lacking:
        return None
    return (
        f"it needs client capability {json.dumps(lacking)}, which the checker does not "
        f"declare at {revision}"
    )


class ToolProbes(Probe):
    """The tool properties over one connection."""

    def __init__(self, findings: Findings, options: CheckOptions, line: Lifeline) -> None:
        super().__init__(findings, options, line)
        self._tools_cache: list[dict[str, Any]] | None = None

    async def _list_tools(self) -> list[dict[str, Any]]:
        if "tools" not in self.conn.client.server_capabilities:
            return []
        walk = await self.walk("tools/list", "tools")
        return [t for t in walk.items if isinstance(t, dict) and isinstance(t.get("name"), str)]

    def allowed(self, tools: list[dict[str, Any]], *, record: bool = True) -> list[dict[str, Any]]:
        """The tools the safety settings let the checker call (the others are recorded
        as skipped, unless ``record`` is false: another property already did)."""
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
                self.skip(f"tool {name}", reason)
        return allowed

    async def listed(self) -> list[dict[str, Any]]:
        """The server's tools (every page), asked once per connection."""
        if self._tools_cache is None:
            self._tools_cache = await self._list_tools()
            self.findings.report.tools.setdefault(
                self.conn.revision, [t["name"] for t in self._tools_cache]
            )
        return self._tools_cache

    async def tool_schemas(self) -> None:
        revision = self.conn.revision
        for tool in await self.listed():
            for key in ("inputSchema", "outputSchema"):
                schema = tool.get(key)
                if schema is None:
                    continue
                self.findings.count("tool-schemas")
                try:
                    problem = schema_problem(schema, revision, budget=self.options.timeout)
                except BudgetExceeded:
                    self.skip(f"tool {tool['name']}: its {key}", self._too_slow(key))
                    continue
                if problem is None and _must_be_object(key, revision) and not _is_object(schema):
                    problem = f'an {key} must have "type": "object" at its root'
                for pattern, why in _unrunnable_patterns(schema):
                    self.skip(
                        f"tool {tool['name']}: pattern {pattern[:100]!r} of its {key}",
                        f"not checked: {why} (only patterns that run in linear time are)",
                    )
                if unevaluated_unchecked(schema):
                    where = f"tool {tool['name']}: unevaluatedProperties of its {key}"
                    self.skip(where, UNEVALUATED_UNCHECKED)
                if problem is not None:
                    self.violate(
                        "tool-schemas",
                        f"{key} of tool {tool['name']!r} is not a valid JSON Schema object "
                        f"schema: {problem}",
                        [json.dumps({key: schema})[:2000]],
                        tool=tool["name"],
                    )

    def _callable(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools whose inputSchema arguments can be made for (the others are
        skipped: tool-schemas reports them)."""
        found = []
        for tool in tools:
            schema = tool.get("inputSchema")
            execution = tool.get("execution")
            if isinstance(execution, dict) and execution.get("taskSupport") == "required":
                self.skip(f"tool {tool['name']}", _TASK_ONLY)  # 2025-11-25 says so up front
            elif schema is None:
                found.append(tool)
            else:
                try:
                    problem = schema_problem(schema, None, budget=self.options.timeout)
                except BudgetExceeded:
                    self.skip(f"tool {tool['name']}", self._too_slow("inputSchema"))
                    continue
                if _is_object(schema) and problem is None:
                    found.append(tool)
                else:
                    why = "its inputSchema is unusable (see tool-schemas)"
                    self.skip(f"tool {tool['name']}", why)
        return found

    def _too_slow(self, key: str) -> str:
        return (
            f"not checked: validating a value against its {key} took over "
            f"{self.options.timeout:g}s (--timeout)"
        )

    async def valid_arguments(self) -> None:
        from .strategies import from_schema

        tools = self._callable(self.allowed(await self.listed()))
        for tool in tools:
            if self._skipped_for_time(tool, "valid-arguments"):
                continue
            converted = from_schema(tool.get("inputSchema") or {"type": "object"})
            if converted.unsupported:
                self.skip(
                    f"tool {tool['name']}: part of its inputSchema",
                    "generated by filtering, not by construction: "
                    + "; ".join(converted.unsupported),
                )
            await self._hypothesis(
                tool, converted.strategy, "valid-arguments", self._expect_success
            )

    def _expect_success(self, tool: dict[str, Any], kind: str, value: Any) -> str | None:
        if kind == "error":
            assert isinstance(value, MCPError)
            return (
                f"a call with valid arguments got a protocol error {value.code} "
                f"({value.message!r}): tool failures must be isError results"
            )
        if kind == "result":
            problem = _content_problem(value, self.conn.revision, self.options.schema_dir)
            if problem is not None:
                return problem
            try:
                with time_budget(self.options.timeout):
                    return _structured_problem(tool, value)
            except BudgetExceeded:
                self.skip(
                    f"tool {tool['name']}: its structuredContent", self._too_slow("outputSchema")
                )
        return None

    async def invalid_arguments(self) -> None:
        from .strategies import from_schema

        tools = self._callable(self.allowed(await self.listed()))
        if tools or "tools" in self.conn.client.server_capabilities:
            kind, value, transcript = await self.request(
                "tools/call", {"name": _PROBE_TOOL, "arguments": {}}, "call an unknown tool"
            )
            self.findings.count("invalid-arguments")
            problem = self._expect_rejection({"name": _PROBE_TOOL}, kind, value)
            if problem is not None:
                self.violate(
                    "invalid-arguments",
                    f"calling an unknown tool: {problem}",
                    transcript,
                    tool=_PROBE_TOOL,
                )
        for tool in tools:
            if self._skipped_for_time(tool, "invalid-arguments"):
                continue
            converted = from_schema(tool.get("inputSchema") or {"type": "object"})
            if converted.invalid is None:
                self.skip(
                    f"tool {tool['name']}: invalid arguments",
                    converted.invalid_reason or "none could be made",
                )
                continue
            await self._hypothesis(
                tool, converted.invalid, "invalid-arguments", self._expect_rejection
            )

    def _skipped_for_time(self, tool: dict[str, Any], prop: str) -> bool:
        """Whether ``tool`` went over the per-call budget earlier in the run (then
        ``prop`` is skipped for it, said once per revision)."""
        if tool["name"] not in self.findings.over_budget:
            return False
        self.skip(
            f"tool {tool['name']}: {prop}",
            "skipped for time (a call went over the per-call budget)",
        )
        return True

    def over_budget(self, tool: str, arguments: Any) -> None:
        """A call of ``tool`` went over the per-call budget: skipped for time from now on."""
        self.findings.over_budget.add(tool)
        self.skip(
            f"tool {tool}",
            f"skipped for time: a call took over the per-call budget of "
            f"{self.options.call_budget:g}s (arguments {json.dumps(arguments)[:200]}); "
            "--call-budget S or --thorough lets calls run up to --timeout",
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
            what = " (internal error)" if value.code == -32603 else ""
            return (
                f"invalid arguments got error {value.code}{what} ({value.message!r}), "
                "not -32602 or an isError result"
            )
        return None

    async def _hypothesis(
        self,
        tool: dict[str, Any],
        strategy: Any,
        prop: str,
        judge: Callable[[dict[str, Any], str, Any], str | None],
    ) -> None:
        """Run one property over generated arguments, shrinking a failure to a minimal
        call.  A call that kills the server is a failure too: the server is restarted
        for each further example, so the crash shrinks like any other failure."""
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hypothesis_seed
        from hypothesis.errors import FailedHealthCheck, Unsatisfiable

        name = tool["name"]
        token = trio.lowlevel.current_trio_token()
        run = _Run(self.options.examples)

        async def call(arguments: Any) -> tuple[str, Any, list[str]]:
            return await self.request(
                "tools/call",
                {"name": name, "arguments": arguments},
                f"tools/call {name}",
                report_death=False,
                budget=self.options.call_budget,
            )

        what = f"tools/call {name}"
        declared = self.conn.session.declared_capabilities

        def body(arguments: Any) -> None:
            if run.stopped:
                return
            run.done += 1
            self.findings.tick(f"{prop} {name}", run.done, run.planned)
            try:
                kind, value, transcript = trio.from_thread.run(call, arguments, trio_token=token)
            except ServerGone as gone:
                raise run.crashed(*self._crash(what, gone, arguments, token)) from None
            if kind == "unanswered":
                run.timed_out = arguments
                run.stopped = True
                return
            if kind == "over-budget":
                run.over_budget = arguments
                run.stopped = True
                return
            if kind == "error" and task_only_refusal(value):
                run.task_only = run.stopped = True
                return
            if kind == "error" and run.refused is None:
                run.refused = _capability_refusal(value, self.conn.revision, declared)
                if run.refused is not None:
                    run.stopped = True
                    return
            self.findings.count(prop)
            problem = judge(tool, kind, value)
            if problem is not None:
                raise run.failed(PropertyFailure(problem, transcript, {"arguments": arguments}))

        test = settings(
            max_examples=max(1, self.options.examples),
            database=None,
            deadline=None,
            derandomize=False,
            report_multiple_bugs=False,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )(hypothesis_seed(self.findings.seed)(given(strategy)(body)))  # type: ignore[no-untyped-call]

        def run_test() -> PropertyFailure | str | None:
            try:
                test()
            except PropertyFailure as failure:
                return failure
            except (Unsatisfiable, FailedHealthCheck) as exc:
                return f"could not generate arguments: {str(exc).splitlines()[0]}"
            except Exception:
                # Hypothesis calls a failure that did not recur flaky (a crash whose
                # restart budget ran out, say): the smallest failure seen stands.
                if run.failure is None:
                    raise
            return run.failure

        outcome = await trio.to_thread.run_sync(run_test)
        if isinstance(outcome, PropertyFailure):
            how = outcome.details.pop("how", None)
            found = self.findings.violate(
                "survival" if how is not None else prop,
                outcome.message if how is not None else f"tool {name!r}: {outcome.message}",
                outcome.transcript,
                revision=self.conn.revision,
                tool=name,
                announce=how is None,
                **outcome.details,
            )
            if how is not None and found.message == found.key:
                found.message += f" ({how})"  # the exit differs from run to run
                self.findings.say(f"  ! survival: {found.message}")
        elif isinstance(outcome, str):
            self.skip(f"tool {name}: {prop}", outcome)
        if run.task_only:
            self.skip(f"tool {name}", _TASK_ONLY)
        if run.refused is not None:
            self.skip(f"tool {name}: {prop}", run.refused)
        if run.gone:
            raise ServerGone()
        if not self.conn.alive:
            await self.line.restart()
        if run.over_budget is not None:
            self.over_budget(name, run.over_budget)
            await self._still_answering()
        if run.timed_out is not None:
            self.skip(
                f"tool {name}: rest of {prop}",
                "stopped after a call got no answer (see responsive; arguments "
                f"{json.dumps(run.timed_out)[:200]})",
            )
            await self._still_answering()

    def _crash(
        self, what: str, gone: ServerGone, arguments: Any, token: trio.lowlevel.TrioToken
    ) -> tuple[PropertyFailure, bool]:
        """A call that killed the server, as a failure; and whether the server was
        restarted for more examples.  Runs in Hypothesis's thread."""
        dead = self.conn
        try:
            trio.from_thread.run(lambda: self.line.restart(counted=False), trio_token=token)
            restarted = True
        except ServerGone:
            restarted = False
        status = self.line.exit_status
        stderr = list(dead.stderr_tail)
        if dead.process is None:
            how = "the connection closed"
        elif status is None:
            how = "it closed its output but kept running, until the checker stopped it"
        else:
            how = describe_exit(status, stderr)
        failure = PropertyFailure(
            f"the server died during {what}",
            gone.transcript or [],
            {"arguments": arguments, "how": how, "exit_status": status, "stderr": stderr},
        )
        return failure, restarted

    async def _still_answering(self) -> None:
        """After a call got no answer: a server that no longer answers a ping is
        restarted (the remaining checks go on)."""
        try:
            await self.conn.client.ping(timeout=self.options.timeout)
        except RequestTimeout:
            await self.line.restart()
        except MCPError:
            if not self.conn.alive:
                await self.line.restart()


class _Run:
    """The state of one Hypothesis run over a tool."""

    #: Restarts of a server killed by a call, per run (each shrink step may need one).
    MAX_CRASH_RESTARTS = 20

    def __init__(self, planned: int) -> None:
        self.planned = max(1, planned)
        self.done = 0
        self.stopped = False
        self.timed_out: Any = None
        #: The arguments of a call that went over the per-call budget.
        self.over_budget: Any = None
        #: The tool answered that it only runs as a task.
        self.task_only = False
        #: Why the tool refused for a capability the checker lacks (None: it did not).
        self.refused: str | None = None
        self.failure: PropertyFailure | None = None
        self.crash_restarts = 0
        #: The server died and could not be restarted.
        self.gone = False

    def failed(self, failure: PropertyFailure) -> PropertyFailure:
        """Hypothesis only tries smaller examples once one failed: the latest failure
        is the smallest."""
        self.failure = failure
        return failure

    def crashed(self, failure: PropertyFailure, restarted: bool) -> PropertyFailure:
        self.crash_restarts += 1
        if not restarted:
            self.gone = True
        if not restarted or self.crash_restarts > self.MAX_CRASH_RESTARTS:
            self.stopped = True  # no more calls: the smallest crash so far stands
        return self.failed(failure)


#: The first revision whose tool schemas default to JSON Schema 2020-12 (before it,
#: no dialect was named; the schemas of those revisions are draft-07 themselves).
_DIALECT_2020_12_FROM = "2025-11-25"
#: The first revision whose outputSchema may be any schema (not only an object one).
_ANY_OUTPUT_SCHEMA_FROM = "2026-07-28"


def schema_problem(schema: Any, revision: str | None, *, budget: float | None = None) -> str | None:
    """Why ``schema`` is no valid JSON Schema in ``revision``'s default dialect (its
    ``$schema`` wins), or None; raises :class:`BudgetExceeded` when validating a
    value against it takes over ``budget`` seconds."""
    import jsonschema

    if not isinstance(schema, dict):
        return "not an object"
    default = (
        jsonschema.Draft7Validator
        if revision is not None and revision < _DIALECT_2020_12_FROM
        else jsonschema.Draft202012Validator
    )
    try:
        cls = checked_validator_for(schema, default)
        cls.check_schema(schema)
        with time_budget(budget if budget is not None else math.inf):
            # Resolves local references lazily: surfaces bad $refs early.
            cls(schema).is_valid({})
    except BudgetExceeded:
        raise
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"at {where}: {exc.message[:200]}"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def _unrunnable_patterns(schema: Any) -> list[tuple[str, str]]:
    """The patterns in ``schema`` (``pattern``, ``patternProperties``) that the checker
    does not run, each with why."""
    found: list[tuple[str, str]] = []
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        if not isinstance(node, dict):
            continue
        patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += list(node["patternProperties"])
        for pattern in patterns:
            why = unsupported(pattern)
            if why is not None and (pattern, why) not in found:
                found.append((pattern, why))
        pending.extend(node.values())
    return found


def _must_be_object(key: str, revision: str) -> bool:
    return key == "inputSchema" or revision < _ANY_OUTPUT_SCHEMA_FROM


def _is_object(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def _content_problem(result: Any, revision: str, schema_dir: str | None) -> str | None:
    """A content block of a type the revision does not know (clients cannot show it)."""
    schema = load_schema(revision, schema_dir)
    content = result.get("content") if isinstance(result, dict) else None
    if schema is None or not isinstance(content, list):
        return None
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(kind, str) and kind not in schema.content_types:
            return (
                f"content block {index} has type {kind!r}, not a content type of the "
                "negotiated revision"
            )
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
        # A backtracking pattern (or nested anyOf) against the server's own result
        # would hold the checker past every timeout.
        cls = checked_validator_for(schema, jsonschema.Draft202012Validator)
        error = jsonschema.exceptions.best_match(
            cls(schema).iter_errors(result["structuredContent"])
        )
    except BudgetExceeded:
        raise
    except Exception:
        return None  # an invalid outputSchema is the tool-schemas property's business
    if error is not None:
        return f"structuredContent does not match the outputSchema: {error.message[:200]}"
    return None
