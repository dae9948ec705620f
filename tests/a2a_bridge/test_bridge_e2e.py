"""The bridge end to end: the fixture agent over real HTTP, the bridge served on each
backend, our client as the MCP client on both eras (2026-07-28 stateless, 2025-11-25
handshake on the same endpoint)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from sansio_mcp.runtime import ClientAPI, ClientHandlers, TransportBackend
from sansio_mcp_apps.a2a import META_KEY
from sansio_mcp_apps.a2a.runtime import A2ABridge
from sansio_mcp_testing.a2a_agent import PNG_1X1, WAV_SILENCE

from .conftest import config_for, serving

ERAS = {"modern": {"mode": "modern"}, "legacy": {"protocol_version": "2025-11-25"}}
TOOLS = {"a2a_discover", "a2a_send_message", "a2a_get_task", "a2a_cancel_task"}


def run(
    backend: TransportBackend,
    agent_url: str,
    era: str,
    body: Any,
    *,
    handlers: ClientHandlers | None = None,
    **options: Any,
) -> Any:
    async def main() -> Any:
        async def use(url: str, bridge: A2ABridge) -> Any:
            client_options: dict[str, Any] = dict(ERAS[era])
            if handlers is not None:
                client_options["handlers"] = handlers
            async with backend.fail_after(60):
                async with backend.connect([], url, None, **client_options) as client:
                    return await body(client, bridge)

        return await serving(backend, config_for(agent_url), use, **options)

    return backend.run(main)


async def send(client: ClientAPI, text: str, **more: Any) -> dict[str, Any]:
    return await client.call_tool("a2a_send_message", {"text": text, **more})


def text_of(result: dict[str, Any]) -> list[str]:
    return [c["text"] for c in result["content"] if c["type"] == "text"]


@pytest.mark.parametrize("era", ERAS)
def test_tools_discover_and_replies(backend: TransportBackend, agent_url: str, era: str) -> None:
    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert set(tools) == TOOLS
        send_schema = tools["a2a_send_message"]["inputSchema"]
        assert set(send_schema["properties"]) == {"agent", "text", "contextHandle", "taskHandle"}
        assert send_schema["required"] == ["text"]  # one agent: 'agent' may be omitted
        assert set(tools["a2a_get_task"]["inputSchema"]["properties"]) == {
            "agent",
            "taskHandle",
            "historyLength",
        }

        card = await client.call_tool("a2a_discover", {})
        assert card["isError"] is False
        assert card["structuredContent"]["name"] == "fixture"
        assert card["structuredContent"]["capabilities"]["streaming"] is True
        assert card["_meta"][META_KEY]["cardUrl"] == agent_url.rstrip("/") + (
            "/.well-known/agent-card.json"
        )
        assert text_of(card)[0].startswith("fixture (version 1.0.0)")

        echoed = await send(client, "echo: hello ☃", agent="fixture")
        assert text_of(echoed) == ["hello ☃"]
        envelope = echoed["structuredContent"]
        assert envelope["kind"] == "message" and envelope["status"] == "completed"
        context = envelope["contextHandle"]
        assert context.startswith("cx_")
        first_context_id = echoed["content"][0]["_meta"][META_KEY]["contextId"]
        # Passing the context handle back continues the same A2A context.
        again = await send(client, "echo: again", contextHandle=context)
        assert again["content"][0]["_meta"][META_KEY]["contextId"] == first_context_id
        assert again["structuredContent"]["contextHandle"] == context
        assert first_context_id not in json.dumps(again["structuredContent"])

        done = await send(client, "task: hello world")
        envelope = done["structuredContent"]
        assert done["isError"] is False
        assert envelope["kind"] == "task"
        assert envelope["a2aState"] == "TASK_STATE_COMPLETED"
        assert envelope["status"] == "completed"
        assert envelope["taskHandle"].startswith("tk_")
        assert [a["name"] for a in envelope["artifacts"]] == ["result"]
        assert "note" not in envelope and "data" not in envelope and "history" not in envelope
        assert text_of(done) == ["done", "dlrow olleh"]

        got = await client.call_tool(
            "a2a_get_task", {"taskHandle": envelope["taskHandle"], "historyLength": 5}
        )
        assert got["structuredContent"]["taskHandle"] == envelope["taskHandle"]
        history = got["structuredContent"]["history"]
        assert history[0]["role"] == "user"
        assert history[0]["content"][0]["text"] == "task: hello world"

        # The schema names the agents: another alias is an invalid argument (a tool error).
        unknown = await send(client, "echo: x", agent="nobody")
        assert unknown["isError"] is True
        assert "must be one of ['fixture']" in text_of(unknown)[0]

    run(backend, agent_url, era, body)


STATES = {
    "submitted": ("TASK_STATE_SUBMITTED", "working", False, True),
    "working": ("TASK_STATE_WORKING", "working", False, False),
    "reject": ("TASK_STATE_REJECTED", "failed", True, True),
    "fail": ("TASK_STATE_FAILED", "failed", True, False),
    "auth": ("TASK_STATE_AUTH_REQUIRED", "failed", True, True),
    "unspecified": ("TASK_STATE_UNSPECIFIED", "failed", True, True),
    "ask: colour": ("TASK_STATE_INPUT_REQUIRED", "input_required", False, True),
}


@pytest.mark.parametrize("era", ERAS)
def test_every_state_and_error(backend: TransportBackend, agent_url: str, era: str) -> None:
    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        for command, (state, status, is_error, lossy) in STATES.items():
            result = await send(client, command)
            envelope = result["structuredContent"]
            assert (envelope["a2aState"], envelope["status"]) == (state, status), command
            assert result["isError"] is is_error, command
            assert ("note" in envelope) is lossy or command == "working", command
        auth = await send(client, "auth")
        assert "https://auth.example.org/authorize" in text_of(auth)[0]
        # A task left working is followed until max_wait, then returned as it stands.
        working = await send(client, "working")
        assert "a2a_get_task" in working["structuredContent"]["note"]

        for code in range(-32001, -32010, -1):
            failed = await send(client, f"error:{code}")
            assert failed["isError"] is True
            assert failed["structuredContent"]["a2aErrorCode"] == code
            assert str(code) in text_of(failed)[0]

    run(backend, agent_url, era, body, max_wait=0.5, poll_interval=0.05)


def test_task_forgotten_while_followed(backend: TransportBackend, agent_url: str) -> None:
    """The agent drops a task while the bridge follows it: GetTask's -32001 is the result."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        vanished = await send(client, "vanish")
        assert vanished["isError"] is True
        assert vanished["structuredContent"]["a2aErrorCode"] == -32001

    run(backend, agent_url, "modern", body, max_wait=5)


@pytest.mark.parametrize("era", ERAS)
def test_parts(backend: TransportBackend, agent_url: str, era: str) -> None:
    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        data = await send(client, "data: x")
        assert data["structuredContent"]["data"] == {"answer": 42, "echo": "x"}
        (block,) = data["content"]
        assert json.loads(block["text"]) == {"answer": 42, "echo": "x"}
        assert block["_meta"][META_KEY]["partKind"] == "data"
        assert block["_meta"][META_KEY]["artifactName"] == "data"

        (link,) = (await send(client, "file"))["content"]
        assert link["type"] == "resource_link"
        assert (link["uri"], link["name"], link["mimeType"]) == (
            "https://files.example.org/report.pdf",
            "report.pdf",
            "application/pdf",
        )
        (image,) = (await send(client, "image"))["content"]
        assert image["type"] == "image" and image["mimeType"] == "image/png"
        assert base64.b64decode(image["data"]) == PNG_1X1
        assert image["_meta"][META_KEY]["filename"] == "dot.png"
        (audio,) = (await send(client, "audio"))["content"]
        assert audio["type"] == "audio" and base64.b64decode(audio["data"]) == WAV_SILENCE
        (blob,) = (await send(client, "blob"))["content"]
        assert blob["type"] == "resource"
        assert blob["resource"]["uri"] == "a2a://part/blob.bin"
        assert base64.b64decode(blob["resource"]["blob"]) == b"\x00\x01\x02binary"

        mixed = await send(client, "parts")
        assert [c["type"] for c in mixed["content"]] == [
            "text",
            "text",
            "text",
            "resource_link",
            "image",
        ]
        assert "data" not in mixed["structuredContent"]  # two data parts: none is "the" data

    run(backend, agent_url, era, body)


@pytest.mark.parametrize("era", ERAS)
def test_input_required_by_elicitation(backend: TransportBackend, agent_url: str, era: str) -> None:
    """Two rounds of questions, each a form elicitation: an MRTR round on 2026-07-28, a
    server-to-client request on 2025-11-25."""
    asked: list[dict[str, Any]] = []
    answers = iter(["blue", "green", "red"])

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        if params["message"].startswith("What value should I use for later"):
            return {"action": "decline"}
        return {"action": "accept", "content": {"answer": next(answers)}}

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        result = await send(client, "ask2: colour")
        assert result["isError"] is False
        assert result["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED"
        assert text_of(result)[-1] == "colour: blue, green"
        assert [p["message"] for p in asked] == [
            "What value should I use for colour?",
            "And a second value for colour?",
        ]
        schema = asked[0]["requestedSchema"]
        assert schema["required"] == ["answer"]
        assert schema["properties"]["answer"]["type"] == "string"

        declined = await send(client, "ask: later")
        assert declined["structuredContent"]["a2aState"] == "TASK_STATE_CANCELED"
        assert declined["structuredContent"]["status"] == "cancelled"
        assert "declined" in declined["structuredContent"]["note"]

    run(backend, agent_url, era, body, handlers=ClientHandlers(elicitation=elicitation))


@pytest.mark.parametrize("era", ERAS)
def test_input_required_by_handle(backend: TransportBackend, agent_url: str, era: str) -> None:
    """A client without elicitation gets the envelope and answers with the taskHandle."""

    async def body(client: ClientAPI, bridge: A2ABridge) -> None:
        asked = await send(client, "ask: size")
        envelope = asked["structuredContent"]
        assert envelope["status"] == "input_required"
        assert text_of(asked) == ["What value should I use for size?"]
        done = await send(client, "large", taskHandle=envelope["taskHandle"])
        assert done["structuredContent"]["a2aState"] == "TASK_STATE_COMPLETED"
        assert done["structuredContent"]["taskHandle"] == envelope["taskHandle"]
        assert text_of(done)[-1] == "size = large"

        # Cancelling: a task still working (followed for max_wait only), then cancelled.
        slow = await send(client, "slow: 5000")
        handle = slow["structuredContent"]["taskHandle"]
        assert slow["structuredContent"]["status"] == "working"
        cancelled = await client.call_tool("a2a_cancel_task", {"taskHandle": handle})
        assert cancelled["structuredContent"]["a2aState"] == "TASK_STATE_CANCELED"
        again = await client.call_tool("a2a_cancel_task", {"taskHandle": handle})
        assert again["structuredContent"]["a2aErrorCode"] == -32002  # not cancelable

        for bad in ("tk_made_up", "cx_wrong_kind"):
            wrong = await client.call_tool("a2a_get_task", {"taskHandle": bad})
            assert wrong["isError"] is True
            assert wrong["structuredContent"]["error"] == "unknown_handle"

    run(backend, agent_url, era, body, max_wait=0.5, poll_interval=0.05)


def test_handles_belong_to_their_creator(backend: TransportBackend, agent_url: str) -> None:
    """A handle is its creator's, as a task is: a 2025-11-25 session's handles are its
    own (another session, or an anonymous 2026-07-28 caller, gets unknown_handle in the
    same words as for a made-up handle); anonymous 2026-07-28 handles are every anonymous
    caller's."""

    async def main() -> None:
        async def use(url: str, bridge: A2ABridge) -> None:
            async with backend.fail_after(60):
                async with (
                    backend.connect([], url, None, **ERAS["legacy"]) as first,
                    backend.connect([], url, None, **ERAS["legacy"]) as second,
                    backend.connect([], url, None, **ERAS["modern"]) as anonymous,
                    backend.connect([], url, None, **ERAS["modern"]) as other,
                ):
                    made = await send(first, "task: hello")
                    task_handle = made["structuredContent"]["taskHandle"]
                    context_handle = made["structuredContent"]["contextHandle"]
                    mine = await first.call_tool("a2a_get_task", {"taskHandle": task_handle})
                    assert mine["structuredContent"]["taskHandle"] == task_handle

                    async def refused(client: ClientAPI, handle: str, **more: Any) -> str:
                        if handle.startswith("tk_"):
                            got = await client.call_tool("a2a_get_task", {"taskHandle": handle})
                        else:
                            got = await send(client, "hi", contextHandle=handle)
                        assert got["isError"] is True, got
                        assert got["structuredContent"]["error"] == "unknown_handle"
                        return str(got["content"][0]["text"]).replace(handle, "<h>")

                    for client in (second, anonymous):
                        for handle in (task_handle, context_handle):
                            theirs = await refused(client, handle)
                            made_up = await refused(client, handle[:3] + "made_up")
                            assert theirs == made_up
                    cancel = {"taskHandle": task_handle}
                    stolen = await second.call_tool("a2a_cancel_task", cancel)
                    assert stolen["structuredContent"]["error"] == "unknown_handle"

                    public = await send(anonymous, "task: hello")
                    shared = public["structuredContent"]["taskHandle"]
                    seen = await other.call_tool("a2a_get_task", {"taskHandle": shared})
                    assert seen["structuredContent"]["taskHandle"] == shared
                    await refused(first, shared)

        await serving(backend, config_for(agent_url), use)

    backend.run(main)
