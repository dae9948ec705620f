"""A handshake session's POST stream through nginx (round-robin, no affinity) in front
of two ``sansio-mcp example-server`` replicas (one on Trio, one on asyncio) on one
Redis: the client's stream breaks while ``slow`` runs at one replica, and its
resumption (GET with ``Last-Event-ID``) reaches the other, which replays what Redis
kept of the stream and then carries the call's later progress and its answer live."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.replicas.flows import behind_nginx
from tests.session_replicas.raw import ACCEPT_BOTH
from tests.session_replicas.test_two_replicas import INITIALIZE, VERSION

#: Seconds one HTTP exchange may take.
TIMEOUT = 30.0


def sse(response: httpx.Response) -> Iterator[tuple[str | None, Any]]:
    """The events of an SSE body: each one's id and message (None without data)."""
    event_id, data = None, None
    for line in response.iter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:") and line[5:].strip():
            data = json.loads(line[5:])
        elif not line and (event_id is not None or data is not None):
            yield event_id, data
            event_id, data = None, None


def test_a_post_stream_resumed_at_the_other_replica_goes_on_live(
    tmp_path: Path, redis_url: str
) -> None:
    with behind_nginx(tmp_path, 2, redis_url, b"k" * 32) as (_, nginx):
        url = f"{nginx.base}/mcp"
        opened = httpx.post(url, json=INITIALIZE, headers=ACCEPT_BOTH, timeout=TIMEOUT)
        assert opened.status_code == 200, opened.text
        headers = {
            **ACCEPT_BOTH,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": VERSION,
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert httpx.post(url, json=initialized, headers=headers).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "slow",
                "arguments": {"seconds": 2.0, "steps": 4},
                "_meta": {"progressToken": "p"},
            },
        }
        with httpx.stream("POST", url, json=call, headers=headers, timeout=TIMEOUT) as response:
            assert response.status_code == 200
            ran_at = response.headers["x-upstream"]
            last = None
            for event_id, message in sse(response):
                last = event_id
                if message is not None:
                    assert message["params"]["progress"] == 1, message
                    break
        # The client read the first step and its stream broke; the call runs on.
        assert last is not None
        resumed = {**headers, "accept": "text/event-stream", "last-event-id": last}
        with httpx.stream("GET", url, headers=resumed, timeout=TIMEOUT) as again:
            assert again.status_code == 200
            assert again.headers["x-upstream"] != ran_at  # the other replica
            got = [message for _, message in sse(again) if message is not None]
        steps = [
            m["params"]["progress"] for m in got if m.get("method") == "notifications/progress"
        ]
        assert steps == [2, 3, 4]  # once each, in order, whether kept before or live
        assert got[-1]["id"] == 2 and "done after" in json.dumps(got[-1]["result"]), got
