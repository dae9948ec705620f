"""Every embedding example under examples/ runs end to end, as a user runs it."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(name: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # everything it started stopped, quietly
    return done.stdout.splitlines()


def test_unix_socket_on_the_pure_core() -> None:
    assert _run("unix_socket.py") == [
        "tools: ['echo']",
        "echo: over a Unix socket",
        "tools/call failed: tools/call timed out",
    ]


def test_message_queue_drives_the_declarative_server_without_an_adapter() -> None:
    assert _run("message_queue.py") == [
        "tools: ['add', 'countdown']",
        "add: 42",
        "progress 1/3",
        "progress 2/3",
        "progress 3/3",
        "countdown: liftoff",
        "launch failed: -32602 unknown tool: 'launch'",
    ]


def test_starlette_and_uvicorn_in_a_loop_of_their_own() -> None:
    assert _run("starlette_uvicorn.py") == [
        "app started",
        "/health: ok",
        "tools: ['forecast']",
        "forecast: Oslo: sunny",
        "app stopped",
        "listening: False",
    ]


def test_trio_nursery_with_cancellation() -> None:
    assert _run("trio_nursery.py") == [
        "client: tools ['slow', 'echo']",
        "client: gave up on slow (cancelled: True)",
        "server: slow cancelled after step 1 of 30",
        "client: echo still here",
        "server: the client closed; serve returned",
        "nursery closed",
    ]


def test_tasks_server_demo() -> None:
    assert _run("tasks_server.py") == [
        "long job done: 3 steps in 0.3 s | last status: completed",
        "approve_job is a task: True",
        "deploy: done",
        "without the extension: long job done: 1 steps in 0 s",
        "approve_job without the extension: -32021",
    ]


def test_tasks_server_on_the_command_line() -> None:
    """``sansio-mcp call`` follows a task, its status changes on stderr, on 2026-07-28
    and in 2025-11-25's own task form."""
    server = [sys.executable, str(ROOT / "examples" / "tasks_server.py"), "--serve"]

    def approve(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sansio_mcp_cli", "call", "approve_job", *options,
             "--args", '{"job": "x"}', "--elicit", '{"approve": true}', "--", *server],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip

    done = approve()
    assert done.returncode == 0, done.stderr
    assert '"text": "x: done"' in done.stdout
    statuses = [line.split(": ")[2] for line in done.stderr.splitlines()]
    asked = [s for s in statuses if s.startswith("input_required")]
    assert asked and all(s.startswith("input_required; asks ") for s in asked)
    assert statuses[-1] == "completed"
    assert all(a != b for a, b in itertools.pairwise(statuses))  # changes only
    legacy = approve("--protocol-version", "2025-11-25")
    # 2025-11-25 has tasks of its own (params.task, tasks/get, tasks/result): followed too
    assert legacy.returncode == 0, legacy.stderr
    assert '"text": "x: done"' in legacy.stdout and "related-task" in legacy.stdout
    statuses = [line.split(": ")[2] for line in legacy.stderr.splitlines()]
    assert statuses[0] == "working" and statuses[-1] == "completed"
