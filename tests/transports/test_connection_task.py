"""An HTTP connection served in one task: its waits timed by one moving deadline
(``Backend.open_deadline``), and each request's handler run in the connection's
own task, not a task per request; on both backends."""

from __future__ import annotations

import asyncio
import math

import pytest
import trio

from sansio_mcp.runtime import Context, Server
from tests.parity.harness import BACKEND_NAMES, BACKENDS, run, serving_in_loop, texts


def _current_task(backend: str) -> object:
    return trio.lowlevel.current_task() if backend == "trio" else asyncio.current_task()


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_a_deadline_ends_its_block_quietly(backend: str) -> None:
    api = BACKENDS[backend]

    async def body() -> tuple[bool, bool]:
        reached = False
        async with api.open_deadline() as deadline:
            deadline.set(0.01)
            await api.sleep(math.inf)
            reached = True
        return reached, deadline.expired

    assert run(backend, body) == (False, True)


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_a_deadline_moved_later_or_unset_is_not_reached(backend: str) -> None:
    api = BACKENDS[backend]

    async def body() -> bool:
        async with api.open_deadline() as deadline:
            deadline.set(0.01)
            deadline.set(math.inf)
            deadline.set(0.01)
            deadline.set(60.0)  # moved: the earlier time no longer counts
            await api.sleep(0.05)
            deadline.set(math.inf)
            await api.sleep(0.05)
        return deadline.expired

    assert run(backend, body) is False


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_a_reached_deadline_stays_reached(backend: str) -> None:
    """Set again once reached (its cancellation under way), it stays reached: the
    block still ends, and nothing raises."""
    api = BACKENDS[backend]

    async def body() -> bool:
        async with api.open_deadline() as deadline:
            deadline.set(0.0)
            try:
                await api.sleep(math.inf)
            finally:
                assert deadline.expired
                deadline.set(60.0)
                deadline.set(math.inf)
        return deadline.expired

    assert run(backend, body) is True


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_a_deadline_set_to_now_by_another_task_ends_the_block(backend: str) -> None:
    """What cancelling a request whose handler runs in its connection's task does."""
    api = BACKENDS[backend]

    async def body() -> bool:
        async with api.open_task_group() as group, api.open_deadline() as deadline:
            deadline.set(math.inf)

            async def cancel() -> None:
                deadline.set(0.0)

            group.start_soon(cancel)
            await api.sleep(math.inf)
        return deadline.expired

    assert run(backend, body) is True


def _task_server(backend: str, seen: list[object]) -> Server:
    server = Server("task-probe", "1.0.0")

    @server.tool()
    async def whose(ctx: Context) -> str:
        """Keeps the task running this handler (after a wait) in ``seen``."""
        await ctx.sleep(0)
        seen.append(_current_task(backend))
        return "ok"

    return server


@pytest.mark.parametrize("backend", BACKEND_NAMES)
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_request_handlers_run_in_their_connections_task(backend: str, mode: str) -> None:
    """Sequential calls on one kept-alive connection are handled by one task: the
    connection's (none is started per request), on both eras."""
    api = BACKENDS[backend]
    seen: list[object] = []  # held, so that no task's id is reused

    async def body() -> list[str]:
        async with serving_in_loop(backend, "http", _task_server(backend, seen)) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with api.connect([], url, "http", mode=mode) as client:
                return [texts(await client.call_tool("whose", {})) for _ in range(3)]

    assert run(backend, body) == ["ok"] * 3
    assert len(seen) == 3 and len({id(task) for task in seen}) == 1, seen


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_a_held_handler_leaves_its_hosts_table_when_it_ends(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handshake session's host keeps no trace of its ended requests' handlers."""
    from sansio_mcp.runtime import _http_service

    held: list[_http_service.HeldHandler] = []
    original = _http_service.HeldHandler.__init__

    def record(self: _http_service.HeldHandler, *args: object) -> None:
        original(self, *args)  # type: ignore[arg-type]
        held.append(self)

    monkeypatch.setattr(_http_service.HeldHandler, "__init__", record)
    api = BACKENDS[backend]

    async def body() -> None:
        async with serving_in_loop(backend, "http", _task_server(backend, [])) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with api.connect([], url, "http", mode="legacy") as client:
                for _ in range(3):
                    await client.call_tool("whose", {})

    run(backend, body)
    assert len(held) == 3 and all(h.done for h in held)
    assert not any(h._handlers for h in held)
