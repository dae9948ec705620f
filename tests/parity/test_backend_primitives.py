"""The Backend's processes, pipes, timers and task groups behave alike on both
backends: the runtime (the bridge runner, the A2E client, stopping a server
process) is written once against them."""

from __future__ import annotations

import hashlib
import logging
import math
import os
import signal
import sys
from typing import Any

import pytest

from sansio_mcp.runtime import ByteStream
from sansio_mcp.runtime._process import drain_stderr, stop_process
from sansio_mcp.runtime._sender import Sender

from .harness import BACKENDS, run

# Reads stdin to its end, then answers with its length and SHA-256 (and says so on stderr).
_DIGEST = (
    "import sys, hashlib\n"
    "data = sys.stdin.buffer.read()\n"
    "sys.stderr.write('read %d bytes\\n' % len(data)); sys.stderr.flush()\n"
    "sys.stdout.write('%d %s\\n' % (len(data), hashlib.sha256(data).hexdigest()))\n"
)
# Ignores SIGTERM and stdin's end: only SIGKILL stops it.
_STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
    "time.sleep(60)\n"
)


async def _read_all(stream: ByteStream) -> bytes:
    chunks = []
    while chunk := await stream.receive_some(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_timer_fires_once_when_due_and_moves_when_set_again(backend: str) -> None:
    primitives = BACKENDS[backend]

    async def body() -> None:
        fired: list[float] = []
        async with primitives.open_task_group() as group:
            timer = primitives.start_timer(group, lambda: fired.append(primitives.clock()))
            start = primitives.clock()
            timer.set(0.5)
            timer.set(0.05)  # earlier: the earlier time counts
            await primitives.sleep(0.3)
            assert len(fired) == 1 and 0.04 <= fired[0] - start < 0.25
            timer.set(0.05)
            timer.set(math.inf)  # disarmed before it was due
            timer.set(0.1)
            timer.set(0.3)  # later: moved
            await primitives.sleep(0.2)
            assert len(fired) == 1
            await primitives.sleep(0.3)
            assert len(fired) == 2 and 0.25 <= fired[1] - start - 0.3 < 0.45
            timer.set(0.01)
            timer.cancel()
            await primitives.sleep(0.1)
            assert len(fired) == 2
            group.cancel()

    run(backend, body)


def test_cancelling_a_group_from_its_body_ends_it_quietly(backend: str) -> None:
    """The task that ran the block goes on afterwards: the cancellation does not
    leak out to its next wait (asyncio cancels that task, and takes it back)."""
    primitives = BACKENDS[backend]

    async def body() -> str:
        async with primitives.open_task_group() as group:
            group.cancel()  # the last thing in the block, nothing awaited after it
        async with primitives.open_task_group() as group:
            group.start_soon(primitives.sleep, math.inf)
            await primitives.sleep(0)
            group.cancel()
            await primitives.sleep(math.inf)  # ended by the cancel
        await primitives.sleep(0.01)
        return "went on"

    assert run(backend, body) == "went on"


def test_a_shielded_step_finishes_though_its_caller_is_cancelled(backend: str) -> None:
    """The step is under way when its caller is cancelled, and may finish only after
    the cancel: two signals order them, not a race of sleeps (a stalled process wakes
    both sleepers in one turn, and Trio may run either first)."""
    primitives = BACKENDS[backend]

    async def body() -> list[str]:
        steps: list[str] = []
        started = primitives.new_signal()
        may_finish = primitives.new_signal()

        async def step() -> None:
            started.set()
            await may_finish.wait()
            steps.append("finished")

        async with primitives.open_task_group() as group:

            async def caller() -> None:
                await primitives.shielded(step)
                steps.append("not reached: cancelled on the way out")

            group.start_soon(caller)
            await started.wait()
            group.cancel()
            may_finish.set()
        return steps

    assert run(backend, body) == ["finished"]


def test_a_process_on_pipes_a_sender_and_stderr_drained(
    backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A megabyte through a child's stdin by a Sender (in order, whatever the pipe
    takes at once), its answer from stdout, its stderr logged line by line; it
    exits by itself once its input ends, before any signal."""
    caplog.set_level(logging.DEBUG, logger="sansio_mcp.stdio")
    primitives = BACKENDS[backend]
    data = os.urandom(1 << 20)

    async def body() -> tuple[bytes, int | None]:
        process = await primitives.open_process(
            [sys.executable, "-c", _DIGEST], env=dict(os.environ), cwd=None
        )
        try:
            async with primitives.open_task_group() as group:
                group.start_soon(drain_stderr, process.stderr, "digest")
                sender = Sender(primitives, process.stdin)
                group.start_soon(sender.run)
                for i in range(0, len(data), 4096):
                    sender.write(data[i : i + 4096])
                await sender.flushed()
                await process.stdin.aclose()
                answer = await _read_all(process.stdout)
                assert await process.wait() == 0
                group.cancel()
        finally:
            await stop_process(primitives, process, grace=5)
        return answer, process.returncode

    answer, code = run(backend, body)
    assert answer == f"{len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()
    assert code == 0
    assert f"[digest stderr] read {len(data)} bytes" in caplog.text


def test_stopping_a_process_that_ignores_sigterm_kills_it(backend: str) -> None:
    primitives = BACKENDS[backend]

    async def body() -> tuple[int | None, float]:
        process = await primitives.open_process(
            [sys.executable, "-c", _STUBBORN], env=dict(os.environ), cwd=None
        )
        said = b""
        while not said.endswith(b"\n"):
            said += await process.stdout.receive_some()
        assert said == b"ready\n"
        start = primitives.clock()
        await stop_process(primitives, process, grace=0.3)
        return process.returncode, primitives.clock() - start

    code, took = run(backend, body)
    # stdin closed: 0.3 s; SIGTERM ignored: 0.3 s more; then SIGKILL.
    assert code == -signal.SIGKILL
    assert 0.55 <= took < 5


def test_a_missing_program_is_file_not_found(backend: str) -> None:
    primitives = BACKENDS[backend]

    async def body() -> Any:
        return await primitives.open_process(
            ["/nonexistent/sansio-mcp-no-such-program"], env={}, cwd=None
        )

    with pytest.raises(FileNotFoundError):
        run(backend, body)
