"""The checker's stateful property: a Hypothesis rule-based state machine over
one live session.

Each example interleaves, at random, list requests (walking every page),
reads of listed resources, gets of listed prompts with generated arguments,
calls of the tools the safety settings allow with generated valid arguments,
pings, and cancellations of in-flight calls.  Invariants: every request is
answered (or cleanly cancelled); nothing the server sends is schema-invalid at
the negotiated revision; a list is the same each time it is walked unless a
``list_changed`` notification came in between; the server survives.  A
violation is shrunk to the fewest steps and reported with their transcript.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from sansio_mcp import ConnectionClosedError, MCPError, RequestTimeout

from ._findings import Findings, PropertyFailure

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["run_stateful"]

#: list method -> (result key, capability, list_changed notification)
LISTS: dict[str, tuple[str, str, str]] = {
    "tools/list": ("tools", "tools", "notifications/tools/list_changed"),
    "prompts/list": ("prompts", "prompts", "notifications/prompts/list_changed"),
    "resources/list": ("resources", "resources", "notifications/resources/list_changed"),
    "resources/templates/list": (
        "resourceTemplates",
        "resources",
        "notifications/resources/list_changed",
    ),
}

_MAX_PAGES = 50
#: How long a cancelled call may run before it is cancelled (seconds), drawn from these.
_CANCEL_DELAYS = (0.0, 0.001, 0.01, 0.05)

#: Revisions checked at once run their machines one at a time: Hypothesis reads a
#: machine class's source (``ast.parse``), which CPython 3.11 cannot do in two
#: threads at once ("AST constructor recursion depth mismatch").
_ONE_MACHINE_AT_A_TIME = threading.Lock()


class _Stop(Exception):
    """The server is gone or a tool call timed out: the rest of the run is skipped."""


async def run_stateful(
    findings: Findings,
    conn: Connection,
    tools: list[dict[str, Any]],
    *,
    timeout: float,
    max_examples: int = 5,
    step_count: int = 10,
) -> None:
    """Run the state machine against ``conn``; record what it finds in ``findings``."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st
    from hypothesis.errors import Flaky
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        initialize,
        invariant,
        precondition,
        rule,
        run_state_machine_as_test,
    )

    from .strategies import from_schema

    token = trio.lowlevel.current_trio_token()
    caps = conn.client.server_capabilities
    methods = [m for m, (_, cap, _) in LISTS.items() if cap in caps]
    tool_args = {
        t["name"]: from_schema(t.get("inputSchema") or {"type": "object"}).strategy for t in tools
    }
    stopped: list[str] = []
    failures: list[PropertyFailure] = []
    prop = "stateful"

    def count() -> None:
        findings.count(prop)

    async def request(method: str, params: dict[str, Any] | None) -> tuple[str, Any]:
        start = conn.recorder.seq
        try:
            value = await conn.client.request(method, params, timeout=timeout, fresh=True)
            return "result", value
        except RequestTimeout:
            return "timeout", None
        except ConnectionClosedError:
            findings.server_gone(conn, f"the stateful run ({method})", start)
            raise _Stop("gone") from None
        except MCPError as error:
            return "error", error

    async def cancelled_call(name: str, arguments: Any, delay: float) -> str:
        start = conn.recorder.seq
        outcome = "cancelled"
        try:
            with trio.move_on_after(delay):
                await conn.client.request(
                    "tools/call",
                    {"name": name, "arguments": arguments},
                    timeout=timeout,
                    fresh=True,
                )
                outcome = "answered"
        except RequestTimeout:
            outcome = "timeout"
        except ConnectionClosedError:
            findings.server_gone(conn, f"the stateful run (a cancelled call of {name})", start)
            raise _Stop("gone") from None
        except MCPError:
            outcome = "answered"
        await conn.host.flush()
        return outcome

    def on_trio(fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run(fn, *args, trio_token=token)

    class SessionMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.start = conn.recorder.seq
            #: list method -> (items, recorder seq when walked)
            self.seen: dict[str, tuple[str, int]] = {}
            self.resources: list[str] = []
            self.prompts: list[dict[str, Any]] = []

        def fail(self, message: str, **details: Any) -> None:
            failure = PropertyFailure(message, conn.transcript(self.start), details)
            failures.append(failure)
            raise failure

        def ask(self, method: str, params: dict[str, Any] | None, what: str) -> tuple[str, Any]:
            if stopped:
                return "stopped", None
            start = conn.recorder.seq
            try:
                kind, value = on_trio(request, method, params)
            except _Stop as stop:
                stopped.append(str(stop))
                return "stopped", None
            count()
            if kind == "timeout":
                dropped = conn.recorder.dropped_since(start)
                unanswered = f"{what} got no answer within {timeout}s"
                reason = f"{what}: {dropped}" if dropped else unanswered
                if method == "tools/call" or dropped:
                    stopped.append(reason)
                    return "stopped", None
                self.fail(reason, method=method)
            return kind, value

        def walk(self, method: str) -> None:
            key = LISTS[method][0]
            items: list[Any] = []
            cursor: str | None = None
            for _ in range(_MAX_PAGES):
                kind, value = self.ask(method, {"cursor": cursor} if cursor else None, method)
                if kind != "result" or not isinstance(value, dict):
                    return  # errors and malformed results are other properties' business
                page = value.get(key)
                items.extend(page if isinstance(page, list) else [])
                next_cursor = value.get("nextCursor")
                if not isinstance(next_cursor, str) or next_cursor == cursor:
                    break
                cursor = next_cursor
            else:
                return
            text = json.dumps(items, sort_keys=True)
            now = conn.recorder.seq
            before = self.seen.get(method)
            if before is not None and before[0] != text:
                notice = LISTS[method][2]
                if not _notified(conn, notice, before[1]):
                    self.fail(
                        f"{method} gave a different list the second time, with no "
                        f"{notice} in between",
                        method=method,
                    )
            self.seen[method] = (text, now)
            if method == "resources/list":
                self.resources = [
                    r["uri"] for r in items if isinstance(r, dict) and isinstance(r.get("uri"), str)
                ]
            elif method == "prompts/list":
                self.prompts = [
                    p for p in items if isinstance(p, dict) and isinstance(p.get("name"), str)
                ]

        @initialize()
        def begin(self) -> None:
            # A baseline of every list: later walks are compared with it, and the
            # listed resources and prompts are there to read and get.
            self.start = conn.recorder.seq
            for method in methods:
                self.walk(method)

        @precondition(lambda self: bool(methods))
        @rule(data=st.data())
        def list_something(self, data: Any) -> None:
            self.walk(data.draw(st.sampled_from(methods), label="method"))

        @precondition(lambda self: bool(self.resources))
        @rule(data=st.data())
        def read_resource(self, data: Any) -> None:
            uri = data.draw(st.sampled_from(self.resources), label="uri")
            self.ask("resources/read", {"uri": uri}, f"resources/read {uri}")

        @precondition(lambda self: bool(self.prompts))
        @rule(data=st.data())
        def get_prompt(self, data: Any) -> None:
            prompt = data.draw(st.sampled_from(self.prompts), label="prompt")
            arguments: dict[str, str] = {}
            for arg in prompt.get("arguments") or []:
                if not isinstance(arg, dict) or not isinstance(arg.get("name"), str):
                    continue
                if arg.get("required") or data.draw(st.booleans(), label="optional"):
                    arguments[arg["name"]] = data.draw(
                        st.text(max_size=20), label=f"argument {arg['name']}"
                    )
            params = {"name": prompt["name"], "arguments": arguments}
            self.ask("prompts/get", params, f"prompts/get {prompt['name']}")

        @precondition(lambda self: bool(tools))
        @rule(data=st.data())
        def call_tool(self, data: Any) -> None:
            name = data.draw(st.sampled_from(sorted(tool_args)), label="tool")
            arguments = data.draw(tool_args[name], label="arguments")
            self.ask("tools/call", {"name": name, "arguments": arguments}, f"tools/call {name}")

        @precondition(lambda self: bool(tools))
        @rule(data=st.data())
        def cancel_call(self, data: Any) -> None:
            if stopped:
                return
            name = data.draw(st.sampled_from(sorted(tool_args)), label="tool")
            arguments = data.draw(tool_args[name], label="arguments")
            delay = data.draw(st.sampled_from(_CANCEL_DELAYS), label="cancel after")
            try:
                outcome = on_trio(cancelled_call, name, arguments, delay)
            except _Stop as stop:
                stopped.append(str(stop))
                return
            count()
            if outcome == "timeout":
                stopped.append(f"tools/call {name} got no answer within {timeout}s")
                return
            # The server keeps serving after a cancellation.
            self.ask(
                "ping" if not conn.session.is_stateless else "server/discover",
                None,
                f"a ping after cancelling tools/call {name}",
            )

        @rule()
        def ping(self) -> None:
            method = "server/discover" if conn.session.is_stateless else "ping"
            self.ask(method, None, method)

        @invariant()
        def schema_valid(self) -> None:
            # Line numbers are the recorder's own: each connection counts from zero.
            bad = [seq for seq in conn.recorder.problem_seqs if seq >= self.start]
            if bad:
                line = conn.recorder.lines[bad[0]]
                self.fail(
                    "the server sent a schema-invalid message (see the schema property)",
                    line=line.text[:500],
                )

        def teardown(self) -> None:
            # The server still answers at the end of the sequence (so that a sequence
            # which leaves it deaf is the one blamed, not the next).
            if not stopped:
                self.ping()

        @invariant()
        def alive(self) -> None:
            if not stopped and not conn.alive:
                stopped.append("gone")
                findings.server_gone(conn, "the stateful run", self.start)

    machine_settings = settings(
        max_examples=max(1, max_examples),
        stateful_step_count=max(1, step_count),
        database=None,
        deadline=None,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )

    def new_machine() -> SessionMachine:
        return SessionMachine()

    # A function, not the class: Hypothesis digests its factory's source, and a class's
    # source is found with ast.parse, which CPython 3.11 cannot run in two threads at
    # once ("AST constructor recursion depth mismatch"); a function's is found by
    # tokenizing, which any number of threads may do.
    factory = hypothesis_seed(findings.seed)(new_machine)

    def run() -> PropertyFailure | str | None:
        try:
            with _ONE_MACHINE_AT_A_TIME:
                run_state_machine_as_test(factory, settings=machine_settings)  # type: ignore[arg-type]  # any factory (its docs)
        except PropertyFailure as failure:
            return failure
        except Flaky as exc:
            # The live session changed under the shrinker: report what failed first.
            cause = _first_failure(exc)
            return cause if cause is not None else f"flaky: {str(exc).splitlines()[0]}"
        return None

    outcome = await trio.to_thread.run_sync(run)
    if isinstance(outcome, PropertyFailure) and failures and outcome.message != failures[0].message:
        # The failure left the live server in a state where something else fails
        # (a server that stops answering fails every later sequence at once): the
        # sequence that first failed is the one that reproduces the defect.
        outcome = failures[0]
        outcome.details["note"] = "shrinking changed the failure; this is the first one seen"
    if isinstance(outcome, PropertyFailure):
        findings.violate(
            prop, outcome.message, outcome.transcript, revision=conn.revision, **outcome.details
        )
    elif isinstance(outcome, str):
        findings.skip("stateful", outcome, conn.revision)
    if stopped and stopped[0] != "gone":
        findings.skip("stateful: rest of the run", stopped[0], conn.revision)


def _notified(conn: Connection, method: str, after: int) -> bool:
    for line in conn.recorder.lines[after:]:
        if line.unrecorded:
            return True  # messages not recorded (a flood) may have held it
        obj = line.obj
        if line.direction == "<" and isinstance(obj, dict) and obj.get("method") == method:
            return True
    return False


def _first_failure(exc: BaseException) -> PropertyFailure | None:
    seen: list[BaseException] = [exc]
    while seen:
        current = seen.pop()
        if isinstance(current, PropertyFailure):
            return current
        seen.extend(getattr(current, "exceptions", ()))
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                seen.append(linked)
    return None
