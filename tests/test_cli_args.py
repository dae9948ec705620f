"""The command line as users type it: options anywhere, and a clear word on a missing extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sansio_mcp_cli.main import _parse


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "add", "--args", '{"a": 1}', "http://127.0.0.1:1/mcp"],
        ["call", "add", "http://127.0.0.1:1/mcp", "--args", '{"a": 1}'],
        ["call", "--args", '{"a": 1}', "add", "http://127.0.0.1:1/mcp"],
    ],
)
def test_a_url_after_the_options_is_the_url(argv: list[str]) -> None:
    args = _parse(argv)
    assert (args.tool, args.url, args.args) == ("add", "http://127.0.0.1:1/mcp", '{"a": 1}')


def test_transport_before_the_url() -> None:
    args = _parse(["call", "echo", "--transport", "sse", "http://127.0.0.1:1/sse"])
    assert (args.tool, args.transport, args.url) == ("echo", "sse", "http://127.0.0.1:1/sse")
    args = _parse(["inspect", "--protocol-version", "2025-06-18", "ws://127.0.0.1:1/mcp"])
    assert args.url == "ws://127.0.0.1:1/mcp"


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "add", "http://a/mcp", "http://b/mcp"],  # two URLs
        ["call", "add", "--args", "{}", "not-a-url"],
        ["example-server", "http://a/mcp"],  # takes no URL
    ],
)
def test_what_is_not_understood_is_still_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _parse(argv)
    assert exited.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["check", "--", "true"]])
def test_a_missing_testing_extra_is_named(command: list[str]) -> None:
    # ``schemas where`` needs no extra (tests/test_cli_messages.py); ``check`` does.
    code = (
        "import sys; sys.modules['jsonschema'] = None\n"
        "from sansio_mcp_cli.main import main\n"
        f"sys.exit(main({command!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "pip install 'sansio-mcp[testing]'" in done.stderr
    assert "jsonschema" in done.stderr
