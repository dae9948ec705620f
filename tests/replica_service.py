"""N replicas of ``sansio-mcp example-server`` (Streamable HTTP) on free loopback ports,
each with its own ``--replica-id`` and the ``--state-key-file`` a test gives it; started
in parallel, each awaited until it listens, stopped by pid after the block."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import attrs
import pytest
from peers import REPO, cli_command

#: Seconds a replica has to start listening (or to stop).
START_TIMEOUT = 30.0
#: How a serving command says where it listens.
ANNOUNCED = re.compile(
    r"sansio-mcp (?:example server|gateway|a2a-bridge): http://127\.0\.0\.1:(\d+)/mcp"
)


@attrs.frozen
class Replica:
    replica_id: str
    port: int
    process: subprocess.Popen[bytes] = attrs.field(repr=False)
    stderr: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def upstream(self) -> str:
        """How nginx's ``$upstream_addr`` names it."""
        return f"127.0.0.1:{self.port}"


def serving_command(command: str, directory: Path) -> list[str]:
    """``command`` (example-server, gateway or a2a-bridge) on a free port, with a config
    (written in ``directory``) naming peers that are not there: enough to start."""
    config = directory / f"{command}.json"
    if command == "gateway":
        connector = {"transport": "http", "url": "http://127.0.0.1:1/mcp"}
        config.write_text(json.dumps({"connectors": {"x": connector}}))
        return [command, "--port", "0", "--config", str(config)]
    if command == "a2a-bridge":
        config.write_text(json.dumps({"agents": {"x": {"url": "http://127.0.0.1:1"}}}))
        return [command, "--port", "0", "--config", str(config)]
    return [command, "--port", "0", "--transport", "http"]


def write_key_file(path: Path, *keys: bytes) -> Path:
    """A ``--state-key-file`` holding ``keys`` (hex, the first seals), mode 0600."""
    path.write_text(
        "# requestState key ring: the first seals\n" + "".join(f"{k.hex()}\n" for k in keys)
    )
    os.chmod(path, 0o600)
    return path


@contextmanager
def example_replicas(
    directory: Path,
    key_files: Sequence[Path | None],
    *,
    backends: Sequence[str] = ("trio", "asyncio"),
    extra: Sequence[str] = (),
    program: Sequence[str] | None = None,
) -> Iterator[list[Replica]]:
    """One replica per entry of ``key_files`` (None: no key file, a random key), named
    ``r1``, ``r2``...; their backends cycle through ``backends``.  ``program``: what
    runs instead of ``sansio-mcp example-server`` (taking ``--port``, ``--backend``,
    ``--replica-id`` and ``--state-key-file``; ``--transport http`` too unless it is
    ``sansio-mcp gateway`` or ``a2a-bridge``, which serve HTTP alone)."""
    directory.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        started = []
        for n, key_file in enumerate(key_files, start=1):
            replica_id = f"r{n}"
            stderr = directory / f"{replica_id}.stderr"
            command = program if program is not None else [*cli_command(), "example-server"]
            transport = [] if command[-1] in ("gateway", "a2a-bridge") else ["--transport", "http"]
            args = [
                *command,
                *transport,
                "--port",
                "0",
                "--backend",
                backends[(n - 1) % len(backends)],
                "--replica-id",
                replica_id,
                *extra,
            ]
            if key_file is not None:
                args += ["--state-key-file", str(key_file)]
            with open(stderr, "wb") as sink:
                process = subprocess.Popen(
                    args,
                    cwd=REPO,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=sink,
                    start_new_session=True,
                )
            stack.callback(stop_by_pid, process, signal.SIGTERM, START_TIMEOUT)
            started.append((replica_id, process, stderr))
        yield [_wait_listening(*entry) for entry in started]


def _wait_listening(replica_id: str, process: subprocess.Popen[bytes], stderr: Path) -> Replica:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        text = stderr.read_text(errors="replace")
        found = ANNOUNCED.search(text)
        if found is not None:
            return Replica(replica_id, int(found[1]), process, stderr)
        if process.poll() is not None:
            pytest.fail(f"replica {replica_id} exited with {process.returncode}:\n{text}")
        if time.monotonic() > deadline:
            pytest.fail(f"replica {replica_id} did not listen in {START_TIMEOUT} s:\n{text}")
        time.sleep(0.02)


def stop_by_pid(process: subprocess.Popen[bytes], stop: int, timeout: float) -> None:
    """``stop`` (a signal) to the process's pid, SIGKILL to its group if it lingers."""
    if process.poll() is None:
        process.send_signal(stop)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
