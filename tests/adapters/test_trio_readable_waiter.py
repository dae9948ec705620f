"""The Trio stdio read loop waits through the running I/O manager's own
``wait_readable`` (:func:`readable_waiter`): it waits for the descriptor, can be
cancelled, refuses a second waiter, and falls back to Trio's public function."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from trio_adapters import _backend
from trio_adapters._backend import readable_waiter


async def test_it_waits_for_the_descriptor_and_is_cancellable() -> None:
    read_end, write_end = os.pipe()
    try:
        wait = readable_waiter()
        assert wait is not trio.lowlevel.wait_readable  # the I/O manager's own
        woke = trio.Event()

        async def waiter() -> None:
            await wait(read_end)
            woke.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert not woke.is_set()
            with pytest.raises(trio.BusyResourceError):  # one waiter per descriptor, as Trio's
                await trio.lowlevel.wait_readable(read_end)
            os.write(write_end, b"x")
        assert woke.is_set()
        os.read(read_end, 1)
        with trio.move_on_after(0.05) as scope:
            await wait(read_end)  # nothing to read: only the cancellation ends it
        assert scope.cancelled_caught
        # The cancelled wait left nothing registered: another may wait now.
        os.write(write_end, b"y")
        await trio.lowlevel.wait_readable(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_outside_a_run_or_on_another_layout_it_is_trios(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert readable_waiter() is trio.lowlevel.wait_readable
    monkeypatch.setattr(_backend, "_RUN", None)

    async def main() -> None:
        assert readable_waiter() is trio.lowlevel.wait_readable

    trio.run(main)
