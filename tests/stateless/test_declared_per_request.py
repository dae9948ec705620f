"""What a stateless client's every request declares in its ``_meta``: the session's
capabilities and client info, made once and reused while they stay the same, yet
always what the session holds now (a change made in place too) and a copy of its own
for each request."""

from __future__ import annotations

from typing import Any

import pytest

from sansio_mcp import RequestReceived, ServerSession
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_CLIENT_INFO

from .helpers import CLIENT_CAPS, CLIENT_INFO, SERVER_CAPS, Link, discovered, stateless_client


def _declared(link: Link) -> tuple[dict[str, Any], dict[str, Any]]:
    link.client.send_request("tools/list", {})
    (event,) = link.c2s()
    assert isinstance(event, RequestReceived)
    meta = event.params["_meta"]
    return meta[META_CLIENT_CAPABILITIES], meta[META_CLIENT_INFO]


def _link() -> Link:
    return discovered(Link(stateless_client(), ServerSession(capabilities=dict(SERVER_CAPS))))


def test_each_request_declares_the_session_as_it_is_now() -> None:
    link = _link()
    capabilities, info = _declared(link)
    assert capabilities == {**CLIENT_CAPS, "roots": {}}  # (no listChanged in this revision)
    assert info == CLIENT_INFO
    # Changed in place, between two requests: the next one says so.
    link.client.capabilities["sampling"]["tools"] = {}
    link.client.info["title"] = "Renamed"
    capabilities, info = _declared(link)
    assert capabilities["sampling"] == {"tools": {}}
    assert info == {**CLIENT_INFO, "title": "Renamed"}
    # Replaced whole, and changed back.
    link.client.capabilities = {"elicitation": {"form": {}}}
    link.client.info = dict(CLIENT_INFO)
    capabilities, info = _declared(link)
    assert capabilities == {"elicitation": {"form": {}}}
    assert info == CLIENT_INFO


@pytest.mark.parametrize("changed", ["capabilities", "info"])
def test_a_request_declares_a_copy_of_its_own(changed: str) -> None:
    """What one request's ``_meta`` declares, changed after it went, changes no other
    request's (they are made once and handed out as copies)."""
    link = _link()
    client = link.client
    client.send_request("tools/list", {})
    (item,) = client.outgoing_to_send()
    meta = item.message["params"]["_meta"]
    key = META_CLIENT_CAPABILITIES if changed == "capabilities" else META_CLIENT_INFO
    meta[key]["added"] = True
    capabilities, info = _declared(link)
    assert "added" not in capabilities and "added" not in info
    assert "added" not in client.capabilities and "added" not in client.info
