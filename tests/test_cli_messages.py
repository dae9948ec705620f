"""What the command line tells a person when something fails: how a crashing server
ended and what it wrote to stderr, what to do about a 401, the version; never a
bare JSON-RPC code.  Each case runs the real ``sansio-mcp`` command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "sansio_mcp_cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
BACKENDS = ["trio", "asyncio"]
#: An internal code shown to a person: ``(code -32000)``, ``code -3``.
INTERNAL_CODE = re.compile(r"code -?\d+")


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def crashy(tmp_path: Path) -> Path:
    script = tmp_path / "crashy.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            for n in range(40):
                print(f"setting up step {n}", file=sys.stderr)
            raise RuntimeError("database not configured")
            """
        )
    )
    return script


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("command", [["inspect"], ["call", "echo"]])
def test_a_crashing_server_says_how_it_ended(
    crashy: Path, backend: str, command: list[str]
) -> None:
    done = run(*command, "--backend", backend, "--", sys.executable, str(crashy))
    assert done.returncode == 1
    said = done.stderr
    assert "exited with status 1" in said, said
    assert "RuntimeError: database not configured" in said
    # Bounded: the last lines only, not all 40 set-up lines.
    assert "setting up step 39" in said and "setting up step 5\n" not in said
    assert "-v shows all of its stderr" in said
    assert not INTERNAL_CODE.search(said), said


@pytest.mark.parametrize("backend", BACKENDS)
def test_verbose_shows_the_whole_stderr(crashy: Path, backend: str) -> None:
    done = run("-v", "inspect", "--backend", backend, "--", sys.executable, str(crashy))
    assert done.returncode == 1
    assert "setting up step 0" in done.stderr
    assert "-v shows all" not in done.stderr


def test_a_killed_server_names_its_signal(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    done = run("inspect", "--", sys.executable, str(script))
    assert done.returncode == 1
    assert "was killed by SIGKILL" in done.stderr, done.stderr


def test_a_missing_program_is_named() -> None:
    done = run("inspect", "--", "no-such-mcp-server-program")
    assert done.returncode == 1
    assert "cannot start no-such-mcp-server-program: no such program" in done.stderr


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"sansio-mcp {version('sansio-mcp')}"


@pytest.fixture(scope="module")
def protected_url() -> Iterator[str]:
    server = subprocess.Popen(
        [*CLI, "example-server", "--transport", "http", "--port", "0", "--auth-token", "T0K"],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert server.stderr is not None
        url = server.stderr.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_401_without_credentials_says_what_to_give(protected_url: str, backend: str) -> None:
    done = run("inspect", "--backend", backend, protected_url)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "requires authorization (HTTP 401" in lines[0]
    assert "--bearer TOKEN" in lines[0] and "--oauth" in lines[0]
    assert not INTERNAL_CODE.search(done.stderr)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_bearer_token_starts_no_oauth_flow(protected_url: str, backend: str) -> None:
    done = run("-v", "inspect", "--backend", backend, "--bearer", "wrong", protected_url)
    assert done.returncode == 1
    assert "refused the token given with --bearer (HTTP 401)" in done.stderr, done.stderr
    # No discovery: the protected resource metadata is never fetched.
    assert "well-known" not in done.stderr
    assert not INTERNAL_CODE.search(done.stderr.splitlines()[-1])
    ok = run("call", "echo", "--args", '{"message": "hi"}', "--bearer", "T0K", protected_url)
    assert ok.returncode == 0, ok.stderr


def test_bearer_and_oauth_together_are_refused(protected_url: str) -> None:
    done = run("inspect", "--bearer", "T0K", "--oauth", protected_url)
    assert done.returncode == 2
    assert "not both" in done.stderr


def test_an_unknown_tool_is_told_in_words(protected_url: str) -> None:
    done = run("call", "no-such-tool", "--bearer", "T0K", protected_url)
    assert done.returncode == 1
    assert "no-such-tool" in done.stderr
    assert not INTERNAL_CODE.search(done.stderr), done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_that_is_not_an_mcp_server_is_one_line(tmp_path: Path, backend: str) -> None:
    script = tmp_path / "chatty.py"
    script.write_text(
        "import time\nfor n in range(300):\n    print(f'hello line {n}', flush=True)\n"
        "time.sleep(60)\n"
    )
    done = run("inspect", "--backend", backend, "--", sys.executable, str(script), timeout=30)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "not JSON-RPC (is it an MCP server?" in lines[0]
    assert "'hello line 0'" in lines[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_call_shows_progress_as_it_comes(backend: str) -> None:
    done = run(
        "call", "slow", "--args", '{"seconds": 0.5}', "--backend", backend,
        "--", *CLI, "example-server",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "progress" in line]
    assert lines == [f"sansio-mcp call: progress {n}/5: step {n} of 5" for n in range(1, 6)]


def test_progress_at_a_terminal_is_one_bar_rewritten() -> None:
    import io

    from sansio_mcp_cli._progress import ProgressDisplay

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    progress = ProgressDisplay("call", screen)
    progress(1, 4, "one")
    progress(4, 4, "four")
    progress(7, None, None)
    progress.done()
    shown = screen.getvalue()
    assert shown.count("\n") == 1 and shown.endswith("\n")
    frames = shown.rstrip("\n").split("\r\x1b[K")[1:]
    assert frames[0].endswith("25% one") and frames[1].endswith("100% four")
    assert frames[1].startswith("[" + "#" * 24 + "]")
    assert frames[2] == "[7]"


@pytest.fixture(scope="module")
def legacy_sse_url() -> Iterator[str]:
    server = subprocess.Popen(
        [*CLI, "example-server", "--transport", "sse", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert server.stderr is not None
        url = server.stderr.readline().split()[-1]
        assert url.endswith("/sse"), url
        yield url
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_url_refusing_post_falls_back_to_legacy_sse(legacy_sse_url: str, backend: str) -> None:
    done = run("-v", "call", "echo", "--args", '{"message": "old"}', "--backend", backend,
               legacy_sse_url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"text": "old"' in done.stdout
    assert "answered POST with HTTP 405: trying the 2024-11-05 HTTP+SSE transport" in done.stderr


def test_schemas_where_needs_no_testing_extra(tmp_path: Path) -> None:
    """Only validating needs jsonschema: finding the schema files does not."""
    (tmp_path / "2025-11-25").mkdir()
    (tmp_path / "2025-11-25" / "schema.json").write_text("{}")
    without_extra = (
        "import sys\n"
        "for name in ('jsonschema', 'referencing', 'hypothesis'):\n"
        "    sys.modules[name] = None  # as if the testing extra were not installed\n"
        "from sansio_mcp_cli.main import main\n"
        "sys.exit(main(['schemas', 'where', '--schema-dir', sys.argv[1]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", without_extra, str(tmp_path)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert "testing' extra" not in done.stderr, done.stderr
    assert f"2025-11-25       {tmp_path / '2025-11-25' / 'schema.json'}" in done.stdout
