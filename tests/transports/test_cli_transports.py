"""The ``sansio-mcp`` command line over the network transports, as a user runs it:
``example-server --transport http|sse|ws --port 0`` (which prints its URL on
stderr), then ``inspect URL`` and ``call add URL --args ...`` against it."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import peers
import pytest

from .helpers import EXAMPLE_TOOLS, NEWEST_HANDSHAKE, STATELESS

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30
#: The example server plus a tool whose result JSON cannot carry.
UNSENDABLE_SERVER = Path(__file__).resolve().parents[1] / "unsendable_server.py"
_URL = re.compile(r"(?:http|ws)://127\.0\.0\.1:\d+/\w+")


def _stop(process: subprocess.Popen[bytes], stop_with: signal.Signals) -> int:
    """Signal (then kill) a CLI process group; its exit status."""
    if process.poll() is None:
        os.killpg(process.pid, stop_with)
        try:
            return process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail(f"the example server did not stop on {stop_with.name}")
    return process.returncode


@contextmanager
def example_server(
    transport: str,
    backend: str = "trio",
    stop_with: signal.Signals = signal.SIGINT,
    *,
    script: Path | None = None,
) -> Iterator[str]:
    """``sansio-mcp example-server --transport T --port 0`` (or ``script``, a server
    script taking ``--backend`` and ``--transport``); the URL it prints.

    On exit the server is stopped with ``stop_with`` (SIGINT, as Ctrl-C, or SIGTERM) and
    must exit 0 (on Trio, without a traceback)."""
    command = ["--backend", backend, "--transport", transport]
    if script is None:
        command = [*peers.cli_command(), "example-server", *command, "--host", "127.0.0.1"]
        command += ["--port", "0"]
    else:
        command = [sys.executable, str(script), *command]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + TIMEOUT
        seen = b""
        while (match := _URL.search(seen.decode("utf-8", "replace"))) is None:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no URL on the server's stderr: {seen!r}"
            ready, _, _ = select.select([process.stderr], [], [], remaining)
            chunk = os.read(process.stderr.fileno(), 4096) if ready else b""
            assert chunk, f"the example server exited: {seen!r}"
            seen += chunk
        yield match.group(0)
    finally:
        status = _stop(process, stop_with)
        assert process.stderr is not None
        rest = process.stderr.read().decode("utf-8", "replace")
        process.stderr.close()
    assert status == 0, rest
    if backend == "trio":
        # (The asyncio backend may log Python 3.11's "Exception in callback
        # StreamReaderProtocol..." for handler tasks cancelled at shutdown: noise
        # reported separately, not asserted here.)
        assert "Traceback" not in rest, rest


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return peers.run_cli(*args, timeout=TIMEOUT)


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize(
    ("transport", "extra", "expected"),
    [
        pytest.param("http", [], STATELESS, id="http-auto"),
        pytest.param(
            "http", ["--protocol-version", NEWEST_HANDSHAKE], NEWEST_HANDSHAKE, id="http-2025"
        ),
        pytest.param("sse", ["--transport", "sse"], NEWEST_HANDSHAKE, id="sse"),
        pytest.param("ws", [], STATELESS, id="ws-auto"),
    ],
)
def test_inspect_and_call_over_the_network(
    transport: str, extra: list[str], expected: str, backend: str
) -> None:
    """Served on ``backend``; the client commands run on the default (Trio)."""
    with example_server(transport, backend) as url:
        assert url.startswith("ws://" if transport == "ws" else "http://")
        assert url.endswith("/sse" if transport == "sse" else "/mcp")

        inspected = run_cli("inspect", url, *extra)
        assert inspected.returncode == 0, inspected.stderr
        report = json.loads(inspected.stdout)
        assert report["protocolVersion"] == expected
        assert report["serverInfo"]["name"] == "sansio-mcp-example"
        assert {t["name"] for t in report["tools"]} == EXAMPLE_TOOLS
        assert "example://readme" in {r["uri"] for r in report["resources"]}

        # Options anywhere, as users type them: the URL last.
        called = run_cli("call", "add", *extra, "--args", '{"a": 2, "b": 40}', url)
        assert called.returncode == 0, called.stderr
        result = json.loads(called.stdout)
        assert result["structuredContent"] == {"sum": 42}

        failed = run_cli("call", "fail", url, "--args", '{"message": "no"}', *extra)
        assert failed.returncode == 1
        assert json.loads(failed.stdout)["isError"] is True


def test_call_with_answers_over_http() -> None:
    """``--elicit`` answers an elicitation (an MRTR round on 2026-07-28)."""
    with example_server("http") as url:
        called = run_cli(
            "call",
            "elicit",
            url,
            "--args",
            '{"question": "colour?"}',
            "--elicit",
            '{"answer": "teal"}',
        )
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["structuredContent"] == {
            "action": "accept",
            "answer": "teal",
        }


def test_unreachable_url_fails_cleanly() -> None:
    from .helpers import free_port

    done = run_cli("inspect", f"http://127.0.0.1:{free_port()}/mcp", "--timeout", "5")
    assert done.returncode == 1
    assert done.stderr.startswith("sansio-mcp inspect:")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
def test_an_infinite_result_is_answered_and_the_server_goes_on(
    transport: str, backend: str
) -> None:
    """A result JSON cannot carry is the handler's bug: -32603, never a dropped connection."""
    extra = ["--transport", "sse"] if transport == "sse" else []
    with example_server(transport, backend, script=UNSENDABLE_SERVER) as url:
        infinite = run_cli("call", "unsendable", url, *extra)
        assert infinite.returncode == 1, infinite.stderr
        assert "-32603" in infinite.stderr or "internal error" in infinite.stderr
        assert "cannot be sent as JSON" in infinite.stderr
        fine = run_cli("call", "add", url, *extra, "--args", '{"a": 1, "b": 2}')
        assert fine.returncode == 0, fine.stderr
        assert json.loads(fine.stdout)["structuredContent"] == {"sum": 3}
