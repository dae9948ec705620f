"""The router's session-table and replica names of the last release
(``StreamableHTTPServer.session_ids``, ``.adopt_session``, ...) still work for one
release, each warning with the spelling that replaces it (``router.sessions.*``,
``router.replicas.*``); a subclass reaching them through ``super()`` too."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sansio_mcp.http import HTTPRequest, StreamableHTTPServer
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import GatewayHTTPServer
from tests.session_replicas.test_adoption import Recorder, begin, replica
from tests.transports.helpers import post_request, stateless_headers, stateless_request
from tests.transports.test_router_extension_points import Sessionless


def _router() -> StreamableHTTPServer:
    return StreamableHTTPServer(build_server().create_session)


def _old(name: str, new: str) -> Any:
    """``pytest.warns`` for the old name ``name``, whose message names ``new``."""
    said = f"StreamableHTTPServer.{name} is deprecated; use .{new} instead"
    return pytest.warns(DeprecationWarning, match=f"^{re.escape(said)}$")


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        ("max_sessions", "sessions.max_sessions", 3),
        ("session_idle_timeout", "sessions.idle_timeout", 12.5),
        ("replay_memory", "sessions.replay_memory", 8),
        ("replay_streams", "sessions.replay_streams", 2),
        ("relay", "replicas.relay", Recorder()),
    ],
)
def test_an_old_setting_reads_and_sets_its_new_place(old: str, new: str, value: Any) -> None:
    router = _router()
    owner_name, _, attribute = new.partition(".")
    owner = getattr(router, owner_name)
    with _old(old, new):
        assert getattr(router, old) == getattr(owner, attribute)
    with _old(old, new):
        setattr(router, old, value)
    assert getattr(owner, attribute) is value


def test_a_lowered_limit_set_by_its_old_name_holds() -> None:
    router = _router()
    with _old("max_sessions", "sessions.max_sessions"):
        router.max_sessions = 1
    begin(router)
    with _old("session_ids", "sessions.ids"):
        (first,) = router.session_ids
    begin(router)  # the quiet first session makes room for the second
    assert first not in router.sessions.ids and len(router.sessions) == 1


def test_the_old_session_table_methods_work() -> None:
    router = _router()
    session_id = begin(router)["mcp-session-id"]
    with _old("session_ids", "sessions.ids"):
        assert router.session_ids == frozenset({session_id})
    with _old("end_session", "sessions.end"):
        router.end_session(session_id)
    assert router.sessions.ids == frozenset()
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    assert (
        router.handle(post_request({"jsonrpc": "2.0", "id": 2, "method": "ping"}, **headers)).status
        == 404
    )


def test_the_old_replica_methods_work() -> None:
    a, _ = replica()
    b, _ = replica()
    session_id = begin(a)["mcp-session-id"]
    with _old("session_record", "replicas.record"):
        record = a.session_record(session_id)
    assert record == a.replicas.record(session_id) and record is not None
    with _old("adopt_session", "replicas.adopt"):
        adopted = b.adopt_session(session_id, record, now=1.0)
    assert adopted is not None and b.sessions.get(session_id) is not None
    asked = adopted.send_ping()
    b.flush(adopted)
    with _old("receive_relayed", "replicas.receive"):
        taken = b.receive_relayed(session_id, {"jsonrpc": "2.0", "id": asked, "result": {}})
    assert taken is adopted and asked not in adopted.pending_requests
    get_headers = {
        "host": "127.0.0.1:8000",
        "accept": "text/event-stream",
        "mcp-session-id": session_id,
        "mcp-protocol-version": "2025-11-25",
    }
    get = b.handle(HTTPRequest("GET", "/mcp", get_headers, b""))
    notice = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    with _old("deliver_relayed", "replicas.deliver"):
        assert b.deliver_relayed(session_id, notice)
    assert b"notifications/tools/list_changed" in get.take()


class _Subclass(Sessionless):
    """A router of last release's kind, keeping sessions: it prepares its sessions
    in ``new_session`` (counting them) and reaches an old name through ``super()``."""

    keeps_sessions = True

    def forget(self, session_id: str) -> None:
        super().end_session(session_id)


def test_a_subclass_reaches_an_old_name_through_super() -> None:
    router = _Subclass()
    session_id = begin(router)["mcp-session-id"]
    with _old("end_session", "sessions.end"):
        router.forget(session_id)
    assert router.sessions.ids == frozenset()


def test_a_subclass_new_session_makes_the_sessions_it_adopts() -> None:
    """``replicas`` takes its copies from the router's ``new_session``, so a subclass
    preparing its sessions there (as the gateway does) prepares adopted ones too."""
    a, _ = replica()
    session_id = begin(a)["mcp-session-id"]
    record = a.replicas.record(session_id)
    assert record is not None
    b = _Subclass()
    b.replicas.relay = Recorder()
    adopted = b.replicas.adopt(session_id, record)
    assert adopted is not None and b.made[-1] is adopted


def test_the_gateway_override_of_owns_is_what_the_runtime_asks() -> None:
    """``owns`` stays the router's (every router answers it to the runtime): the
    gateway's override still keeps a session whose request is being answered."""
    gateway = GatewayHTTPServer(build_server().create_session)
    message = stateless_request("tools/list")
    exchange = gateway.handle(post_request(message, **stateless_headers(message)))
    assert exchange.session is not None  # its request not answered yet: nothing drove it
    assert gateway.owns(exchange.session) and gateway.sessions.of(exchange.session) is None
