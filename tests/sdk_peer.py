"""The official MCP SDK client as a peer: its answers to a server's questions, read back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from mcp import types as sdk


def sdk_text(result: sdk.CallToolResult) -> str:
    """The text blocks of an SDK tool result, one per line."""
    return "\n".join(c.text for c in result.content if isinstance(c, sdk.TextContent))


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` until it holds; fail after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


class SDKCallbacks:
    """The SDK client's answers to the server's questions, recording each question.

    ``answer`` words the reply to an elicitation from its message; ``root`` is the one
    root the client lists.
    """

    def __init__(self, answer: Callable[[str], str], root: dict[str, str]) -> None:
        self.answer = answer
        self.root = root
        self.elicited: list[str] = []
        self.sampled: list[str] = []
        self.roots_asked = 0
        self.notifications: list[Any] = []

    async def elicitation(self, context: Any, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        self.elicited.append(params.message)
        return sdk.ElicitResult(action="accept", content={"answer": self.answer(params.message)})

    async def sampling(
        self, context: Any, params: sdk.CreateMessageRequestParams
    ) -> sdk.CreateMessageResult:
        content = params.messages[-1].content
        assert isinstance(content, sdk.TextContent)
        self.sampled.append(content.text)
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text="forty-two"),
            model="sdk-test-model",
            stop_reason="endTurn",
        )

    async def list_roots(self, context: Any) -> sdk.ListRootsResult:
        self.roots_asked += 1
        return sdk.ListRootsResult(roots=[sdk.Root(uri=self.root["uri"], name=self.root["name"])])

    async def message_handler(self, message: Any) -> None:
        self.notifications.append(message)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for the SDK's ``Client``."""
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }

    def session_options(self) -> dict[str, Any]:
        """Keyword arguments for the SDK's ``ClientSession``: the client's, plus notifications."""
        return {**self.client_options(), "message_handler": self.message_handler}
