"""A real redis-server for the tests: on a free loopback port, with no persistence,
stopped by its pid; stopped and started again on the same port for the "Redis down"
tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from peers import free_port

MISSING = "redis-server is not installed: apt-get install redis-server"
_START_TIMEOUT = 10.0


def redis_server_path() -> str:
    """The ``redis-server`` to run; skips the test with one line when there is none."""
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").is_file() else None
    )
    if found is None:
        pytest.skip(MISSING)
    return found


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisService:
    """One redis-server process; ``url`` stays the same across :meth:`stop` and :meth:`start`."""

    def __init__(self, directory: Path) -> None:
        self.executable = redis_server_path()
        self.directory = directory
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (on a new free port the first time, on the same one after
        :meth:`stop`) and wait until it answers PING."""
        assert self.process is None, "already running"
        for _ in range(5):  # a free port can be taken between looking and binding
            port = self.port or free_port()
            log = self.directory / f"redis-{port}.log"
            options = {
                "port": str(port),
                "bind": "127.0.0.1",
                "save": "",  # no snapshots, no append-only file: nothing on disk
                "appendonly": "no",
                "dir": str(self.directory),
                "logfile": str(log),
                "daemonize": "no",
            }
            argv = [self.executable]
            for name, value in options.items():
                argv += [f"--{name}", value]
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + _START_TIMEOUT
            while self.process.poll() is None and time.monotonic() < deadline:
                if _answers_ping(port):
                    self.port = port
                    return
                time.sleep(0.01)  # polling for readiness, not waiting a fixed time
            self.stop()
            if self.port:
                break  # the same port is wanted: trying another would not do
        text = log.read_text(errors="replace") if log.exists() else ""
        raise RuntimeError(f"redis-server did not start on port {port}:\n{text[-2000:]}")

    def stop(self) -> None:
        """Stop the server by its pid (SIGTERM, then SIGKILL) and reap it."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self) -> None:
        """Stop the server and start it again on the same port (its data gone)."""
        self.stop()
        self.start()
