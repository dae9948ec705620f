"""Calls of handshake-era upstreams parked while a 2026-07-28 client answers their
question by MRTR (docs/gateway.md, "Questions across eras").

Such an upstream asks by a request of its own, mid-call, and waits for the
answer; a 2026-07-28 client answers only by retrying its call.  So the upstream
call runs in a task of the :class:`ParkingLot`, not of the client's request: its
question ends that request with ``input_required``, the call waits (parked) for
the retry that brings the answer, and is released when none comes in time."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from sansio_mcp import ErrorCode, MCPError
from sansio_mcp.runtime import Backend, ProgressCallback, Signal, TaskGroup

__all__ = ["PARKED_STATE_PREFIX", "ParkedCall", "ParkingLimits", "ParkingLot", "Question"]

#: How a ``requestState`` naming a parked call begins (the rest is sealed); any
#: other is an upstream's own, passed back to it.
PARKED_STATE_PREFIX = "sansio-gateway-parked:"


@attrs.frozen
class ParkingLimits:
    """How long a parked call waits for its client's retry (``timeout`` s), and how
    many calls may be parked at once, in all and per principal."""

    timeout: float = 60.0
    max_total: int = 1000
    max_per_principal: int = 100


@attrs.define(eq=False)
class Question:
    """What a parked call's upstream asked, under ``key`` in the client's
    ``inputRequests``; ``answered`` is set once ``answer`` (or ``error``) is in."""

    key: str
    method: str
    params: dict[str, Any]
    answered: Signal
    #: Whether the client was asked it (an ``input_required`` went out).
    posed: bool = False
    answer: dict[str, Any] | None = None
    error: MCPError | None = None


@attrs.define(eq=False)
class ParkedCall:
    """One tools/call of a 2026-07-28 client whose upstream may ask mid-call.

    ``request`` (its tool name and arguments) and ``principal`` are what a retry
    must bring to reach it."""

    id: str
    principal: str | None
    request: tuple[Any, ...]
    #: The question waiting for the client's answer, if any.
    question: Question | None = None
    rounds: int = 0
    done: bool = False
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    #: Why the call was released unfinished (the retry did not come, the client left).
    released: str | None = None
    #: Where the upstream's progress goes while a request of the client waits.
    progress: ProgressCallback | None = None
    #: What the client declared (its latest request's ``_meta``).
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    #: Questions refused to the upstream for the client's sake, to tell it why.
    refused: list[MCPError] = attrs.field(factory=list)
    _wake: Signal | None = None
    # (Cancellable: what TaskGroup.start_cancellable returns.)
    _task: Any = None
    _timer: Any = None

    def _notify(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def relay_progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.progress is not None:
            self.progress(progress, total, message)


class ParkingLot:
    """Where parked calls run and wait; :meth:`run` it beside the gateway (a lot
    that is not running parks nothing: :attr:`running` is False)."""

    def __init__(self, backend: Backend, limits: ParkingLimits | None = None) -> None:
        self.backend = backend
        self.limits = limits or ParkingLimits()
        self._calls: dict[str, ParkedCall] = {}
        self._group: TaskGroup | None = None

    @property
    def running(self) -> bool:
        return self._group is not None

    async def run(self) -> None:
        """Hold the lot's task group until cancelled (its calls are cancelled with it)."""
        async with self.backend.open_task_group() as group:
            self._group = group
            try:
                await self.backend.new_signal().wait()
            finally:
                self._group = None
                group.cancel()

    def get(self, call_id: str) -> ParkedCall | None:
        return self._calls.get(call_id)

    def parked(self, principal: str | None = None, *, anyone: bool = True) -> int:
        """How many calls wait for their client's answer (``principal``'s alone
        unless ``anyone``)."""
        return sum(
            1
            for c in self._calls.values()
            if c.question is not None and (anyone or c.principal == principal)
        )

    def __len__(self) -> int:
        return len(self._calls)

    def start(
        self,
        principal: str | None,
        request: tuple[Any, ...],
        work: Callable[[ParkedCall], Awaitable[dict[str, Any]]],
    ) -> ParkedCall:
        """Run ``work(call)`` (the upstream call) in the lot, as a new call."""
        assert self._group is not None, "the parking lot is not running"
        call = ParkedCall(secrets.token_urlsafe(18), principal, request)
        self._calls[call.id] = call

        async def run() -> None:
            try:
                call.result = await work(call)
            except Exception as exc:  # the call's outcome, for the request waiting on it
                call.error = exc

        def ended() -> None:
            call.done = True
            if call._timer is not None:
                call._timer.cancel()
            if call.question is not None and call.question.error is None:
                self._answer_with_error(call, "the call ended")
            if call._wake is None:
                # Ended while parked (the upstream gave up its question): no request
                # waits for the outcome, and a retry is told the call is gone.
                self._forget(call)
            call._notify()

        call._task = self._group.start_cancellable(run, on_done=ended)
        return call

    def admit(self, call: ParkedCall) -> None:
        """Raise :class:`MCPError` if ``call`` may not be parked for a question now:
        it has one already, or the lot is full (``limits``)."""
        if call.question is not None or call.done:
            raise MCPError(
                ErrorCode.INVALID_REQUEST,
                "the gateway takes one question at a time per call from this upstream",
            )
        limits = self.limits
        if self.parked() >= limits.max_total:
            raise _busy(f"{limits.max_total} calls are parked (max_parked_calls)")
        if self.parked(call.principal, anyone=False) >= limits.max_per_principal:
            raise _busy(
                f"{limits.max_per_principal} calls of this principal are parked "
                "(max_parked_calls_per_principal)"
            )

    async def ask(self, call: ParkedCall, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The upstream's question of ``call`` (admitted: :meth:`admit`): put before
        the request waiting on it, answered when the client's retry brings the answer."""
        self.admit(call)
        call.rounds += 1
        question = Question(
            f"{method.partition('/')[0]}-{call.rounds}", method, params, self.backend.new_signal()
        )
        call.question = question
        call._notify()
        try:
            await question.answered.wait()
        finally:
            if call.question is question:
                call.question = None
        if question.error is not None:
            raise question.error
        assert question.answer is not None
        return question.answer

    async def next_step(self, call: ParkedCall) -> Question | None:
        """Wait until ``call`` asks a question not yet posed (returned, now posed
        and timed: it is released ``limits.timeout`` s on unless answered) or ends
        (None; its ``result``, ``error`` or ``released`` say how).  A waiter that is
        cancelled (its client gone) releases the call."""
        finished = False
        try:
            while True:
                if call.done:
                    self._forget(call)
                    finished = True
                    return None
                question = call.question
                if question is not None and not question.posed:
                    question.posed = True
                    self._time(call, question)
                    finished = True
                    return question
                call._wake = self.backend.new_signal()
                await call._wake.wait()
        finally:
            if not finished:
                self.release(call, "its client went away")

    def answer(self, call: ParkedCall, question: Question, answer: dict[str, Any]) -> None:
        """The client's ``answer`` to ``question`` (posed, unanswered), for the upstream."""
        if call._timer is not None:
            call._timer.cancel()
            call._timer = None
        question.answer = answer
        question.answered.set()

    def release(self, call: ParkedCall, why: str) -> None:
        """Give ``call`` up: its upstream's question is answered with an error and
        the upstream call cancelled."""
        if call.released is None and not call.done:
            call.released = why
        self._forget(call)
        if call.question is not None and call.question.error is None:
            self._answer_with_error(call, why)
        if call._task is not None:
            call._task.cancel()
        if call._timer is not None:
            call._timer.cancel()
            call._timer = None

    def _answer_with_error(self, call: ParkedCall, why: str) -> None:
        assert call.question is not None
        call.question.error = MCPError(
            ErrorCode.REQUEST_TIMEOUT, f"the gateway's client gave no answer: {why}"
        )
        call.question.answered.set()

    def _time(self, call: ParkedCall, question: Question) -> None:
        timeout = self.limits.timeout

        async def expire() -> None:
            await self.backend.sleep(timeout)
            if call.question is question and question.answer is None:
                self.release(call, f"no retry brought the answer within {timeout:g} s")

        assert self._group is not None
        call._timer = self._group.start_cancellable(expire)

    def _forget(self, call: ParkedCall) -> None:
        self._calls.pop(call.id, None)


def _busy(why: str) -> MCPError:
    return MCPError(ErrorCode.INTERNAL_ERROR, f"the gateway parks no more calls: {why}")
