"""A real redis-server for the tests: on a free loopback port, with no persistence,
stopped by its pid; stopped and started again on the same port for the "Redis down"
tests.

It runs daemonized (its pid from its pid file), so it is no child of the test process:
a session's server outlives many tests, and the suite's leak checks (no child may
outlive its test) must not take it for a leaked one."""

from __future__ import annotations

import os
import shutil
import signal
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


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie that nobody reaped yet counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


class RedisService:
    """One redis-server process; ``url`` stays the same across :meth:`stop` and :meth:`start`."""

    def __init__(self, directory: Path) -> None:
        self.executable = redis_server_path()
        self.directory = directory
        self.port = 0
        #: The running server's pid (None while stopped).
        self.pid: int | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (on a new free port the first time, on the same one after
        :meth:`stop`) and wait until it answers PING."""
        assert self.pid is None, "already running"
        for _ in range(5):  # a free port can be taken between looking and binding
            port = self.port or free_port()
            log = self.directory / f"redis-{port}.log"
            pidfile = self.directory / f"redis-{port}.pid"
            pidfile.unlink(missing_ok=True)
            options = {
                "port": str(port),
                "bind": "127.0.0.1",
                "save": "",  # no snapshots, no append-only file: nothing on disk
                "appendonly": "no",
                "dir": str(self.directory),
                "logfile": str(log),
                "daemonize": "yes",
                "pidfile": str(pidfile),
            }
            argv = [self.executable]
            for name, value in options.items():
                argv += [f"--{name}", value]
            # The launcher forks the server off and exits at once.
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=_START_TIMEOUT,
                check=False,
            )
            deadline = time.monotonic() + _START_TIMEOUT
            while time.monotonic() < deadline:
                if self.pid is None and pidfile.is_file():
                    text = pidfile.read_text().strip()
                    self.pid = int(text) if text.isdigit() else None
                if self.pid is not None and _gone(self.pid):
                    break
                if self.pid is not None and _answers_ping(port):
                    self.port = port
                    return
                time.sleep(0.01)  # polling for readiness, not waiting a fixed time
            self.stop()
            if self.port:
                break  # the same port is wanted: trying another would not do
        text = log.read_text(errors="replace") if log.exists() else ""
        raise RuntimeError(f"redis-server did not start on port {port}:\n{text[-2000:]}")

    def stop(self) -> None:
        """Stop the server by its pid (SIGTERM, then SIGKILL) and wait until it is gone."""
        pid, self.pid = self.pid, None
        if pid is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if _gone(pid):
                    return
                time.sleep(0.01)

    def restart(self) -> None:
        """Stop the server and start it again on the same port (its data gone)."""
        self.stop()
        self.start()
