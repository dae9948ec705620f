"""The high-level client and server APIs over stdio, on both backends and across them.

The server is a real subprocess -- the bundled example server started with
``python -m sansio_mcp_cli example-server --backend <server backend>`` (or,
where a test needs a probe, ``stdio_server.py``, the same server plus
``block``/``env``/``pid``) -- and the client is ``open_stdio_client`` of the
client backend.  Every (server, client) pair runs in both eras.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from sansio_mcp import InvalidParams, RequestTimeout

from .harness import (
    BACKENDS,
    COUNTER_URI,
    EXAMPLE_TOOLS,
    ROOT,
    Answers,
    cancellable,
    run,
    texts,
    wait_until,
)

MODES = {"legacy": "2025-11-25", "modern": "2026-07-28"}
PROBE_SERVER = str(Path(__file__).with_name("stdio_server.py"))


def example_command(server_backend: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sansio_mcp_cli",
        "example-server",
        "--backend",
        server_backend,
        *extra,
    ]


def probe_command(server_backend: str, *extra: str) -> list[str]:
    return [sys.executable, PROBE_SERVER, "--backend", server_backend, *extra]


@pytest.fixture(params=list(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie is dead here
    except OSError:
        return False


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


# Every (server backend, client backend) pair, both eras ----------------------------------


def test_tools_progress_errors_ping(pair: tuple[str, str], mode: str) -> None:
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]

    async def body() -> None:
        command = example_command(server_backend, "--page-size", "2")
        async with backend.connect(command, None, None, mode=mode) as client:
            assert client.protocol_version == MODES[mode]
            assert client.session.is_stateless is (mode == "modern")
            assert client.server_info["name"] == "sansio-mcp-example"
            # Nine tools, gathered across five pages of two.
            assert {t["name"] for t in await client.list_tools()} == EXAMPLE_TOOLS

            added = await client.call_tool("add", {"a": 2, "b": 40})
            assert added["structuredContent"] == {"sum": 42}
            assert texts(added) == "42"

            progress: list[tuple[float, float | None, str | None]] = []
            slow = await client.call_tool(
                "slow",
                {"seconds": 0.2, "steps": 3},
                on_progress=lambda p, t, m: progress.append((p, t, m)),
            )
            assert texts(slow) == "done after 0.2 seconds in 3 steps"
            assert [(p, t) for p, t, _ in progress] == [(1, 3), (2, 3), (3, 3)]
            assert progress[0][2] == "step 1 of 3"

            with pytest.raises(InvalidParams, match="unknown tool"):
                await client.call_tool("no-such-tool", {})
            failed = await client.call_tool("fail", {"message": "on purpose"})
            assert failed["isError"] is True and texts(failed) == "on purpose"

            await client.ping()
            assert texts(await client.call_tool("echo", {"message": "still ☃"})) == "still ☃"

    run(client_backend, body)


def test_client_features(pair: tuple[str, str], mode: str) -> None:
    """sample / elicit / list_roots / survey: server-to-client requests on a handshake
    session, MRTR input_required rounds on 2026-07-28 -- answered by the same handlers."""
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]
    answers = Answers()

    async def body() -> None:
        async with backend.connect(
            example_command(server_backend), None, None, mode=mode, handlers=answers.handlers()
        ) as client:
            assert texts(await client.call_tool("sample", {"prompt": "meaning?"})) == "forty-two"
            elicited = await client.call_tool("elicit", {"question": "name?"})
            assert elicited["structuredContent"] == {
                "action": "accept",
                "answer": "answer to name?",
            }
            roots = await client.call_tool("list_roots", {})
            assert roots["structuredContent"] == {"roots": [ROOT]}
            survey = await client.call_tool("survey", {"questions": ["a?", "b?"]})
            assert survey["structuredContent"] == {
                "answers": {"a?": "answer to a?", "b?": "answer to b?"},
                "completed": True,
            }

    run(client_backend, body)
    assert answers.sampled == ["meaning?"]
    assert answers.elicited == ["name?", "a?", "b?"]
    assert answers.roots_asked == 1


def test_listen_sees_increment(pair: tuple[str, str], mode: str) -> None:
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]

    async def body() -> None:
        async with backend.connect(example_command(server_backend), None, None, mode=mode) as c:
            async with c.listen(resource_uris=[COUNTER_URI]) as subscription:
                assert texts(await c.call_tool("increment", {"by": 2})) == "2"
                async with backend.fail_after(5):
                    method, params = await subscription.__anext__()
                assert (method, params["uri"]) == ("notifications/resources/updated", COUNTER_URI)
            read = await c.read_resource(COUNTER_URI)
            assert read["contents"][0]["text"].replace(" ", "") == '{"value":2}'

    run(client_backend, body)


def test_cancellation_and_timeout(
    pair: tuple[str, str], mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A cancelled call is cancelled on the wire (the server's handler stops); a call
    past its timeout raises RequestTimeout; the session goes on after both."""
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]
    caplog.set_level(logging.DEBUG, logger=f"{client_backend}_adapters.stdio")

    async def body() -> None:
        async with backend.connect(probe_command(server_backend), None, None, mode=mode) as c:
            async with cancellable(client_backend) as cancel:
                await c.call_tool("block", {"seconds": 30}, on_progress=lambda *_: cancel())
                raise AssertionError("the call was not cancelled")
            assert c.session.pending_requests == frozenset()
            # The server's handler saw the cancellation (it says so on its stderr).
            await wait_until(backend, lambda: "block cancelled" in caplog.text)
            echoed = await c.call_tool("echo", {"message": "after cancel"})
            assert texts(echoed) == "after cancel"

            with pytest.raises(RequestTimeout):
                await c.call_tool("block", {"seconds": 30}, timeout=0.3)
            await wait_until(backend, lambda: caplog.text.count("block cancelled") == 2)
            assert texts(await c.call_tool("echo", {"message": "after timeout"})) == (
                "after timeout"
            )

    run(client_backend, body)


async def _all_of(client_backend: str, calls: list[Any]) -> list[Any]:
    """Run the coroutine functions ``calls`` concurrently; their results in order."""
    if client_backend == "asyncio":
        return list(await asyncio.gather(*(call() for call in calls)))
    results: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        results[i] = await calls[i]()

    async with trio.open_nursery() as nursery:
        for i in range(len(calls)):
            nursery.start_soon(one, i)
    return results


def test_messages_larger_than_a_pipe_concurrently(pair: tuple[str, str]) -> None:
    """Every message here is many times a pipe's buffer, so writes go out in parts, and
    twelve of them are in flight at once each way: each answer must arrive whole, in
    its own response."""
    server_backend, client_backend = pair
    backend = BACKENDS[client_backend]
    messages = [f"{i:02d}" + chr(0x2603 + i) * (300_000 + i) for i in range(12)]

    async def body() -> None:
        async with backend.connect(example_command(server_backend), None, None) as client:

            def echo(message: str) -> Any:
                return lambda: client.call_tool("echo", {"message": message})

            answers = await _all_of(client_backend, [echo(m) for m in messages])
            assert [texts(a) for a in answers] == messages
            assert texts(await client.call_tool("echo", {"message": "small"})) == "small"

    run(client_backend, body)


# The stdio client's process handling, per client backend ----------------------------------


def test_child_gets_minimal_environment(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANSIO_PARITY_SECRET", "do-not-leak")
    api = BACKENDS[backend]

    async def body() -> dict[str, Any]:
        async with api.connect(probe_command(backend), None, None, env={"EXTRA": "yes"}) as c:
            return dict((await c.call_tool("env", {}))["structuredContent"])

    env = run(backend, body)
    assert env["EXTRA"] == "yes"
    assert "SANSIO_PARITY_SECRET" not in env
    assert "PATH" in env


def test_inherit_env_passes_everything(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANSIO_PARITY_SECRET", "visible")
    api = BACKENDS[backend]

    async def body() -> dict[str, Any]:
        async with api.connect(probe_command(backend), None, None, inherit_env=True) as c:
            return dict((await c.call_tool("env", {}))["structuredContent"])

    assert run(backend, body)["SANSIO_PARITY_SECRET"] == "visible"


def test_chatty_stderr_never_blocks(backend: str) -> None:
    """4 MiB of stderr before the server even reads stdin: far beyond a pipe buffer."""
    api = BACKENDS[backend]

    async def body() -> str:
        async with api.connect(probe_command(backend, "--chatty", "4096"), None, None) as c:
            return texts(await c.call_tool("echo", {"message": "still here"}))

    assert run(backend, body, budget=20) == "still here"


def test_close_stops_the_process_and_leaks_no_fds(backend: str) -> None:
    api = BACKENDS[backend]

    async def body() -> None:
        before = _open_fds()
        async with api.connect(probe_command(backend), None, None) as c:
            pid = int(texts(await c.call_tool("pid", {})))
            assert _alive(pid)
        assert not _alive(pid)
        assert _open_fds() == before

    run(backend, body)


def test_stubborn_server_is_killed(backend: str) -> None:
    api = BACKENDS[backend]

    async def body() -> int:
        command = probe_command(backend, "--stubborn")
        async with api.connect(command, None, None, shutdown_grace=0.5) as c:
            return int(texts(await c.call_tool("pid", {})))

    pid = run(backend, body, budget=15)
    assert not _alive(pid)


def test_missing_command_is_an_os_error(backend: str) -> None:
    api = BACKENDS[backend]

    async def body() -> None:
        async with api.connect(["/nonexistent/definitely-not-here"], None, None):
            raise AssertionError("connected to nothing")

    with pytest.raises(OSError):
        run(backend, body)
