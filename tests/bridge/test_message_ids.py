"""A2E message ids: unique in a forked child too, with no process hook set at import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sansio_mcp_apps.a2e._messages import new_message_id


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_ids_are_uuid4_hex() -> None:
    ids = {new_message_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and i[12] == "4" and i[16] in "89ab" for i in ids)


def test_importing_the_bridge_registers_no_fork_hook() -> None:
    # The stdlib's own modules register theirs first.
    code = (
        "import logging, os, random, threading\n"
        "calls = []\n"
        "os.register_at_fork = lambda **hooks: calls.append(hooks)\n"
        "import sansio_mcp_apps.a2e, sansio_mcp_apps.a2e.runtime\n"
        "print(len(calls))\n"
    )
    assert _run(code) == "0"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    code = (
        "import os\n"
        "from sansio_mcp_apps.a2e._messages import new_message_id\n"
        "new_message_id()\n"
        "read, write = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.write(write, new_message_id().encode())\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(os.read(read, 64).decode() != new_message_id())\n"
    )
    assert _run(code) == "True"
