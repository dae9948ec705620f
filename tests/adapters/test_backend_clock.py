"""The backends read the running clock without the layers between (Trio: not through
``trio.current_time``; asyncio: the stock loop's ``time.monotonic``): the same time, a
custom clock or loop honoured, the usual error outside a run."""

from __future__ import annotations

import asyncio

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
