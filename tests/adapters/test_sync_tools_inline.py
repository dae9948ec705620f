"""A plain-function tool is answered in the reading task, as its request is read: no
task of its own, no cancel scope, and its context made only because the handler takes
one.  What that must keep, on both backends over real stdio pipes (raw NDJSON): the
answers' order, a cancellation that comes after the answer, a raising tool's error,
a context-using tool, the argument checks, and an ``async`` tool still running beside
the plain ones."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = str(Path(__file__).with_name("sync_tools_server.py"))
REVISION = "2025-11-25"


class Peer:
    """A raw NDJSON client over the server's pipes (blocking reads, a timeout)."""

    def __init__(self, backend: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, SERVER, "--backend", backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )

    def send(self, *messages: dict[str, Any]) -> None:
        """All ``messages`` in one write (they reach the server in one read)."""
        assert self.process.stdin is not None
        data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
        self.process.stdin.write(data)

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed its output"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def handshake(self) -> None:
        init = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "raw"}}
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        assert self.receive()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> str:
        """Close its input, wait for it to end; its stderr."""
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        process.stdin.close()
        try:
            process.wait(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stdout.close()
            err = process.stderr.read()
            process.stderr.close()
        return err.decode(errors="replace")


def call(request_id: int, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def text(answer: dict[str, Any]) -> str:
    result: str = answer["result"]["content"][0]["text"]
    return result


@pytest.fixture(params=["trio", "asyncio"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    peer = Peer(str(request.param))
    try:
        peer.handshake()
        yield peer
    finally:
        err = peer.close()
        assert peer.process.returncode == 0, err
        assert "Traceback" not in err, err


def test_answers_come_in_request_order(peer: Peer) -> None:
    peer.send(*(call(i, "echo", {"message": f"m{i}"}) for i in range(1, 21)))
    answers = [peer.receive() for _ in range(20)]
    assert [a["id"] for a in answers] == list(range(1, 21))
    assert [text(a) for a in answers] == [f"m{i}" for i in range(1, 21)]


def _cancel(request_id: int) -> dict[str, Any]:
    params = {"requestId": request_id, "reason": "changed my mind"}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def test_a_cancellation_after_the_answer_changes_nothing(peer: Peer) -> None:
    peer.send(call(1, "echo", {"message": "first"}))
    assert text(peer.receive()) == "first"
    peer.send(_cancel(1), call(2, "echo", {"message": "next"}))
    second = peer.receive()
    assert (second["id"], text(second)) == (2, "next")
    # Nothing else was written for id 1: the next answer is the ping's.
    peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_a_cancellation_read_with_its_request_wins(peer: Peer) -> None:
    # Read in one chunk, the cancellation reaches the session before the request is
    # answered: the request is not answered at all (the spec's "should not respond").
    peer.send(call(1, "echo", {"message": "first"}), _cancel(1), call(2, "echo", {"message": "x"}))
    answer = peer.receive()
    assert (answer["id"], text(answer)) == (2, "x")
    peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_a_raising_tool_answers_its_error(peer: Peer) -> None:
    peer.send(call(1, "boom", {"message": "x"}), call(2, "refuse"))
    failed, refused = peer.receive(), peer.receive()
    assert failed["id"] == 1 and failed["result"]["isError"] is True
    assert "boom: x" in text(failed)
    assert refused["id"] == 2 and refused["error"]["code"] == -32602
    assert refused["error"]["message"] == "refused by the tool"


def test_a_tool_taking_its_context_gets_it(peer: Peer) -> None:
    peer.send(call(7, "whoami"), call(8, "whoami", {"suffix": "!"}))
    assert text(peer.receive()) == f"7 raw {REVISION}"
    assert text(peer.receive()) == f"8 raw {REVISION}!"


def test_arguments_are_still_checked(peer: Peer) -> None:
    peer.send(
        call(1, "echo", {"message": 5}),
        call(2, "echo", {"message": "ok", "extra": 1}),
        call(3, "echo", {}),
        call(4, "whoami", {"ctx": "not yours"}),
        call(5, "echo", {"message": "fine"}),
    )
    wrong_type, extra, missing, context, fine = (peer.receive() for _ in range(5))
    assert wrong_type["result"]["isError"] is True
    assert text(wrong_type) == (
        "invalid arguments for echo: argument 'message' must be of type string"
    )
    assert extra["error"] == {
        "code": -32602,
        "message": "invalid arguments for tool 'echo': unexpected argument 'extra'",
    }
    assert missing["error"]["message"] == (
        "invalid arguments for tool 'echo': missing required argument 'message'"
    )
    assert context["error"]["message"] == (
        "invalid arguments for tool 'whoami': unexpected argument 'ctx'"
    )
    assert text(fine) == "fine"


def test_an_async_tool_runs_beside_the_plain_ones(peer: Peer) -> None:
    # The async call waits in a task of its own (its progress says when it waits):
    # the plain calls after it are answered at once, and one of them releases it.
    slow = call(1, "slow")
    slow["params"]["_meta"] = {"progressToken": "p"}
    peer.send(slow)
    progress = peer.receive()
    assert progress["method"] == "notifications/progress"
    peer.send(call(2, "echo", {"message": "meanwhile"}))
    assert text(peer.receive()) == "meanwhile"
    peer.send(call(3, "release"))
    answers = {a["id"]: a for a in (peer.receive(), peer.receive())}
    assert text(answers[3]) == "released"
    assert text(answers[1]) == "slow done"
