"""One gate serves a server's incoming requests of both eras: a handshake
session's requests and 2026-07-28 requests (``_meta`` on each) pass the same id
rule, the same method and capability checks, and the same state table.

Where the two paths disagreed before, the behaviour is now the shared one,
pinned here for both eras."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import (
    ALL_SERVER_CAPS,
    CLIENT_INFO,
    drain,
    initialize_params,
    line,
    notification,
    out,
    ready_server,
    request,
)
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import RequestReceived, ServerSession, SessionState
from sansio_mcp._versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    REVISIONS,
)

STATELESS_META = {
    META_PROTOCOL_VERSION: "2026-07-28",
    META_CLIENT_CAPABILITIES: {},
    META_CLIENT_INFO: CLIENT_INFO,
}
ERAS = ["handshake", "stateless"]


def call(era: str, id_: Any, method: str = "tools/list", params: Any = None) -> dict[str, Any]:
    """A request of ``era``: a stateless one carries its ``_meta``."""
    params = dict(params or {})
    if era == "stateless":
        params["_meta"] = STATELESS_META
    return request(id_, method, params)


def cancel(id_: Any) -> dict[str, Any]:
    return notification("notifications/cancelled", {"requestId": id_})


def served(server: ServerSession) -> list[Any]:
    return [e.request_id for e in drain(server) if isinstance(e, RequestReceived)]


@pytest.mark.parametrize("era", ERAS)
def test_the_id_of_a_cancelled_request_is_not_taken_again(era: str) -> None:
    """Its handler's late answer must not answer a newcomer (before, a stateless
    request could take the id; a handshake one could not)."""
    server = ready_server("2025-06-18")
    server.receive_data(line(call(era, 5)) + line(cancel(5)))
    assert served(server) == [5]
    server.receive_data(line(call(era, 5)))
    assert served(server) == []
    [refusal] = out(server)
    assert refusal["id"] == 5 and refusal["error"]["code"] == -32600
    assert "cancelled before" in refusal["error"]["message"]


@pytest.mark.parametrize("era", ERAS)
def test_the_id_of_an_open_subscription_is_not_taken(era: str) -> None:
    """Before, a handshake request could take the id of an open subscriptions/listen
    (and its answer read as the subscription's); a stateless one could not."""
    server = ready_server("2025-11-25")
    server.receive_data(line(call("stateless", 9, "subscriptions/listen", {"notifications": {}})))
    out(server)  # the acknowledgement
    server.receive_data(line(call(era, 9)))
    assert served(server) == []
    [refusal] = out(server)
    assert refusal["id"] == 9 and "already in use" in refusal["error"]["message"]


def test_a_batch_request_on_a_cancelled_id_is_refused_within_its_batch() -> None:
    """Before, its refusal went out alone and the batch waited for it for good: the
    other answers of the batch were never sent."""
    server = ready_server("2025-03-26")
    server.receive_data(line(call("handshake", 5)) + line(cancel(5)))
    served(server)
    server.receive_data(line([call("handshake", 5), request(6, "ping")]))
    [batch] = out(server)
    assert {m["id"]: "error" in m for m in batch} == {5: True, 6: False}


@pytest.mark.parametrize("era", ERAS)
def test_a_duplicate_of_a_batched_request_leaves_the_batch_alone(era: str) -> None:
    """The refusal of a request that reuses the id of one waiting in a batch goes out
    on its own. Before, a stateless one was put into that batch in the answer's
    place, and the real answer went out alone: two answers for one id."""
    server = ready_server("2025-03-26")
    server.receive_data(line([call("handshake", 5), call("handshake", 6)]))
    assert served(server) == [5, 6]
    server.receive_data(line(call(era, 5)))
    [refusal] = out(server)
    assert refusal["id"] == 5 and "already in use" in refusal["error"]["message"]
    server.respond(5, {"tools": []})
    assert out(server) == []  # the batch still waits for 6
    server.respond(6, {"tools": []})
    [batch] = out(server)
    assert [m["id"] for m in batch] == [5, 6] and all("result" in m for m in batch)


def _server_in(state: SessionState, capabilities: dict[str, Any]) -> ServerSession:
    if state is SessionState.READY:
        return ready_server("2025-06-18", capabilities=capabilities)
    server = ServerSession(capabilities=capabilities)
    if state is SessionState.INITIALIZING:
        server.receive_data(line(request(0, "initialize", initialize_params("2025-06-18"))))
        out(server)
    drain(server)
    return server


_METHODS = sorted(
    REVISIONS["2026-07-28"].client_requests
    | {"ping", "initialize", "logging/setLevel", "tasks/get", "resources/subscribe", "nope"}
)


@given(
    method=st.sampled_from(_METHODS),
    capabilities=st.dictionaries(st.sampled_from(sorted(ALL_SERVER_CAPS)), st.just({})),
)
def test_a_stateless_request_gets_the_same_verdict_in_every_state(
    method: str, capabilities: dict[str, Any]
) -> None:
    """The state table lets a 2026-07-28 request through in every state of a
    handshake session (or with none) and changes none: its answer depends on the
    request and the server's capabilities only."""
    verdicts = []
    for state in (SessionState.IDLE, SessionState.INITIALIZING, SessionState.READY):
        server = _server_in(state, capabilities)
        params = {"notifications": {}} if method == "subscriptions/listen" else {}
        server.receive_data(line(call("stateless", "s", method, params)))
        assert server.state is state
        errors = [m["error"]["code"] for m in out(server) if "error" in m]
        verdicts.append((errors, served(server)))
    assert verdicts[0] == verdicts[1] == verdicts[2], verdicts
