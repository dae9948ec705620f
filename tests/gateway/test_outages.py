"""An upstream killed mid-run and started again: the list goes partial (``ttlMs``
0, the connector named in ``_meta``), other connectors keep working, listeners
get a hint each way, and the gateway reconnects by itself.  Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from sansio_mcp_apps.gateway.runtime import META_MISSING_CONNECTORS
from trio_adapters.http_client import open_http_client

from .conftest import BACKENDS, EXAMPLE_TOOLS, example_http, example_stdio_connector, free_port
from .conftest import gateway as run_gateway

pytestmark = pytest.mark.interop


def _names(result: dict[str, Any]) -> set[str]:
    return {t["name"] for t in result["tools"]}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_upstream_killed_and_restarted(backend: str, tmp_path: Path) -> None:
    port = free_port()
    config = {
        "connectors": {
            "flaky": {"transport": "http", "url": f"http://127.0.0.1:{port}/mcp"},
            "steady": example_stdio_connector(),
        }
    }
    upstream = example_http(port)
    upstream.__enter__()
    try:
        with run_gateway(config, backend, tmp_path) as url:
            async with open_http_client(url, mode="modern") as client:
                full = await client.send_request("tools/list")
                assert _names(full) == {
                    f"{c}.{t}" for c in ("flaky", "steady") for t in EXAMPLE_TOOLS
                }
                assert full["ttlMs"] > 0
                async with client.listen(tools_list_changed=True) as hints:
                    upstream.__exit__(None, None, None)  # killed mid-run
                    with trio.fail_after(15):
                        method, _ = await hints.__anext__()
                    assert method == "notifications/tools/list_changed"
                    partial = await client.send_request("tools/list")
                    assert partial["ttlMs"] == 0
                    assert partial["_meta"][META_MISSING_CONNECTORS] == ["flaky"]
                    assert _names(partial) == {f"steady.{t}" for t in EXAMPLE_TOOLS}
                    # The dead connector fails neither the list nor the other's calls.
                    steady = await client.call_tool("steady.add", {"a": 1, "b": 2})
                    assert steady["structuredContent"] == {"sum": 3}
                    down = await client.call_tool("flaky.add", {"a": 1, "b": 2})
                    assert down["isError"] is True
                    assert "connector 'flaky' is unavailable" in down["content"][0]["text"]

                    upstream = example_http(port)
                    upstream.__enter__()
                    with trio.fail_after(30):
                        while True:  # hints may coalesce; wait for the full list again
                            await hints.__anext__()
                            back = await client.send_request("tools/list")
                            if META_MISSING_CONNECTORS not in back.get("_meta", {}):
                                break
                    assert _names(back) == _names(full) and back["ttlMs"] > 0
                    again = await client.call_tool("flaky.add", {"a": 2, "b": 2})
                    assert again["structuredContent"] == {"sum": 4}
    finally:
        upstream.__exit__(None, None, None)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_upstream_writing_garbage_does_not_starve_the_gateway(
    backend: str, tmp_path: Path
) -> None:
    # `yes` floods its stdout with lines that are not JSON: answering each for ever
    # kept the gateway from starting, serving and stopping.  It is given up on (and
    # retried with backoff) while the other connector serves.
    config = {
        "connectors": {
            "junk": {"transport": "stdio", "cmd": ["yes"]},
            "steady": example_stdio_connector(),
        }
    }
    with trio.fail_after(60), run_gateway(config, backend, tmp_path) as url:
        async with open_http_client(url, mode="modern") as client:
            listed = await client.send_request("tools/list")
            assert listed["_meta"][META_MISSING_CONNECTORS] == ["junk"]
            assert _names(listed) == {f"steady.{t}" for t in EXAMPLE_TOOLS}
            steady = await client.call_tool("steady.add", {"a": 1, "b": 2})
            assert steady["structuredContent"] == {"sum": 3}
            down = await client.call_tool("junk.anything", {})
            assert down["isError"] is True and "not JSON-RPC" in down["content"][0]["text"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_connector_that_crashes_says_why_in_its_status(backend: str, tmp_path: Path) -> None:
    """A stdio upstream that dies at start: its status (and the warning) give the exit
    status and the last lines of its stderr, in words, with no JSON-RPC code."""
    import json
    import sys

    from .conftest import CLI, Process

    crashy = tmp_path / "crashy.py"
    crashy.write_text("raise RuntimeError('database not configured')\n")
    config = {
        "connectors": {
            "crashy": {"transport": "stdio", "cmd": [sys.executable, str(crashy)]},
            "steady": example_stdio_connector(),
        }
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    process = Process([*CLI, "gateway", "--config", str(path), "--port", "0", "--backend", backend])
    try:
        found = process.wait_for(r"^connectors: (.*)$", timeout=60)
    finally:
        process.stop()
    status = json.loads(found.group(1))
    assert status["steady"]["status"] == "ready"
    error = status["crashy"]["error"]
    assert "exited with status 1" in error
    assert "RuntimeError: database not configured" in error
    assert "code -" not in error and not any("code -" in line for line in process.lines)
