"""The bundled "everything" example server.

Tool names are part of the documented interface: ``echo``, ``add``,
``slow``, ``sample``, ``elicit``, ``list_roots``, ``survey``, ``fail`` (plus
``increment``, which bumps the subscribable counter resource), and two tools
of the tasks extension: ``long_job`` may run as a task, ``approve_job`` only
runs as one.  ``sample``, ``elicit``, ``list_roots`` and ``survey`` work in
both eras with the same code: server-to-client requests on a handshake
session, MRTR rounds on a stateless request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sansio_mcp import ToolResult
from sansio_mcp.runtime import Context, Server, Stores

__all__ = [
    "COUNTER_URI",
    "LONG_JOB_MAX_SECONDS",
    "MAX_COUNTER",
    "TOOL_NAMES",
    "add_task_tools",
    "build_server",
]

COUNTER_URI = "example://counter"
#: How far from 0 ``increment`` may take the counter by default: the largest integer
#: every JSON peer reads exactly (2**53 - 1).
MAX_COUNTER = 2**53 - 1
#: The tools :func:`build_server` offers (a documented interface).
TOOL_NAMES = frozenset(
    {
        "echo",
        "add",
        "slow",
        "sample",
        "elicit",
        "list_roots",
        "survey",
        "fail",
        "increment",
        "long_job",
        "approve_job",
    }
)
_PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
_COLOURS = ("red", "green", "blue", "cyan", "magenta", "yellow", "black", "white")
_LANGUAGES = ("python", "rust", "go", "typescript", "haskell", "ocaml")
#: How long the bundled ``long_job`` may take, so a checker calling it with
#: generated arguments stays quick.
LONG_JOB_MAX_SECONDS = 1.0


def add_task_tools(server: Server, *, max_seconds: float = LONG_JOB_MAX_SECONDS) -> None:
    """Register ``long_job`` (may run as a task, at most ``max_seconds`` long) and
    ``approve_job`` (only as a task)."""
    schema = {
        "type": "object",
        "properties": {
            "seconds": {
                "type": "number",
                "minimum": 0,
                "maximum": max_seconds,
                "default": max_seconds,
            },
            "steps": {"type": "integer", "minimum": 1, "maximum": 20, "default": 4},
        },
    }

    @server.tool(task="optional", input_schema=schema)
    async def long_job(ctx: Context, seconds: float = max_seconds, steps: int = 4) -> str:
        """A job in ``steps`` steps: a task for clients that declare the extension."""
        seconds = min(max(0.0, seconds), max_seconds)
        steps = max(1, steps)
        for step in range(steps):
            await ctx.report_progress(step, steps, f"step {step + 1} of {steps}")
            await ctx.sleep(seconds / steps)
        return f"long job done: {steps} steps in {seconds:g} s"

    @server.tool(task="required")
    async def approve_job(ctx: Context, job: str) -> str:
        """Only runs as a task; asks for approval inside it, then runs ``job``."""
        await ctx.become_task()
        answer = await ctx.elicit(
            f"Run {job}?", {"type": "object", "properties": {"approve": {"type": "boolean"}}}
        )
        if (answer.get("content") or {}).get("approve") is not True:
            return f"{job}: not approved"
        await ctx.sleep(0.1)
        return f"{job}: done"


def build_server(
    *,
    page_size: int = 100,
    max_counter: int = MAX_COUNTER,
    state_keys: Sequence[bytes] | None = None,
    stores: Stores | None = None,
) -> Server:
    """A fresh example server (its state is per instance).  ``increment`` keeps the
    counter within ``±max_counter``.  ``state_keys``: the requestState key ring
    replicas share (default: a random key); ``stores``: where shared state lives."""
    server = Server(
        "sansio-mcp-example",
        "0.1.0",
        title="sansio-mcp example server",
        instructions="An example server: every MCP feature, no network.",
        page_size=page_size,
        state_keys=state_keys,
        stores=stores,
    )
    counter = {"value": 0}

    @server.tool(annotations={"readOnlyHint": True})
    def echo(message: str) -> str:
        """Return the message unchanged."""
        return message

    @server.tool(
        output_schema={
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        },
        annotations={"readOnlyHint": True},
    )
    def add(a: float, b: float) -> ToolResult:
        """Add two numbers; the sum comes as text and as structured content."""
        total = a + b
        if not math.isfinite(total):
            # JSON carries no infinity: said as the tool's error, not a failed answer.
            return ToolResult.text(
                f"the sum of {a!r} and {b!r} is not a finite number", is_error=True
            )
        return ToolResult.text(str(total), structured={"sum": total})

    @server.tool()
    async def slow(ctx: Context, seconds: float = 1.0, steps: int = 5) -> str:
        """Wait ``seconds`` in ``steps`` steps, reporting progress; honours cancellation."""
        steps = max(1, steps)
        for step in range(1, steps + 1):
            await ctx.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"done after {seconds} seconds in {steps} steps"

    @server.tool()
    async def sample(ctx: Context, prompt: str) -> str:
        """Ask the client's model to answer ``prompt`` and return its text."""
        result = await ctx.sample(prompt, max_tokens=200)
        content = result.get("content")
        if isinstance(content, list):
            content = next((c for c in content if c.get("type") == "text"), {})
        if isinstance(content, dict) and content.get("type") == "text":
            return str(content.get("text", ""))
        return f"(the model answered with non-text content: {content!r})"

    @server.tool()
    async def elicit(ctx: Context, question: str) -> ToolResult:
        """Ask the user ``question``; return what they answered."""
        result = await ctx.elicit(
            question,
            {
                "type": "object",
                "properties": {"answer": {"type": "string", "description": question}},
                "required": ["answer"],
            },
        )
        action = result.get("action")
        if action != "accept":
            return ToolResult.text(f"the user chose to {action}", structured={"action": action})
        content = result.get("content") or {}
        answer = content.get("answer", "")
        return ToolResult.text(str(answer), structured={"action": action, "answer": answer})

    @server.tool(annotations={"readOnlyHint": True})
    async def list_roots(ctx: Context) -> ToolResult:
        """Return the client's roots."""
        roots = await ctx.list_roots()
        lines = [f"{r.get('name') or r.get('uri')}: {r.get('uri')}" for r in roots]
        return ToolResult.text("\n".join(lines) or "(no roots)", structured={"roots": roots})

    @server.tool()
    async def survey(ctx: Context, questions: list[str]) -> ToolResult:
        """Ask each question in turn (one elicitation per question) and return the answers.

        On 2026-07-28 every question is its own MRTR round, and the answers
        so far travel in the sealed requestState.
        """
        answers: dict[str, str] = {}
        for question in questions:
            result = await ctx.elicit(
                question,
                {
                    "type": "object",
                    "properties": {"answer": {"type": "string", "description": question}},
                    "required": ["answer"],
                },
            )
            if result.get("action") != "accept":
                return ToolResult.text(
                    f"survey stopped at {question!r}: the user chose to {result.get('action')}",
                    structured={"answers": answers, "completed": False},
                )
            answers[question] = str((result.get("content") or {}).get("answer", ""))
        lines = [f"{q} {a}" for q, a in answers.items()]
        return ToolResult.text(
            "\n".join(lines) or "(no questions)",
            structured={"answers": answers, "completed": True},
        )

    @server.tool()
    def fail(message: str) -> ToolResult:
        """Return an error result carrying ``message``."""
        return ToolResult.text(message, is_error=True)

    by_schema = {"type": "integer", "default": 1, "minimum": -max_counter, "maximum": max_counter}

    @server.tool(input_schema={"type": "object", "properties": {"by": by_schema}})
    async def increment(ctx: Context, by: int = 1) -> ToolResult:
        """Add ``by`` to the counter resource and notify its subscribers."""
        value = counter["value"] + by
        if abs(value) > max_counter:
            # Unbounded, a few calls would make a number no later call could write out.
            return ToolResult.text(
                f"the counter would pass ±{max_counter} (max_counter); it stays at "
                f"{counter['value']}",
                is_error=True,
            )
        counter["value"] = value
        await ctx.log("info", {"counter": value}, logger="example")
        await ctx.resource_updated(COUNTER_URI)
        return ToolResult.text(str(value))

    add_task_tools(server)

    @server.resource("example://readme", name="readme", mime_type="text/markdown")
    def readme() -> str:
        """A short text resource."""
        return "# sansio-mcp example\n\nThis text comes from a resource.\n"

    @server.resource("example://logo.png", name="logo", mime_type="image/png")
    def logo() -> bytes:
        """A one-pixel PNG (a binary resource)."""
        return _PNG_1X1

    @server.resource(COUNTER_URI, name="counter", mime_type="application/json")
    def counter_resource() -> dict[str, Any]:
        """The counter that ``increment`` bumps (subscribe to follow it)."""
        return {"value": counter["value"]}

    def complete_colour(value: str, context: dict[str, str]) -> list[str]:
        return [c for c in _COLOURS if c.startswith(value.lower())]

    @server.resource_template(
        "example://colours/{colour}",
        name="colour",
        mime_type="text/plain",
        completers={"colour": complete_colour},
    )
    def colour(colour: str) -> str:
        """A line about one colour."""
        return f"{colour} is a fine colour"

    @server.prompt()
    def greeting() -> str:
        """A prompt with no arguments."""
        return "Say hello to the user in one short sentence."

    def complete_language(value: str, context: dict[str, str]) -> list[str]:
        return [lang for lang in _LANGUAGES if lang.startswith(value.lower())]

    @server.prompt(completers={"language": complete_language})
    def review(code: str, language: str = "python") -> list[dict[str, Any]]:
        """Ask for a code review (arguments: code, optional language)."""
        return [
            {
                "role": "user",
                "content": {
                    "type": "text",
                    "text": f"Please review this {language} code:\n\n{code}",
                },
            }
        ]

    return server
