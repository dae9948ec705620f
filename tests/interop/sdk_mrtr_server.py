"""An ``mcp`` SDK (``MCPServer``) peer whose tools need client input, run over stdio.

Used by ``test_stateless_interop.py``: our Trio client talks to it on 2026-07-28,
where every question is a multi round-trip (MRTR) ``input_required`` round.
Two ways the SDK offers to write such a tool are both covered:

* resolvers (``Annotated[T, Resolve(fn)]`` returning ``Elicit`` / ``Sample`` /
  ``ListRoots``): the SDK batches independent questions into one round, asks a
  dependent question in a later round, and carries the answers so far in its
  ``requestState``;
* a hand-written body returning ``InputRequiredResult`` and reading
  ``ctx.input_responses`` / ``ctx.request_state``.

Names and outputs are asserted by the tests; keep them in step.
"""

from __future__ import annotations

import warnings
from typing import Annotated

from mcp import types
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel, Field

# Sampling and roots are deprecated as of 2026-07-28 (still functional); silence the SDK's notice.
warnings.simplefilter("ignore")

server = MCPServer("sdk-mrtr-peer", version="2.3.0-test")


class Answer(BaseModel):
    answer: str = Field(description="what the user answered")


def _ask_name() -> Elicit[Answer]:
    return Elicit("name?", Answer)


def _ask_city() -> Elicit[Answer]:
    return Elicit("city?", Answer)


def _ask_followup(
    name: Annotated[ElicitationResult[Answer], Resolve(_ask_name)],
) -> Elicit[Answer]:
    # Depends on the first answer, so it can only be asked in a later round.
    who = name.data.answer if name.action == "accept" else "stranger"
    return Elicit(f"hello {who}, favourite colour?", Answer)


def _ask_model(prompt: str) -> Sample:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    return Sample([message], max_tokens=50)


def _roots() -> ListRoots:
    return ListRoots()


@server.tool()
def greet(answer: Annotated[ElicitationResult[Answer], Resolve(_ask_name)]) -> str:
    """One elicitation (one MRTR round on 2026-07-28)."""
    if answer.action == "accept":
        return f"hello {answer.data.answer}"
    return f"user chose {answer.action}"


@server.tool()
def profile(
    name: Annotated[Answer, Resolve(_ask_name)],
    city: Annotated[Answer, Resolve(_ask_city)],
) -> str:
    """Two independent elicitations: batched into a single round."""
    return f"{name.answer} from {city.answer}"


@server.tool()
def chain(
    name: Annotated[Answer, Resolve(_ask_name)],
    colour: Annotated[Answer, Resolve(_ask_followup)],
) -> str:
    """Two dependent elicitations: two rounds, the first answer kept in requestState."""
    return f"{name.answer} likes {colour.answer}"


@server.tool()
def ask_model(prompt: str, reply: Annotated[types.CreateMessageResult, Resolve(_ask_model)]) -> str:
    """Sampling through MRTR."""
    content = reply.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"model {reply.model} said {text}"


@server.tool()
def roots(found: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    """roots/list through MRTR."""
    return ", ".join(str(root.uri) for root in found.roots) or "(no roots)"


@server.tool()
def countdown(ctx: Context, n: int) -> types.CallToolResult | types.InputRequiredResult:
    """Hand-written MRTR: ``n`` rounds, each asking one question; the tally rides requestState."""
    state = ctx.request_state or "answers:"
    answers = [a for a in state.removeprefix("answers:").split(",") if a]
    response = (ctx.input_responses or {}).get(f"q{len(answers)}")
    if getattr(response, "action", None) == "accept":
        answers.append(str((getattr(response, "content", None) or {}).get("answer", "")))
    if len(answers) >= n:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=" ".join(answers))],
        )
    key = f"q{len(answers)}"
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=f"question {len(answers) + 1} of {n}?",
            requested_schema={
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
            },
        )
    )
    return types.InputRequiredResult(
        input_requests={key: request}, request_state="answers:" + ",".join(answers)
    )


if __name__ == "__main__":
    server.run()
