"""``--store``, ``--state-key-file`` and ``--replica-id`` on the three serving commands:
what they accept, and the precise refusals before anything starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sansio_mcp_cli.main import _parse, main

COMMANDS = [
    ["example-server", "--transport", "http", "--port", "0"],
    ["gateway", "--config", "gateway.json", "--port", "0"],
    ["a2a-bridge", "--config", "agents.json", "--port", "0"],
]
KEY = "ab" * 32


def key_file(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "state-keys"
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_the_defaults(command: list[str]) -> None:
    args = _parse(command)
    assert (args.store, args.state_key_file, args.replica_id) == ("memory", None, None)
    args = _parse([*command, "--store", "redis://[::1]:6380/2", "--replica-id", "r1"])
    assert (args.store, args.replica_id) == ("redis://[::1]:6380/2", "r1")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    "store", ["Memory", "", "rediss://127.0.0.1:6379/0", "127.0.0.1:6379", "postgres://h/0"]
)
def test_a_store_other_than_memory_or_redis_is_refused_saying_what_is_accepted(
    command: list[str], store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--store", store])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --store: {store!r} is not a store: give 'memory' or " in err
    assert "'redis://HOST:PORT/DB'" in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("store", "said"),
    [
        ("redis://127.0.0.1:6379/x", "the database must be a number"),
        ("redis://127.0.0.1:70000/0", "malformed store URL"),
        ("redis:///0", "malformed store URL"),
        ("redis://h:6379/0?speed=9", "unknown option 'speed'"),
    ],
)
def test_a_malformed_redis_url_is_refused_saying_why(
    command: list[str], store: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--store", store])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --store: " in err and said in err and "'memory'" in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_shared_store_without_a_key_file_refuses_to_start(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--store", "redis://:hunter2@127.0.0.1:1/0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sansio-mcp {command[0]}: --store redis://127.0.0.1:1/0 is shared")
    assert "hunter2" not in err
    assert "give --state-key-file PATH" in err and "docs/deployment.md" in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("# ring\n" + "00" * 16 + "\n", " line 2: the key is 16 bytes; at least 32"),
        ("not a key, a passphrase\n", " line 1: not a key in hex or base64"),
        ("\n# nothing\n", ": no key"),
        (KEY + "\n" + KEY + "\n", " line 2: the same key as line 1"),
    ],
)
def test_a_bad_key_file_is_refused_naming_file_and_line(
    command: list[str], text: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = key_file(tmp_path, text)
    assert main([*command, "--state-key-file", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sansio-mcp {command[0]}: --state-key-file: {path}{said}")
    assert "passphrase" not in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_missing_binary_or_huge_key_file_is_refused(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing")
    assert main([*command, "--state-key-file", missing]) == 2
    said = f"--state-key-file: cannot read {missing}: No such file or directory"
    assert said in capsys.readouterr().err
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe" * 32)
    assert main([*command, "--state-key-file", str(binary)]) == 2
    assert f"{binary} is not text" in capsys.readouterr().err
    huge = tmp_path / "huge"
    huge.write_text((KEY + "\n") * 2000)
    assert main([*command, "--state-key-file", str(huge)]) == 2
    assert f"{huge} is over 65536 bytes" in capsys.readouterr().err


def test_a_key_file_others_may_read_is_used_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sansio_mcp_cli._replicas import replica_options

    path = key_file(tmp_path, f"{KEY}\n{'cd' * 32}\n", mode=0o644)
    options = replica_options(_parse(["example-server", "--state-key-file", path]))
    assert options.state_keys == (bytes.fromhex(KEY), bytes.fromhex("cd" * 32))
    assert options.store == "memory" and options.replica_id  # HOST:PID by default
    assert f"may be read by others (mode 0644): chmod 600 {path}" in capsys.readouterr().err
    path = key_file(tmp_path, f"{KEY}\n")
    replica_options(_parse(["gateway", "--config", "g", "--state-key-file", path]))
    assert capsys.readouterr().err == ""


def test_an_empty_replica_id_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["example-server", "--replica-id", " "]) == 2
    assert "--replica-id must not be empty" in capsys.readouterr().err
