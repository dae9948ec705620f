"""The traffic on request: ``-v`` logs each JSON-RPC message, a line each way,
``--trace FILE`` writes the whole session as JSON lines that ``check --replay``
sends again.  Each case runs the real ``sansio-mcp`` command, on every client
transport and both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sansio_mcp import ClientSession

CLI = [sys.executable, "-m", "sansio_mcp_cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
BACKENDS = ["trio", "asyncio"]
TRAFFIC = "INFO sansio_mcp_cli.traffic: "


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=ENV, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture(scope="module", params=["stdio", "http", "sse", "ws"])
def target(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """What follows the command's options: ``-- COMMAND`` or a URL."""
    transport = request.param
    if transport == "stdio":
        yield ["--", *CLI, "example-server"]
        return
    server = subprocess.Popen(
        [*CLI, "example-server", "--transport", transport, "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        url = server.stderr.readline().split()[-1]
        assert url.startswith(("http://127.0.0.1:", "ws://127.0.0.1:")), url
        yield ([url, "--transport", "sse"] if transport == "sse" else [url])
    finally:
        server.terminate()
        server.wait(10)


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_call_traces_every_message_each_way(
    target: list[str], backend: str, tmp_path: Path
) -> None:
    trace = tmp_path / "call.jsonl"
    done = run("-v", "call", "echo", "--args", '{"message": "traced"}', "--backend", backend,
               "--trace", str(trace), *target)  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = read_trace(trace)
    assert {r["direction"] for r in records} == {"send", "receive"}
    assert all(isinstance(r["time"], float) for r in records)
    assert [r["time"] for r in records] == sorted(r["time"] for r in records)
    sent = [r["message"] for r in records if r["direction"] == "send"]
    received = [r["message"] for r in records if r["direction"] == "receive"]
    call = next(m for m in sent if m.get("method") == "tools/call")
    assert call["params"]["arguments"] == {"message": "traced"}
    answer = next(m for m in received if m.get("id") == call["id"])
    assert answer["result"]["content"][0]["text"] == "traced"
    # -v: one line per message, the same count each way as the trace, long ones cut.
    lines = [line[len(TRAFFIC) :] for line in done.stderr.splitlines() if line.startswith(TRAFFIC)]
    assert sum(line.startswith("> ") for line in lines) == len(sent)
    assert sum(line.startswith("< ") for line in lines) == len(received)
    assert all(len(line) <= 202 for line in lines)
    assert any(line.endswith("…") for line in lines)
    assert any('"method":"tools/call"' in line for line in lines if line.startswith("> "))


@pytest.mark.parametrize("backend", BACKENDS)
def test_inspect_traces_without_verbose_and_logs_nothing(
    target: list[str], backend: str, tmp_path: Path
) -> None:
    trace = tmp_path / "inspect.jsonl"
    done = run("inspect", "--backend", backend, "--trace", str(trace), *target)
    assert done.returncode == 0, done.stderr
    assert TRAFFIC not in done.stderr
    methods = {r["message"].get("method") for r in read_trace(trace) if r["direction"] == "send"}
    assert {"tools/list", "resources/list", "prompts/list"} <= methods


def test_replay_sends_a_trace_again(tmp_path: Path) -> None:
    trace = tmp_path / "call.jsonl"
    done = run("call", "echo", "--args", '{"message": "again"}', "--trace", str(trace),
               "--", *CLI, "example-server")  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = sum(r["direction"] == "send" for r in read_trace(trace))
    replayed = run("check", "--replay", str(trace), "--", *CLI, "example-server")
    assert replayed.returncode == 0, replayed.stderr
    assert f"replaying {sent} messages of the trace" in replayed.stderr
    answers = [json.loads(line[2:]) for line in replayed.stdout.splitlines() if line[:2] == "< "]
    assert any(
        a.get("result", {}).get("content", [{}])[0].get("text") == "again" for a in answers
    ), replayed.stdout


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json\n", "is not a JSON line"),
        ('{"jsonrpc": "2.0"}\n', "is not a trace record"),
        ('{"direction": "receive", "time": 1, "message": {}}\n', "nothing to replay"),
    ],
)
def test_replay_of_a_bad_trace_says_why(tmp_path: Path, content: str, said: str) -> None:
    trace = tmp_path / "bad.jsonl"
    trace.write_text(content)
    done = run("check", "--replay", str(trace), "--", *CLI, "example-server")
    assert done.returncode == 2
    assert said in done.stderr


def test_the_session_tracer_sees_both_directions() -> None:
    seen: list[tuple[str, Any]] = []
    session = ClientSession(protocol_version="2025-06-18")
    session.tracer = lambda direction, message: seen.append((direction, message))
    session.start()
    sent = session.data_to_send()
    assert seen == [("send", json.loads(sent))]
    info = {"name": "s", "version": "1"}
    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": info}
    answer = {"jsonrpc": "2.0", "id": seen[0][1]["id"], "result": result}
    session.receive_data(json.dumps(answer).encode() + b"\n")
    assert seen[1] == ("receive", answer)
    session.tracer = None
    session.send_ping()
    session.data_to_send()
    assert len(seen) == 2
