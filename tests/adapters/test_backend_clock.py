"""The backends read the running clock without the layers between (Trio: not through
``trio.current_time``; asyncio: the stock loop's ``time.monotonic``): the same time, a
custom clock or loop honoured, the usual error outside a run."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import trio
import trio.testing

from asyncio_adapters._backend import PRIMITIVES as ASYNCIO
from trio_adapters import _backend
from trio_adapters._backend import PRIMITIVES


def test_the_clock_is_the_running_clock() -> None:
    async def main(clock: trio.testing.MockClock) -> None:
        assert PRIMITIVES.clock() == trio.current_time() == clock.current_time()
        clock.jump(7.5)
        assert PRIMITIVES.clock() == trio.current_time()

    first = trio.testing.MockClock()
    trio.run(main, first, clock=first)
    # A later run's clock is read, not the first one's.
    other = trio.testing.MockClock()
    other.jump(1000.0)
    trio.run(main, other, clock=other)


def test_deadlines_follow_a_custom_clock() -> None:
    async def main() -> float:
        start = PRIMITIVES.clock()
        async with PRIMITIVES.move_on_after(30.0):
            await trio.sleep_forever()
        return PRIMITIVES.clock() - start

    assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) == 30.0


def test_runs_in_two_threads_each_read_their_own_clock() -> None:
    """The run context is per thread: two runs at once, each on its own clock, never
    read each other's (nor a cached one), and a worker thread of a run reads none."""
    jumps = {"a": 100.0, "b": 5000.0}
    seen: dict[str, list[float]] = {"a": [], "b": []}
    both_running = threading.Barrier(2)

    async def main(name: str, clock: trio.testing.MockClock) -> None:
        clock.jump(jumps[name])
        await trio.to_thread.run_sync(both_running.wait)
        for _ in range(3):
            seen[name].append(PRIMITIVES.clock() - clock.current_time())
            await trio.sleep(0)
        with pytest.raises(RuntimeError):
            await trio.to_thread.run_sync(PRIMITIVES.clock)

    def run(name: str) -> None:
        clock = trio.testing.MockClock()
        trio.run(main, name, clock, clock=clock)

    threads = [threading.Thread(target=run, args=(name,)) for name in jumps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"a": [0.0, 0.0, 0.0], "b": [0.0, 0.0, 0.0]}


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_timers_and_deadlines_keep_the_runs_own_time(backend: str) -> None:
    """A timer and a deadline set through the backend end on the clock the loop keeps
    its deadlines on (a deadline computed on another clock would end far off)."""
    primitives = PRIMITIVES if backend == "trio" else ASYNCIO

    async def main() -> tuple[float, float]:
        start = primitives.clock()
        fired: list[float] = []
        async with primitives.open_task_group() as group:
            timer = primitives.start_timer(group, lambda: fired.append(primitives.clock()))
            timer.set(0.3)
            async with primitives.open_deadline() as deadline:
                deadline.set(0.2)
                await primitives.sleep(5.0)
            ended = primitives.clock()
            await primitives.sleep(0.3)
            timer.cancel()
        return ended - start, fired[0] - start

    if backend == "trio":
        # A clock of its own, far from the system's monotonic time.
        clock = trio.testing.MockClock(rate=1.0)
        clock.jump(1e6)
        ended, fired = trio.run(main, clock=clock)
    else:
        ended, fired = asyncio.run(main())
    assert 0.2 <= ended < 2.0
    assert 0.3 <= fired < 2.0


def test_outside_a_run_the_error_is_trios() -> None:
    with pytest.raises(RuntimeError, match="async context"):
        PRIMITIVES.clock()


def test_a_trio_laid_out_otherwise_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_backend, "_RUN", None)

    async def main() -> None:
        assert PRIMITIVES.clock() == trio.current_time()

    trio.run(main, clock=trio.testing.MockClock())
    with pytest.raises(RuntimeError, match="async context"):
        PRIMITIVES.clock()


def test_the_asyncio_clock_is_the_loops() -> None:
    """The stock loop's time is read directly; a loop with a time of its own is asked."""

    class Shifted(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return super().time() + 1e6

    async def main() -> tuple[float, float, float]:
        loop = asyncio.get_running_loop()
        before = loop.time()
        now = ASYNCIO.clock()
        return before, now, loop.time()

    for loop in (asyncio.new_event_loop(), Shifted()):
        try:
            before, now, after = loop.run_until_complete(main())
        finally:
            loop.close()
        assert before <= now <= after
    assert now > 1e6
    with pytest.raises(RuntimeError):
        ASYNCIO.clock()


def test_the_asyncio_clock_honours_a_time_set_on_one_loop() -> None:
    """A ``time`` set on one loop instance (a test's clock; the loop's own timers follow
    it) is read, and a deadline set through the backend ends on it, not before; another
    loop of the same class keeps the stock time."""
    shift = 1e6

    async def main() -> tuple[float, bool, bool]:
        loop = asyncio.get_running_loop()
        now = ASYNCIO.clock()
        async with ASYNCIO.open_deadline() as deadline:
            deadline.set(3600.0)
            for _ in range(3):
                await asyncio.sleep(0)
            early = deadline.expired
            loop.time = lambda: time.monotonic() + 2 * shift  # type: ignore[method-assign]
            for _ in range(3):
                await asyncio.sleep(0)
        return now, early, deadline.expired

    patched = asyncio.new_event_loop()
    patched.time = lambda: time.monotonic() + shift  # type: ignore[method-assign]
    try:
        now, early, late = patched.run_until_complete(main())
    finally:
        patched.close()
    assert shift <= now < 2 * shift
    assert not early and late
    plain = asyncio.new_event_loop()
    try:
        assert plain.run_until_complete(main())[0] < shift
    finally:
        plain.close()
