"""A small server built on the official ``mcp`` SDK (``MCPServer``), run over stdio.

The interop tests start it with ``sys.executable tests/interop/sdk_server.py``
and talk to it with our Trio client.  Names and outputs are part of what the
tests assert, so keep them in step with ``test_mcp_sdk.py``.
"""

from __future__ import annotations

import warnings
from typing import Annotated

from mcp import types
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel, Field

# The SDK marks sampling and logging deprecated as of 2026-07-28; this server
# speaks the handshake revisions, where both are current.
warnings.simplefilter("ignore")

server = MCPServer(
    "sdk-interop-server", version="1.2.3", instructions="An mcp SDK peer for interop tests."
)


class AddResult(BaseModel):
    sum: float


class Answer(BaseModel):
    answer: str = Field(description="what the user answered")


@server.tool()
def echo(message: str) -> str:
    """Return the message unchanged."""
    return f"echo: {message}"


@server.tool()
def add(a: float, b: float) -> AddResult:
    """Add two numbers (structured output)."""
    return AddResult(sum=a + b)


@server.tool()
async def ask_user(question: str, ctx: Context) -> str:
    """Elicit an answer from the user."""
    result = await ctx.elicit(question, Answer)
    if result.action == "accept":
        return f"user said {result.data.answer}"
    return f"user chose {result.action}"


@server.tool()
async def ask_model(prompt: str, ctx: Context) -> str:
    """Ask the client's model (sampling) and return its text."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
        max_tokens=50,
        system_prompt="be brief",
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"model {result.model} said {text}"


@server.tool()
async def countdown(steps: int, ctx: Context) -> str:
    """Report ``steps`` progress notifications, then finish."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Report that resource ``uri`` changed (to subscribers / listeners)."""
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


@server.tool()
async def roots(ctx: Context) -> str:
    """List the client's roots."""
    result = await ctx.session.list_roots()
    return ", ".join(str(root.uri) for root in result.roots)


# Era-neutral versions: resolvers (`Resolve`) become server-to-client requests on a
# handshake session and MRTR `input_required` rounds on 2026-07-28.


def _ask(question: str) -> Elicit[Answer]:
    return Elicit(question, Answer)


def _sample(prompt: str) -> Sample:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    return Sample([message], max_tokens=50, system_prompt="be brief")


def _roots() -> ListRoots:
    return ListRoots()


@server.tool()
def resolve_user(question: str, answer: Annotated[ElicitationResult[Answer], Resolve(_ask)]) -> str:
    """Elicit an answer through a resolver."""
    if answer.action == "accept":
        return f"user said {answer.data.answer}"
    return f"user chose {answer.action}"


@server.tool()
def resolve_model(
    prompt: str, reply: Annotated[types.CreateMessageResult, Resolve(_sample)]
) -> str:
    """Sample the client's model through a resolver."""
    content = reply.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"model {reply.model} said {text}"


@server.tool()
def resolve_roots(found: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    """List the client's roots through a resolver."""
    return ", ".join(str(root.uri) for root in found.roots)


@server.resource("sdk://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A static text resource."""
    return "hello from the SDK"


@server.resource("sdk://blob", name="blob", mime_type="application/octet-stream")
def blob() -> bytes:
    """A binary resource."""
    return bytes(range(8))


@server.resource("sdk://items/{item}", name="item", mime_type="text/plain")
def item(item: str) -> str:
    """A templated resource."""
    return f"item {item}"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a review of ``code``."""
    return f"Review this {language} code: {code}"


@server.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion | None:
    """Complete the ``language`` argument of the ``review`` prompt."""
    if (
        isinstance(ref, types.PromptReference)
        and ref.name == "review"
        and argument.name == "language"
    ):
        values = [v for v in ("python", "perl", "rust") if v.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)
    return None


if __name__ == "__main__":
    server.run()
