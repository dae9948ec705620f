"""``sansio-mcp call`` against a server whose answer cannot be read (NaN, an
infinity, a number beyond a float, nesting beyond the limit, invalid JSON) exits at
once naming what was wrong, not after its time limit.  On both backends."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parent / "malformed_answer_server.py"
WHY = {
    "nan": "NaN is not valid JSON",
    "infinity": "Infinity is not valid JSON",
    "huge-number": "the number 1e999 is beyond the range of a float",
    "deep": "message nests deeper than 64 levels",
    "garbage": "invalid JSON: Expecting value",
}


@pytest.mark.parametrize("fault", sorted(WHY))
@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_call_fails_at_once_on_an_unreadable_answer(backend: str, fault: str) -> None:
    started = time.monotonic()
    call = ["call", "broken", "--backend", backend, "--args", "{}"]
    done = subprocess.run(
        [sys.executable, "-m", "sansio_mcp_cli", *call, "--", sys.executable, str(SERVER), fault],
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    [said] = [line for line in done.stderr.splitlines() if line.startswith("sansio-mcp call:")]
    assert "the answer to tools/call was malformed: " in said and WHY[fault] in said, said
    assert "timed out" not in done.stderr
    assert seconds < 30  # not the 60 s time limit
