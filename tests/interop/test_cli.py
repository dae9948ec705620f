"""The ``sansio-mcp`` command line against server-everything, as a user would run it."""

from __future__ import annotations

import json
import subprocess
import sys

import peers
import pytest

from .conftest import SDK_SERVER

pytestmark = pytest.mark.interop

TIMEOUT = 60


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return peers.run_cli(*args, timeout=TIMEOUT)


def test_inspect_server_everything(everything_command: list[str]) -> None:
    done = run_cli("inspect", "--", *everything_command)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for key in (
        "protocolVersion",
        "serverInfo",
        "capabilities",
        "tools",
        "resources",
        "resourceTemplates",
        "prompts",
    ):
        assert report.get(key), f"{key} is missing or empty: {report.get(key)!r}"
    assert report["protocolVersion"] == "2025-11-25"
    assert report["serverInfo"]["name"] == "mcp-servers/everything"
    assert {"tools", "resources", "prompts", "logging"} <= set(report["capabilities"])
    tool_names = {t["name"] for t in report["tools"]}
    assert {"echo", "get-sum", "get-structured-content"} <= tool_names
    assert all(t["inputSchema"]["type"] == "object" for t in report["tools"])
    assert all(r["uri"].startswith("demo://") for r in report["resources"])
    assert "demo://resource/dynamic/text/{resourceId}" in {
        t["uriTemplate"] for t in report["resourceTemplates"]
    }
    assert {"simple-prompt", "args-prompt"} <= {p["name"] for p in report["prompts"]}


def test_inspect_at_an_older_revision(everything_command: list[str]) -> None:
    done = run_cli("inspect", "--protocol-version", "2024-11-05", "--", *everything_command)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protocolVersion"] == "2024-11-05"
    assert "echo" in {t["name"] for t in report["tools"]}


def test_call_echo(everything_command: list[str]) -> None:
    done = run_cli("call", "echo", "--args", '{"message":"hi"}', "--", *everything_command)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert "hi" in done.stdout
    assert result["content"] == [{"type": "text", "text": "Echo: hi"}]
    assert not result.get("isError")


def test_call_reports_tool_errors(everything_command: list[str]) -> None:
    # server-everything answers bad arguments with an isError result: exit status 1.
    done = run_cli("call", "echo", "--args", "{}", "--", *everything_command)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is True


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_call_answers_the_question_a_2025_11_25_task_waits_on(
    everything_command: list[str], backend: str
) -> None:
    """server-everything queues a task's elicitation until the client asks for the
    task's result: the CLI does so once the task is input_required, and answers with
    --elicit (not the server's fallback after a minute of waiting)."""
    done = run_cli(
        "call",
        "--backend",
        backend,
        "simulate-research-query",
        "--args",
        '{"topic":"bees","ambiguous":true}',
        "--elicit",
        '{"interpretation":"biology"}',
        "--",
        *everything_command,
    )
    assert done.returncode == 0, done.stderr
    assert "input_required" in done.stderr
    text = json.loads(done.stdout)["content"][0]["text"]
    assert "# Research Report: bees (biology)" in text
    assert "elicitation unavailable" not in text


def test_call_answers_sampling_from_the_command_line(everything_command: list[str]) -> None:
    done = run_cli(
        "call",
        "trigger-sampling-request",
        "--args",
        '{"prompt": "what is 6 x 7?"}',
        "--sample",
        "forty-two, said the CLI",
        "--",
        *everything_command,
    )
    assert done.returncode == 0, done.stderr
    text = json.loads(done.stdout)["content"][0]["text"]
    assert "forty-two, said the CLI" in text and "sansio-mcp-cli" in text


def test_call_answers_elicitation_against_the_sdk_server() -> None:
    """Auto mode discovers 2026-07-28 on the SDK server; the answer goes back as an MRTR round."""
    done = run_cli(
        "call",
        "resolve_user",
        "--args",
        '{"question": "favourite colour?"}',
        "--elicit",
        '{"answer": "green"}',
        "--",
        sys.executable,
        str(SDK_SERVER),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"] == {"result": "user said green"}
    assert result["resultType"] == "complete"


def test_inspect_declares_what_call_can_answer(everything_command: list[str]) -> None:
    """server-everything lists its elicitation, sampling and roots tools only to a client
    that declared those capabilities: ``inspect`` declares them as ``call`` does."""
    done = run_cli("inspect", "--", *everything_command)
    assert done.returncode == 0, done.stderr
    names = {tool["name"] for tool in json.loads(done.stdout)["tools"]}
    assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= names
