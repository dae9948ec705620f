"""Every serving command stops cleanly on SIGTERM and SIGINT: exit 0, children reaped,
nothing left listening."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sansio_mcp_cli"]
BACKENDS = ["trio", "asyncio"]
STOPS = [signal.SIGTERM, signal.SIGINT]
_ADDRESS = re.compile(r"(?:http|ws)://127\.0\.0\.1:(\d+)/\w+")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "signals", "version": "0"},
    },
}


def _start(args: list[str], **options: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [*CLI, *args],
        cwd=REPO,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **options,
    )


def _read_until(stream: object, pattern: re.Pattern[str], seconds: float = 30) -> re.Match[str]:
    fd = stream.fileno()  # type: ignore[attr-defined]
    seen = b""
    deadline = time.monotonic() + seconds
    while (match := pattern.search(seen.decode("utf-8", "replace"))) is None:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"not seen in time: {seen!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        chunk = os.read(fd, 4096) if ready else b""
        assert chunk, f"the process ended first: {seen!r}"
        seen += chunk
    return match


def _stop(process: subprocess.Popen[bytes], stop_with: signal.Signals) -> tuple[int, str]:
    """Send ``stop_with`` to the command alone (not its group); its status and stderr."""
    process.send_signal(stop_with)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"the command did not stop on {stop_with.name}")
    assert process.stderr is not None
    rest = process.stderr.read().decode("utf-8", "replace")
    process.stderr.close()
    return process.returncode, rest


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(autouse=True)
def _no_stragglers() -> Iterator[None]:
    yield
    # Every process started here runs in a session of its own; none may outlive its test.
    assert _descendants(os.getpid()) == set() or all(
        not _alive(pid) for pid in _descendants(os.getpid())
    )


@pytest.mark.parametrize("stop_with", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
def test_example_server_on_the_network(
    transport: str, backend: str, stop_with: signal.Signals
) -> None:
    process = _start(
        ["example-server", "--backend", backend, "--transport", transport, "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    port = int(_read_until(process.stderr, _ADDRESS).group(1))
    assert not _refused(port)
    status, rest = _stop(process, stop_with)
    assert status == 0, rest
    assert "Traceback" not in rest, rest
    assert _refused(port)


@pytest.mark.parametrize("stop_with", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize("backend", BACKENDS)
def test_example_server_on_stdio(backend: str, stop_with: signal.Signals) -> None:
    process = _start(
        ["example-server", "--backend", backend],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    process.stdin.flush()
    answer = json.loads(_read_until(process.stdout, re.compile(r".*\n")).group(0))
    assert answer["id"] == 1 and "result" in answer
    status, rest = _stop(process, stop_with)
    process.stdin.close()
    process.stdout.close()
    assert status == 0, rest
    assert "Traceback" not in rest, rest


@pytest.mark.parametrize("stop_with", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("listen", ["stdio", "ws://127.0.0.1:0"])
def test_bridge_reaps_its_servers(
    listen: str, backend: str, stop_with: signal.Signals, tmp_path: Path
) -> None:
    config = tmp_path / "bridge.json"
    server = [*CLI, "example-server"]
    config.write_text(json.dumps({"servers": [{"server_id": "ex", "cmd": server}]}))
    process = _start(
        ["bridge", "--backend", backend, "--config", str(config), "--listen", listen],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    port = None
    if listen != "stdio":
        port = int(_read_until(process.stderr, _ADDRESS).group(1))
    deadline = time.monotonic() + 30
    # Its example server running means the bridge is up (it catches signals before it spawns).
    while not any(b"example-server" in _cmdline(pid) for pid in _descendants(process.pid)):
        assert time.monotonic() < deadline, "the bridge started no server"
        assert process.poll() is None, "the bridge ended"
        time.sleep(0.05)
    children = _descendants(process.pid)
    status, rest = _stop(process, stop_with)
    assert process.stdin is not None
    process.stdin.close()
    assert status == 0, rest
    assert "Traceback" not in rest, rest
    assert [pid for pid in children if _alive(pid)] == []
    if port is not None:
        assert _refused(port)


def test_children_of_the_suite_hear_sigint() -> None:
    """The suite resets an inherited ignored SIGINT, so its servers can be interrupted."""
    done = subprocess.run(
        [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "default_int_handler" in done.stdout
