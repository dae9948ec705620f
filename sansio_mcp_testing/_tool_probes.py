"""The checker's tool probes: the tool-schemas, valid-arguments and
invalid-arguments properties, over generated arguments (Hypothesis) shrunk to a
minimal failing call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import trio

from sansio_mcp import MCPError

from ._connection import Connection, ServerGone
from ._findings import Findings, PropertyFailure
from ._options import CheckOptions
from ._probe import MAX_PAGES, Probe

__all__ = ["ToolProbes"]

#: A tool name no server has: calling it must be rejected like invalid arguments.
_PROBE_TOOL = "sansio-mcp-check-no-such-tool"


class ToolProbes(Probe):
    """The tool properties over one connection."""

    def __init__(self, findings: Findings, options: CheckOptions, conn: Connection) -> None:
        super().__init__(findings, options, conn)
        self._tools_cache: list[dict[str, Any]] | None = None

    async def _list_tools(self) -> list[dict[str, Any]]:
        if "tools" not in self.conn.client.server_capabilities:
            return []
        kind, value, _ = await self.request("tools/list", None, "tools/list")
        if kind != "result":
            return []
        tools: list[dict[str, Any]] = list(value.get("tools") or [])
        cursor = value.get("nextCursor")
        pages = 1
        seen: set[str] = set()
        while isinstance(cursor, str) and cursor not in seen and pages < MAX_PAGES:
            seen.add(cursor)
            kind, value, _ = await self.request("tools/list", {"cursor": cursor}, "tools/list")
            if kind != "result":
                break
            tools.extend(value.get("tools") or [])
            cursor = value.get("nextCursor")
            pages += 1
        return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]

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
                self.findings.skip(f"tool {name}", reason, self.conn.revision)
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
        import jsonschema

        for tool in await self.listed():
            for key in ("inputSchema", "outputSchema"):
                schema = tool.get(key)
                if schema is None:
                    continue
                self.findings.count("tool-schemas")
                problem = _schema_problem(schema, jsonschema)
                if (
                    problem is None
                    and key == "inputSchema"
                    and not (isinstance(schema, dict) and schema.get("type") == "object")
                ):
                    problem = 'an inputSchema must have "type": "object"'
                if problem is not None:
                    self.findings.violate(
                        "tool-schemas",
                        f"{key} of tool {tool['name']!r} is not a valid JSON Schema: {problem}",
                        [json.dumps({key: schema})[:2000]],
                        revision=self.conn.revision,
                        tool=tool["name"],
                    )

    async def valid_arguments(self) -> None:
        from .strategies import from_schema

        tools = self.allowed(await self.listed())
        for tool in tools:
            converted = from_schema(tool.get("inputSchema") or {"type": "object"})
            if converted.unsupported:
                self.findings.skip(
                    f"tool {tool['name']}: part of its inputSchema",
                    "generated by filtering, not by construction: "
                    + "; ".join(converted.unsupported),
                    self.conn.revision,
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
            return _structured_problem(tool, value)
        return None

    async def invalid_arguments(self) -> None:
        from .strategies import from_schema

        tools = self.allowed(await self.listed())
        if tools or "tools" in self.conn.client.server_capabilities:
            kind, value, transcript = await self.request(
                "tools/call", {"name": _PROBE_TOOL, "arguments": {}}, "call an unknown tool"
            )
            self.findings.count("invalid-arguments")
            problem = self._expect_rejection({"name": _PROBE_TOOL}, kind, value)
            if problem is not None:
                self.findings.violate(
                    "invalid-arguments",
                    f"calling an unknown tool: {problem}",
                    transcript,
                    revision=self.conn.revision,
                    tool=_PROBE_TOOL,
                )
        for tool in tools:
            converted = from_schema(tool.get("inputSchema") or {"type": "object"})
            if converted.invalid is None:
                self.findings.skip(
                    f"tool {tool['name']}: invalid arguments",
                    converted.invalid_reason or "none could be made",
                    self.conn.revision,
                )
                continue
            await self._hypothesis(
                tool, converted.invalid, "invalid-arguments", self._expect_rejection
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
            return await self.request(
                "tools/call", {"name": name, "arguments": arguments}, f"tools/call {name}"
            )

        def body(arguments: Any) -> None:
            if gone or timed_out:
                return
            try:
                kind, value, transcript = trio.from_thread.run(call, arguments, trio_token=token)
            except ServerGone:
                gone.append(True)
                return
            if kind == "timeout":
                timed_out.append(arguments)
                return
            self.findings.count(prop)
            problem = judge(tool, kind, value)
            if problem is not None:
                raise PropertyFailure(problem, transcript, {"arguments": arguments})

        test = settings(
            max_examples=max(1, self.options.examples),
            database=None,
            deadline=None,
            derandomize=False,
            report_multiple_bugs=False,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )(hypothesis_seed(self.findings.seed)(given(strategy)(body)))  # type: ignore[no-untyped-call]

        def run() -> PropertyFailure | str | None:
            try:
                test()
            except PropertyFailure as failure:
                return failure
            except (Unsatisfiable, FailedHealthCheck) as exc:
                return f"could not generate arguments: {str(exc).splitlines()[0]}"
            return None

        outcome = await trio.to_thread.run_sync(run)
        if gone:
            raise ServerGone()
        if timed_out:
            self.findings.skip(
                f"tool {name}: rest of {prop}",
                f"stopped after a call timed out (arguments {json.dumps(timed_out[0])[:200]})",
                self.conn.revision,
            )
        if isinstance(outcome, PropertyFailure):
            self.findings.violate(
                prop,
                f"tool {name!r}: {outcome.message}",
                outcome.transcript,
                revision=self.conn.revision,
                tool=name,
                **outcome.details,
            )
        elif isinstance(outcome, str):
            self.findings.skip(f"tool {name}: {prop}", outcome, self.conn.revision)


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
