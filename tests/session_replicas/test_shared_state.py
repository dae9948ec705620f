"""A handshake session's level (``logging/setLevel``) and resource subscriptions are
the session's, not one replica's copy's: a copy at another replica, held already or
adopted later, logs at the level the client chose and tells of the resources it
subscribed to, and of no other (two replicas on one Redis, both backends)."""

from __future__ import annotations

from typing import Any

from sansio_mcp.auth import ResourceServer
from sansio_mcp.runtime import Context, Server, Stores
from tests.auth.test_http import Backend
from tests.session_replicas.raw import call, messages
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
