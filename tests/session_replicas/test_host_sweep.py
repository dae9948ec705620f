"""The HTTP service drops the session hosts of sessions its router ended without a
request saying so (idle expiry, room made, a DELETE at another replica): adopted
copies on every replica would otherwise hold a host each for good."""

from __future__ import annotations

from typing import Any

from sansio_mcp._server_session import ServerSession
from sansio_mcp.http import StreamableHTTPServer
from sansio_mcp.runtime import Server
from sansio_mcp.runtime._http_service import SessionHosts
from sansio_mcp_apps.example_server import build_server
from tests.session_replicas.test_adoption import begin


class Host:
    def __init__(self, session: ServerSession) -> None:
        self.session = session
        self.cancelled = False

    def _schedule_flush(self) -> None:
        pass

    def cancel_all_handlers(self) -> None:
        self.cancelled = True

    def release(self) -> None:
        pass


def test_hosts_of_ended_sessions_are_dropped_as_hosts_pile_up() -> None:
    server: Server = build_server()
    machine = StreamableHTTPServer(server.create_session)
    made: list[Host] = []

    def make_host(session: ServerSession) -> Any:
        made.append(Host(session))
        return made[-1]

    hosts = SessionHosts(server, machine, make_host)
    ids = [begin(machine)["mcp-session-id"] for _ in range(100)]
    for session_id in ids:
        state = machine.sessions.get(session_id)
        assert state is not None
        hosts.host_for(state.session)
    for session_id in ids[:90]:
        machine.sessions.end(session_id)  # as idle expiry or another replica's DELETE does
    assert len(hosts) == 100  # nothing swept yet: the hosts have not doubled
    for _ in range(100):
        state = machine.sessions.get(begin(machine)["mcp-session-id"])
        assert state is not None
        hosts.host_for(state.session)
    assert len(hosts) <= 110  # the 90 ended sessions' hosts went, once
    assert sum(host.cancelled for host in made) == 90
    assert len(server.hub) == len(hosts)
