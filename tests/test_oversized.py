"""An answer over the message limit fails its request at once, naming its size and the
limit, and ``--max-message-size`` (the ``max_message_size`` keyword of every client)
raises the limit. Against a real subprocess server, on both backends."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Its ``big BYTES`` mode answers the ``big`` tool with a text of BYTES bytes.
SERVER = Path(__file__).resolve().parent / "toolkit" / "real_world_server.py"

SIZE = 8_400_000


def _call(*options: str, size: int = SIZE, backend: str = "trio") -> tuple[int, str, float]:
    started = time.monotonic()
    call = ["call", "big", "--backend", backend, "--protocol-version", "2025-11-25"]
    arguments = ["--args", "{}", *options]
    server = [sys.executable, str(SERVER), "big", str(size)]
    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", *call, *arguments, "--", *server],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_an_oversized_answer_fails_at_once_naming_the_limit(backend: str) -> None:
    status, output, seconds = _call(backend=backend)
    assert status == 1, output
    # The answer's own size (the text and its JSON around it) and the limit, by name.
    assert re.search(r"a message of 84\d{5} bytes exceeds the 8388608-byte limit", output), output
    assert "timed out" not in output
    assert seconds < 30  # not the 60 s time limit


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_max_message_size_raises_the_limit(backend: str) -> None:
    status, output, _ = _call("--max-message-size", str(16 * 1024 * 1024), backend=backend)
    assert status == 0, output[-2000:]
    assert output.count("x") >= SIZE
