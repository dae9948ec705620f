"""A handshake session's level (``logging/setLevel``) and resource subscriptions are
the session's, not one replica's copy's: a copy at another replica, held already or
adopted later, logs at the level the client chose and tells of the resources it
subscribed to, and of no other (two replicas on one Redis, both backends)."""

from __future__ import annotations

import time
from typing import Any

from sansio_mcp.auth import ResourceServer
from sansio_mcp.runtime import Context, Server, Stores
from sansio_mcp.runtime._session_store import SESSION_CHANNEL
from tests.auth.test_http import Backend
from tests.session_replicas.raw import call, messages
from tests.session_replicas.test_shared_replay import replicas
from tests.session_replicas.test_two_replicas import (
    answer_of,
    get_stream,
    open_session,
    replica,
    request,
    tool_call,
    two_ports,
)

URIS = ("test://a", "test://b")


def touching_replica(stores: Stores, auth: ResourceServer | None = None) -> Server:
    """The example server, plus resources ``test://a`` and ``test://b`` and ``touch``
    (says that one of them changed)."""
    server = replica(stores, auth)
    for uri in URIS:
        server.resource(uri, name=uri.rsplit("/", 1)[-1])(lambda: "text")

    @server.tool()
    async def touch(ctx: Context, uri: str) -> str:
        """Say that ``uri`` changed."""
        await ctx.resource_updated(uri)
        return "touched"

    return server


async def logs_of_increment(
    backend: Backend, port: int, headers: dict[str, str], request_id: int
) -> list[Any]:
    """The log notifications of one ``increment`` call (which logs at ``info``)."""
    status, head, body = await call(
        backend.backend, port, "POST", headers, tool_call(request_id, "increment", {})
    )
    assert status == 200, body
    found = messages(head, body)
    assert "result" in found[-1], found
    return [m for m in found if m.get("method") == "notifications/message"]


def test_the_level_set_at_one_replica_holds_at_the_other(backend: Backend, redis_url: str) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url, build=touching_replica) as (a, b):
            held = await open_session(backend, a)
            assert await logs_of_increment(backend, b, held, 2)  # B holds a copy: it logs
            level = request(3, "logging/setLevel", {"level": "warning"})
            assert (await answer_of(backend, a, held, level))["result"] == {}
            assert await logs_of_increment(backend, b, held, 4) == []
            # A copy adopted after the change starts with it (the record has it).
            later = await open_session(backend, a)
            level = request(2, "logging/setLevel", {"level": "warning"})
            assert (await answer_of(backend, a, later, level))["result"] == {}
            assert await logs_of_increment(backend, b, later, 3) == []

    backend.run(main)


def test_subscriptions_made_at_one_replica_hold_at_the_other(
    backend: Backend, redis_url: str
) -> None:
    async def main() -> None:
        async with two_ports(backend, redis_url, build=touching_replica) as (a, b):
            headers = await open_session(backend, a)
            async with get_stream(backend, a, headers) as stream:
                for number, uri in enumerate(URIS, 2):
                    subscribe = request(number, "resources/subscribe", {"uri": uri})
                    assert (await answer_of(backend, b, headers, subscribe))["result"] == {}
                unsubscribe = request(5, "resources/unsubscribe", {"uri": URIS[0]})
                assert (await answer_of(backend, a, headers, unsubscribe))["result"] == {}
                for number, uri in enumerate(URIS, 6):
                    touched = await answer_of(
                        backend, a, headers, tool_call(number, "touch", {"uri": uri})
                    )
                    assert touched["result"]["content"][0]["text"] == "touched"
                # Not test://a (unsubscribed at A, though subscribed at B), and test://b
                # once, from the copy beside the stream.
                async with backend.backend.fail_after(10):
                    notice = await stream.next_message()
                assert notice == {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": URIS[1]},
                }
                await answer_of(backend, a, headers, tool_call(8, "announce", {}))
                async with backend.backend.fail_after(10):
                    notice = await stream.next_message()
                assert notice["method"] == "notifications/tools/list_changed", notice

    backend.run(main)


def test_a_change_heard_late_does_not_undo_a_later_one_anywhere(
    backend: Backend, redis_url: str
) -> None:
    """Two changes of the level made at once at two replicas: each copy, and the
    record, ends with the later by stamp, whichever each heard last.  The earlier one
    is played here by a third party: its message reaches the copies after the later
    change, and its record write lands after the later one's."""

    async def main() -> None:
        async with replicas(backend, redis_url, build=replica) as (a, b, store, onlooker):
            headers = await open_session(backend, a)
            session_id = headers["mcp-session-id"]
            assert await logs_of_increment(backend, b, headers, 2)  # B holds a copy
            level = request(3, "logging/setLevel", {"level": "warning"})
            assert (await answer_of(backend, a, headers, level))["result"] == {}
            # The earlier change: stamped before the one above, written and heard after it.
            record = await store.load(session_id, time.time())
            assert record is not None and record.state["logLevel"] == "warning"
            earlier = {"logLevel": "debug", "subscriptions": [], "stamp": [1.0, "Z"]}
            record.state.update(earlier)
            await store.save(record, 60)
            await onlooker.events.publish(
                SESSION_CHANNEL,
                {"kind": "state", "session": session_id, "from": "Z", "message": earlier},
            )
            # The copies that heard it late write the record back to the later change.
            async with backend.backend.fail_after(10):
                while (await store.load(session_id, time.time())).state["logLevel"] != "warning":
                    await backend.backend.sleep(0.01)
            for port, request_id in ((a, 4), (b, 5)):
                assert await logs_of_increment(backend, port, headers, request_id) == []

    backend.run(main)
