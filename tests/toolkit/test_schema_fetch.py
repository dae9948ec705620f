"""``sansio-mcp schemas fetch|where``, without the internet: a loopback server stands in for
the repositories, serving the schemas from ``../shared/mcp-schema`` (or wherever they are)."""

from __future__ import annotations

import hashlib
import http.server
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sansio_mcp_testing import schemas
from sansio_mcp_testing.schema_fetch import PINNED, fetch_schemas
from sansio_mcp_testing.schemas import SCHEMA_NAMES, find_schema

CLI = [sys.executable, "-m", "sansio_mcp_cli"]


class Mirror:
    """Files served at ``/OWNER/REPO/COMMIT/PATH``, as the repositories' raw file host does."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.url = ""

    def serve_pinned(self) -> None:
        for name, pin in PINNED.items():
            found = find_schema(name)
            if found is None:
                pytest.skip(schemas.missing_schema_message(name))
            self.files[f"/{pin.repository}/{pin.commit}/{pin.path}"] = found.read_bytes()

    def path_of(self, name: str) -> str:
        pin = PINNED[name]
        return f"/{pin.repository}/{pin.commit}/{pin.path}"


@pytest.fixture
def mirror() -> Iterator[Mirror]:
    state = Mirror()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_every_known_schema_is_pinned() -> None:
    assert tuple(PINNED) == SCHEMA_NAMES
    for pin in PINNED.values():
        assert len(pin.commit) == 40 and len(pin.sha256) == 64
        assert pin.url().startswith("https://")


def test_pins_match_the_official_files() -> None:
    for name, pin in PINNED.items():
        found = find_schema(name)
        if found is None:
            pytest.skip(schemas.missing_schema_message(name))
        assert hashlib.sha256(found.read_bytes()).hexdigest() == pin.sha256, name


def test_fetch_stores_checked_files_and_keeps_them(mirror: Mirror, tmp_path: Path) -> None:
    mirror.serve_pinned()
    done = subprocess.run(
        [*CLI, "schemas", "fetch", "--dest", str(tmp_path), "--source", mirror.url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("fetched") == len(SCHEMA_NAMES)
    for name in SCHEMA_NAMES:
        stored = tmp_path / name / "schema.json"
        assert stored.read_bytes() == mirror.files[mirror.path_of(name)]
    asked = len(mirror.requests)
    again = fetch_schemas(tmp_path, source=mirror.url)
    assert {r.status for r in again} == {"present"}
    assert len(mirror.requests) == asked  # nothing downloaded twice


def test_a_tampered_file_is_refused(mirror: Mirror, tmp_path: Path) -> None:
    mirror.serve_pinned()
    tampered = mirror.path_of("2025-06-18")
    mirror.files[tampered] = mirror.files[tampered].replace(b'"string"', b'"number"', 1)
    done = subprocess.run(
        [*CLI, "schemas", "fetch", "--dest", str(tmp_path), "--source", mirror.url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "failed   2025-06-18" in done.stderr and "SHA-256" in done.stderr
    assert not (tmp_path / "2025-06-18" / "schema.json").exists()
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".schema-")]  # no leftovers
    assert (tmp_path / "2025-11-25" / "schema.json").is_file()  # the others still arrive


def test_a_damaged_cached_file_is_replaced(mirror: Mirror, tmp_path: Path) -> None:
    mirror.serve_pinned()
    stored = tmp_path / "2024-11-05" / "schema.json"
    stored.parent.mkdir(parents=True)
    stored.write_text("{}")
    results = {r.name: r for r in fetch_schemas(tmp_path, source=mirror.url, names=["2024-11-05"])}
    assert results["2024-11-05"].status == "fetched"
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == PINNED["2024-11-05"].sha256


def test_unreachable_source_fails_each_file(tmp_path: Path) -> None:
    results = fetch_schemas(tmp_path, source="http://127.0.0.1:9", timeout=5)
    assert {r.status for r in results} == {"failed"}
    assert not any(tmp_path.rglob("schema.json"))


def test_where_prefers_the_environment_then_the_cache(mirror: Mirror, tmp_path: Path) -> None:
    mirror.serve_pinned()
    cache_home = tmp_path / "cache-home"
    env_dir = tmp_path / "env"
    (env_dir / "2025-03-26").mkdir(parents=True)
    (env_dir / "2025-03-26" / "schema.json").write_bytes(mirror.files[mirror.path_of("2025-03-26")])
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "MCP_SCHEMA_DIR": str(env_dir)}
    fetched = subprocess.run(
        [*CLI, "schemas", "fetch", "--source", mirror.url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert fetched.returncode == 0, fetched.stderr
    cache = cache_home / "sansio-mcp" / "mcp-schema"
    assert (cache / "2026-07-28" / "schema.json").is_file()
    where = subprocess.run(
        [*CLI, "schemas", "where"], capture_output=True, text=True, env=env, timeout=60
    )
    assert where.returncode == 0, where.stderr
    lines = {line.split()[0]: line for line in where.stdout.splitlines()}
    assert str(env_dir / "2025-03-26") in lines["2025-03-26"]
    assert "($MCP_SCHEMA_DIR)" in lines["2025-03-26"]
    assert str(cache / "2026-07-28") in lines["2026-07-28"] and "(cache)" in lines["2026-07-28"]


@pytest.fixture
def quiet_loggers_restored() -> Iterator[None]:
    """``check`` run in this process quiets the library's loggers: set them back after
    (a later test's caplog would see nothing)."""
    loggers = [logging.getLogger(name) for name in ("sansio_mcp", "trio_adapters")]
    levels = [logger.level for logger in loggers]
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


@pytest.mark.usefixtures("quiet_loggers_restored")
def test_check_says_when_a_schema_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no schema for a revision, check says so on the terminal and in its report."""
    from sansio_mcp_cli.main import main

    only = tmp_path / "only"
    present = find_schema("2025-11-25")
    if present is None:
        pytest.skip(schemas.missing_schema_message("2025-11-25"))
    (only / "2025-11-25").mkdir(parents=True)
    (only / "2025-11-25" / "schema.json").write_bytes(present.read_bytes())
    monkeypatch.setattr(schemas, "schema_search_path", lambda schema_dir=None: [("only", only)])
    report = tmp_path / "report.json"
    status = main(
        [
            "check",
            "--quiet",
            "--examples",
            "2",
            "--protocol-version",
            "2025-11-25",
            "--protocol-version",
            "2025-06-18",
            "--report",
            str(report),
            "--deny",
            "slow",  # sleeps as long as asked: 10 s per revision when it draws a large one
            "--",
            *CLI,
            "example-server",
        ]
    )
    err = capsys.readouterr().err
    assert "warning: the official 2025-06-18 schema was not found" in err
    assert "sansio-mcp schemas fetch" in err
    assert "2025-11-25 schema was not found" not in err
    text = report.read_text()
    assert "2025-06-18 schema was not found" in text and "sansio-mcp schemas fetch" in text
    assert status == 0, err
