"""No input drives the example server's ``increment`` into a state where later calls
fail: whatever came before (integers of thousands of digits, the largest JSON takes,
floats, strings, nothing), the next ``increment`` by 1 and a read of the counter
work.  Served by each backend."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sansio_mcp_apps.example_server import COUNTER_URI, MAX_COUNTER, build_server

from .harness import POST_HEADERS, raw_request, serving

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
_huge = st.integers(min_value=10**4299, max_value=10**4300 - 1)  # 4300 digits: JSON's most
_by = (
    st.integers()
    | st.integers(min_value=MAX_COUNTER - 3, max_value=MAX_COUNTER + 3)
    | _huge
    | _huge.map(lambda n: -n)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
    | st.text(max_size=5)
)


def _post(port: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    headers = {**POST_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if "name" in params or "uri" in params:
        headers["mcp-name"] = params.get("name") or params["uri"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    status, _, answer = raw_request(port, "POST", "/mcp", headers, body)
    assert status in (200, 400), (status, answer[:300])
    return dict(json.loads(answer))


def _counter(port: int) -> int:
    read = _post(port, "resources/read", {"uri": COUNTER_URI})
    return int(json.loads(read["result"]["contents"][0]["text"])["value"])


def test_no_input_breaks_increment(backend: str) -> None:
    with serving(backend, "http", build_server()) as port:

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(bys=st.lists(_by, max_size=12))
        def check(bys: list[Any]) -> None:
            for by in bys:
                _post(port, "tools/call", {"name": "increment", "arguments": {"by": by}})
            before = _counter(port)
            assert abs(before) <= MAX_COUNTER
            step = -1 if before == MAX_COUNTER else 1
            bumped = _post(port, "tools/call", {"name": "increment", "arguments": {"by": step}})
            assert not bumped["result"].get("isError"), bumped
            assert bumped["result"]["content"][0]["text"] == str(before + step)
            assert _counter(port) == before + step

        check()


def test_the_counter_stays_within_its_bound(backend: str) -> None:
    with serving(backend, "http", build_server(max_counter=10)) as port:
        call = {"name": "increment", "arguments": {"by": 8}}
        assert _post(port, "tools/call", call)["result"]["content"][0]["text"] == "8"
        refused = _post(port, "tools/call", call)["result"]
        assert refused["isError"] is True
        assert refused["content"][0]["text"] == (
            "the counter would pass ±10 (max_counter); it stays at 8"
        )
        too_far = _post(port, "tools/call", {"name": "increment", "arguments": {"by": 11}})
        assert too_far["result"]["isError"] is True
        assert "argument 'by' must be at most 10" in too_far["result"]["content"][0]["text"]
        assert _counter(port) == 8
