"""Running tools as tasks (the tasks extension), backend-neutral.

:class:`TaskRunner` is what a :class:`~sansio_mcp.runtime.Server` uses: it
starts a task-capable tool in the background, records its status in a
:class:`TaskStore` (the core's in-memory :class:`~sansio_mcp._tasks.TaskTable`
by default), parks it on ``input_required`` when the tool asks for input,
and answers ``tasks/get``, ``tasks/update`` and ``tasks/cancel``.

Input asked for before the tool first really waits is gathered by MRTR,
synchronously, as for any tool: the task is created at the tool's first
real wait (so a tool that asks, then works, answers ``input_required``
rounds first and a ``CreateTaskResult`` once it has what it asked for).
A tool that finishes without ever waiting is answered at once.  A tool that
must wait before it knows whether it has long work ahead (a peer that may answer
at once or start a job) waits inside ``ctx.defer_task()`` and calls
``ctx.become_task()`` once it knows; raising :class:`CancelTask` ends its task
as ``cancelled``.

On a 2025-11-25 session (the core's experimental tasks) a ``tools/call`` with
``params.task`` is a task from the start; input the tool asks for goes to the
client as ordinary requests tied to the task (``input_required`` meanwhile),
and ``tasks/result`` waits for the outcome.
"""

from __future__ import annotations

import inspect
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any, Protocol

import attrs

from .._errors import InternalError, InvalidParams, MCPError, failure_text
from .._registry import HandlerCall, SessionHub
from .._stateless import missing_capability_error, missing_input_capabilities
from .._tasks import (
    ANONYMOUS_OWNER,
    RELATED_TASK,
    TERMINAL_STATUSES,
    TaskLimits,
    TaskRecord,
    TaskStatus,
    TaskTable,
    iso_time,
    owner_key,
    random_task_id,
)
from ._primitives import Cancellable, Signal
from ._store_base import StoreUnavailable
from ._task_store import (
    DEFAULT_TASK_LEASE,
    SharedTaskStore,
    StoredTask,
    TaskConflict,
    TaskStores,
    shared_task_store,
)

__all__ = [
    "CancelTask",
    "TaskContext",
    "TaskStart",
    "TaskStore",
    "TaskRunner",
    "RunningTask",
    "task_owner",
]

#: Bus channels of tasks shared by replicas (the bus adds the stores' namespace):
#: status changes for every replica's listeners, and ``task-control:REPLICA``
#: where ``tasks/update`` and ``tasks/cancel`` reach the replica running a task.
TASK_STATUS_CHANNEL = "task-status"
TASK_CONTROL_CHANNEL = "task-control"


class CancelTask(Exception):
    """Raised by a task's tool to end its task as ``cancelled`` (the work was called
    off elsewhere, not by ``tasks/cancel``); the message becomes the task's
    ``statusMessage``.  In a call that is no task it is a tool error, as any other
    exception."""


class TaskStart:
    """When a task-capable call's task is created: at its tool's first real wait
    outside ``held`` stretches (:meth:`Context.defer_task`), or at :meth:`now`
    (:meth:`Context.become_task`)."""

    def __init__(self, create: Callable[[], None]) -> None:
        self._create = create
        #: How many ``defer_task`` blocks the tool is in.
        self.held = 0
        self.done = False

    def now(self) -> None:
        if not self.done:
            self.done = True
            self._create()

    def at_wait(self) -> None:
        if not self.held:
            self.now()


class TaskStore(Protocol):
    """Where task records live.  :class:`~sansio_mcp._tasks.TaskTable` (in memory)
    is the default; a store shared by replicas implements the same calls, and keeps
    each record's ``owner`` with it (a task is only ever found for its owner)."""

    def add(self, record: TaskRecord) -> None: ...

    def get(self, task_id: str, now: float, owner: str | None = None) -> TaskRecord:
        """The live task of ``owner`` (None: of anyone); :class:`InvalidParams`
        (-32602) if unknown, expired or another owner's."""
        ...

    def owned(self, owner: str, now: float) -> list[TaskRecord]:
        """The live tasks of ``owner``, oldest first (2025-11-25's ``tasks/list``)."""
        ...

    def forget_expired(self, now: float) -> list[str]: ...


class TaskContext(Protocol):
    """What the runner needs of a handler's context (a :class:`Context` has it)."""

    now: float
    params: dict[str, Any]
    hub: SessionHub | None
    task: RunningTask | None
    task_start: TaskStart | None

    @property
    def client_capabilities(self) -> dict[str, Any]: ...

    @property
    def stateless(self) -> bool: ...

    @property
    def session(self) -> Any: ...

    @property
    def auth(self) -> Any: ...

    def clock(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    def new_signal(self) -> Signal: ...

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]: ...

    def start_background(self, fn: Callable[[], Awaitable[Any]]) -> Cancellable: ...


class _FirstWait:
    """Await ``coroutine``, telling ``start`` each time it really waits (yields to
    the event loop) until the task exists.  Backend-neutral: what it yields goes to
    the loop untouched."""

    def __init__(self, awaitable: Awaitable[Any], start: TaskStart) -> None:
        self._awaitable = awaitable
        self._start = start

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self._awaitable.__await__()
        step: Callable[[Any], Any] = inner.send
        arg: Any = None
        while True:
            try:
                value = step(arg)
            except StopIteration as stop:
                return stop.value
            if not self._start.done:
                self._start.at_wait()
            try:
                arg, step = (yield value), inner.send
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as exc:  # cancellation too: the tool sees it
                arg, step = exc, inner.throw


class RunningTask:
    """A task whose tool runs in this process: its record, its wake-up signal and
    the handle that cancels it."""

    def __init__(
        self, record: TaskRecord, ctx: TaskContext, now: Callable[[], float], announce: Any
    ) -> None:
        self.record = record
        self._ctx = ctx
        self.now = now
        self._announce: Callable[[TaskRecord], None] = announce
        self._wake: Signal | None = None
        self.handle: Cancellable | None = None
        #: Shared store only: the stored version this replica last wrote, whether the
        #: record changed since, and what wakes the task's writer.
        self.version = 0
        self.dirty = False
        self._kick: Signal | None = None
        #: Its place among its owner's live tasks on every replica (see TaskRunner.start).
        self.place: str | None = None
        #: What gives the task up once it is overdue (see :meth:`TaskRunner._watch`).
        self.watch: Callable[[], Awaitable[None]] | None = None
        self._watcher: Cancellable | None = None

    def rearm(self) -> None:
        """(Re)start the watcher: parking may bring the task's time limit forward."""
        self.unwatch()
        if self.watch is not None and not self.record.terminal:
            self._watcher = self._ctx.start_background(self.watch)

    def unwatch(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def ask(self, requests: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Park the task on ``requests`` until ``tasks/update`` answered them all (on
        2025-11-25: ask the client directly, ``input_required`` until it answered)."""
        if not self._ctx.stateless:
            return await self._ask_directly(requests)
        missing = missing_input_capabilities(dict(requests), self._ctx.client_capabilities)
        if missing:
            raise missing_capability_error(missing)
        keys = self.record.ask(requests, self.now())
        self.rearm()
        self._announce(self.record)
        while self.record.status is TaskStatus.INPUT_REQUIRED:
            self._wake = self._ctx.new_signal()
            await self._wake.wait()
        answers = self.record.answers
        return {key: answers[wire] for wire, key in keys.items()}

    async def _ask_directly(
        self, requests: Mapping[str, dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        keys = self.record.ask(requests, self.now())
        self.rearm()
        self._announce(self.record)
        answers: dict[str, dict[str, Any]] = {}
        try:
            for key, request in requests.items():
                params = dict(request.get("params") or {})
                params["_meta"] = {**params.get("_meta", {}), RELATED_TASK: self._related}
                answers[key] = await self._ctx.send_request(request["method"], params)
        finally:
            if self.record.status is TaskStatus.INPUT_REQUIRED:
                # Back to working, answered or not: the tool goes on (or raises) either way.
                self.record.answer(
                    {wire: answers.get(key, {}) for wire, key in keys.items()}, self.now()
                )
                self._announce(self.record)
        return answers

    @property
    def _related(self) -> dict[str, str]:
        return {"taskId": self.record.task_id}

    def report(self, message: str | None) -> None:
        """A progress message becomes the task's ``statusMessage``."""
        if message is not None and not self.record.terminal:
            self.record.set_message(message, self.now())
            self._announce(self.record)

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def kick(self) -> None:
        """The record changed: its writer stores and announces it."""
        self.dirty = True
        if self._kick is not None:
            self._kick.set()


def task_owner(ctx: TaskContext) -> str:
    """Whose task a request makes, and whose tasks it may see (:func:`owner_key`):
    the verified token's subject, else its handshake session (``session.key``, never
    reused), else, on a 2026-07-28 request without a token, ``"anonymous"``."""
    subject = getattr(ctx.auth, "subject", None)
    session_key = None if ctx.stateless else getattr(ctx.session, "key", None)
    return owner_key(subject if isinstance(subject, str) else None, session_key)


class TaskRunner:
    """Starts tools as tasks and answers the ``tasks/*`` requests.

    ``ttl_ms`` is how long a finished task's outcome is kept (None: until the
    process ends); ``poll_interval_ms`` is the polling pace suggested to clients;
    ``limits`` caps the tasks that have not ended and how long one may wait
    (:class:`~sansio_mcp._tasks.TaskLimits`); ``new_id`` makes each task's id
    (random UUIDs by default; give one of your own for ids tests can predict).

    Replicas: with ``stores`` (:class:`~sansio_mcp.runtime.Stores`) whose store is
    shared (Redis), or an explicit ``shared`` store, records live there instead
    (see :mod:`._task_store`): any replica answers ``tasks/*`` for any task, the
    one running it applies ``tasks/update`` and ``tasks/cancel`` sent over the
    bundle's event bus, renews its owner lease (``lease`` seconds, renewed every
    third of it) and publishes every status change; a reader that finds an open
    task whose lease ran out fails it (its replica died; it is never run again).
    """

    def __init__(
        self,
        store: TaskStore | None = None,
        *,
        ttl_ms: int | None = 300_000,
        poll_interval_ms: int | None = 500,
        limits: TaskLimits | None = None,
        new_id: Callable[[], str] = random_task_id,
        stores: TaskStores | None = None,
        shared: SharedTaskStore | None = None,
        lease: float = DEFAULT_TASK_LEASE,
    ) -> None:
        if ttl_ms is not None and poll_interval_ms is not None and poll_interval_ms > ttl_ms:
            # A client polling this slowly could find a finished task already forgotten.
            raise ValueError("poll_interval_ms must not exceed ttl_ms")
        if not lease > 0:
            raise ValueError("lease must be a positive number of seconds")
        self.store: TaskStore = store if store is not None else TaskTable()
        #: Where records live when replicas share them (None: :attr:`store`, this process).
        self.shared = shared if shared is not None else shared_task_store(stores)
        if self.shared is not None and stores is None:
            raise ValueError("a shared task store needs the Stores bundle (its event bus)")
        self.stores = stores
        self.lease = lease
        #: Where status pushes for listeners on this replica go (the server's hub).
        self.hub: SessionHub | None = None
        #: Tasks this replica runs whose latest state is not stored yet (their writer runs).
        self._local: dict[str, RunningTask] = {}
        #: task id -> owner of tasks heard of on the bus (``subscriptions/listen`` checks).
        self._known: dict[str, str] = {}
        if self.shared is not None and stores is not None:
            stores.events.subscribe(self._control_channel(stores.replica_id), self._on_control)
            stores.events.subscribe(TASK_STATUS_CHANNEL, self._on_status)
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.limits = limits if limits is not None else TaskLimits()
        self.new_id = new_id
        self._running: dict[str, RunningTask] = {}
        #: Task-capable calls not answered yet (each may become a task), by owner.
        self._starting: Counter[str] = Counter()
        #: The wall-clock time of the latest request seen (the core has no clock).
        self._now = 0.0
        #: ``tasks/result`` requests waiting for a task to end.
        self._waiters: dict[str, list[Signal]] = {}

    @property
    def running(self) -> int:
        """How many tools run as tasks in this process now."""
        return len(self._running)

    async def start(
        self,
        ctx: TaskContext,
        call: HandlerCall,
        settle_error: Callable[[Exception], dict[str, Any]],
    ) -> dict[str, Any]:
        """Run ``call`` as a task; the ``tools/call`` answer: ``CreateTaskResult``
        once the tool first waits, else its own outcome (``settle_error`` turns an
        exception into a result or raises it, as for a plain call).  On a 2025-11-25
        session the task exists at once, and the answer is ``{"task": Task}``."""
        clock0, wall0 = ctx.clock(), ctx.now
        self._now = max(self._now, wall0)
        self.store.forget_expired(wall0)
        owner = task_owner(ctx)
        self._check_capacity(owner)
        place = await self._take_place(ctx, owner)
        first = ctx.new_signal()
        outcome: dict[str, Any] = {}
        core = not ctx.stateless
        self._starting[owner] += 1
        counted = [owner]  # emptied once the call is answered or has become a task

        def now() -> float:
            return wall0 + ctx.clock() - clock0

        # A call may wait long before it becomes a task (``defer_task``): its place is
        # held meanwhile; the task's writer renews it from then on.
        keeper = (
            None
            if place is None
            else ctx.start_background(partial(self._keep_place, ctx, owner, place, now))
        )

        def started() -> None:
            if counted:
                counted.pop()
                self._starting[owner] -= 1
                if not self._starting[owner]:
                    del self._starting[owner]
                if keeper is not None:
                    keeper.cancel()

        def created() -> None:
            record = TaskRecord.new(
                now(),
                ttl_ms=self._ttl_for(ctx, core),
                poll_interval_ms=self.poll_interval_ms,
                owner=owner,
                new_id=self.new_id,
            )
            if self.shared is None:
                self.store.add(record)
            running = RunningTask(record, ctx, now, lambda r: self._announce(ctx, r))
            running.handle = handle
            running.place = place
            started()
            self._running[record.task_id] = running
            self._watch(ctx, running, core)
            ctx.task = running
            outcome["task"] = running
            # A task starts working; the tool may ask for input before this answer is sent.
            outcome["created"] = {"task": record.core_task()} if core else record.create_result()
            first.set()

        start = ctx.task_start = TaskStart(created)

        async def body() -> None:
            error: Exception | None = None
            try:
                if core:
                    start.now()  # no MRTR on a handshake session: the task exists at once
                value = call.handler(**call.kwargs)
                if inspect.isawaitable(value):
                    value = await _FirstWait(value, start)
            except Exception as exc:
                value, error = None, exc
            except BaseException:  # cancelled: tasks/cancel, or its connection or server ended
                self._stopped(ctx, outcome.get("task"))
                raise
            running: RunningTask | None = outcome.get("task")
            if running is None:
                outcome.update(value=value, error=error)
                first.set()
                return
            self._running.pop(running.record.task_id, None)
            running.unwatch()
            self._settle(ctx, running, call, value, error, settle_error, core)

        handle = ctx.start_background(body)
        try:
            await first.wait()
        except BaseException:
            if "task" not in outcome:
                handle.cancel()  # the client gave up before any task existed
                if place is not None:
                    # Given up now, not when its lease lapses: the client may retry at once.
                    try:
                        ctx.start_background(partial(self._give_place_up, owner, place))
                    except Exception:  # the server is stopping: the lease lapses instead
                        pass
            raise
        finally:
            started()
        if "task" in outcome:
            if self.shared is not None:
                await self._create(ctx, outcome["task"])
            return outcome["created"]  # type: ignore[no-any-return]
        await self._give_place_up(owner, place)  # the call became no task
        if outcome["error"] is not None:
            return settle_error(outcome["error"])
        return call.finish(outcome["value"])

    async def _take_place(self, ctx: TaskContext, owner: str) -> str | None:
        """With a shared store, a place among ``owner``'s live tasks on every replica
        (``max_live_per_owner`` holds for the deployment, not per replica), held for
        the lease and renewed by the task's writer; -32603 past the cap, or naming the
        store when it cannot be reached.  None when there is nothing to count."""
        cap = self.limits.max_live_per_owner
        if self.shared is None or cap is None or owner == ANONYMOUS_OWNER:
            return None
        place = secrets.token_hex(8)
        with _store_errors():
            held = await self.shared.reserve(owner, place, cap, ctx.now, ctx.now + self.lease)
        if held < 0:
            self.limits.check_capacity(0, -1 - held)
        return place

    async def _keep_place(
        self, ctx: TaskContext, owner: str, place: str, now: Callable[[], float]
    ) -> None:
        """Renew ``place`` every third of the lease until cancelled."""
        assert self.shared is not None
        while True:
            await ctx.sleep(self.lease / 3)
            try:
                await self.shared.renew(owner, place, now(), now() + self.lease)
            except StoreUnavailable:
                pass  # tried again in a third of the lease

    async def _give_place_up(self, owner: str, place: str | None) -> None:
        """Free ``place`` (a lapsed lease frees it anyway: best effort)."""
        if self.shared is None or place is None:
            return
        try:
            await self.shared.release(owner, place)
        except StoreUnavailable:
            pass  # its lease runs out

    def _check_capacity(self, owner: str) -> None:
        """-32603 when one more task would pass a cap of :attr:`limits` (calls that may
        still become tasks count too; anonymous callers share only the process cap)."""
        live = len(self._running) + self._starting.total()
        owned = None
        if owner != ANONYMOUS_OWNER:
            owned = self._starting[owner] + sum(
                1 for r in self._running.values() if r.record.owner == owner
            )
        self.limits.check_capacity(live, owned)

    def _watch(self, ctx: TaskContext, running: RunningTask, core: bool) -> None:
        """Give the task up once it is overdue (parked on input too long, or, when
        :attr:`limits` says so, asked about by no client too long): it fails with
        the error saying why and its tool is cancelled.  One watcher per task,
        started again (:attr:`RunningTask.rearm`) when it parks, as parking may
        bring its time forward; a 2025-11-25 task lives with its session instead
        of being polled, so the unpolled bound does not apply to it.  A task still
        running when its ``ttlMs`` (from creation) is over is stopped the same way."""
        limits = attrs.evolve(self.limits, unpolled_ttl_ms=None) if core else self.limits
        if running.record.overdue(limits) is None:
            return

        async def watch() -> None:
            while (due := running.record.overdue(limits)) is not None:
                at, error = due
                if at > running.now():
                    await ctx.sleep(at - running.now())
                    continue
                self._running.pop(running.record.task_id, None)
                if running.record.fail(error, running.now()):
                    self._announce(ctx, running.record)
                if running.handle is not None:
                    running.handle.cancel()
                return

        running.watch = watch
        running.rearm()

    def _ttl_for(self, ctx: TaskContext, core: bool) -> int | None:
        """The task's life from creation: ours, or a 2025-11-25 requestor's shorter
        ``task.ttl``, though not below the polling pace (a task gone before its first
        poll would serve nobody)."""
        asked = (ctx.params.get("task") or {}).get("ttl") if core else None
        if isinstance(asked, int) and (self.ttl_ms is None or asked < self.ttl_ms):
            return max(asked, self.poll_interval_ms or 0)
        return self.ttl_ms

    def _settle(
        self,
        ctx: TaskContext,
        running: RunningTask,
        call: HandlerCall,
        value: Any,
        error: Exception | None,
        settle_error: Callable[[Exception], dict[str, Any]],
        core: bool,
    ) -> None:
        record, now = running.record, running.now()
        if isinstance(error, CancelTask):
            if record.cancelled_by_tool(str(error) or None, now):
                self._announce(ctx, record)
            return
        try:
            result = call.finish(value) if error is None else settle_error(error)
        except MCPError as exc:
            changed = record.fail(exc, now)
        except Exception as exc:
            changed = record.fail(InternalError(message=failure_text(exc)), now)
        else:
            changed = record.complete(result, now, core=core)
        if changed:
            self._announce(ctx, record)

    def _stop(self, running: RunningTask) -> None:
        """Stop a tool this replica runs (its task was cancelled, ended elsewhere, or
        failed to store): it no longer counts as running, though its handler may take
        a moment to unwind."""
        self._running.pop(running.record.task_id, None)
        running.unwatch()
        if running.handle is not None:
            running.handle.cancel()

    def _stopped(self, ctx: TaskContext, running: RunningTask | None) -> None:
        """The tool was cancelled.  A task still open was not stopped by ``tasks/cancel``
        but by its connection or server ending: it fails (and can then expire)."""
        if running is None:
            return
        self._running.pop(running.record.task_id, None)
        running.unwatch()
        error = InternalError(message="the task was stopped: its server or connection ended")
        if running.record.fail(error, running.now()):
            self._announce(ctx, running.record)

    def _announce(self, ctx: TaskContext, record: TaskRecord) -> None:
        if record.terminal:
            for waiter in self._waiters.pop(record.task_id, []):
                waiter.set()
        local = self._local.get(record.task_id)
        if local is not None:
            local.kick()  # stored, then published to every replica's listeners
        if ctx.hub is None:
            return
        if self.shared is not None and ctx.stateless:
            return
        if ctx.stateless:
            ctx.hub.task_status(record.detailed())
        else:  # 2025-11-25: the optional status push, to the task's own session
            task = record.core_task()
            ctx.hub.tell(ctx.session, lambda session: session.send_core_task_status(task))

    def visible(self, task_id: str, owner: str) -> bool:
        """Whether ``owner`` may see task ``task_id`` (``subscriptions/listen``), as of
        the latest request's time (shared store: a task this replica runs or heard of
        on the bus)."""
        if self.shared is not None:
            local = self._local.get(task_id) or self._running.get(task_id)
            if local is not None:
                return local.record.owner == owner
            return self._known.get(task_id) == owner
        try:
            self.store.get(task_id, self._now, owner)
        except InvalidParams:
            return False
        return True

    # 2025-11-25: tasks/get, tasks/result, tasks/list, tasks/cancel ---------------------

    def _owned(self, ctx: TaskContext, task_id: str) -> TaskRecord:
        """The live task of the caller; -32602 if unknown, expired or another's."""
        self._now = max(self._now, ctx.now)
        return self.store.get(task_id, ctx.now, task_owner(ctx))

    def handle_core(
        self, ctx: TaskContext, method: str, record: TaskRecord | None = None
    ) -> dict[str, Any]:
        """``tasks/get`` or ``tasks/cancel`` on a 2025-11-25 session: the ``Task``
        (of ``record``, the caller's task found already, if given)."""
        if record is None:
            record = self._owned(ctx, ctx.params["taskId"])
        if method == "tasks/cancel":
            if not record.cancel(ctx.now):
                raise _already_over(record)
            running = self._running.get(record.task_id)
            if running is not None:
                self._stop(running)
            self._announce(ctx, record)
        return record.core_task()

    async def payload(self, ctx: TaskContext) -> dict[str, Any]:
        """``tasks/result``: wait for the task to end; its result (or error)."""
        if self.shared is not None:
            return await self._shared_payload(ctx)
        record = self._owned(ctx, ctx.params["taskId"])
        while not record.terminal:
            signal = ctx.new_signal()
            self._waiters.setdefault(record.task_id, []).append(signal)
            await signal.wait()
        return record.core_payload()

    def listing(self, ctx: TaskContext) -> list[dict[str, Any]]:
        """``tasks/list``: the caller's live tasks, oldest first."""
        return [r.core_task() for r in self.store.owned(task_owner(ctx), ctx.now)]

    # tasks/get, tasks/update, tasks/cancel ---------------------------------------------

    def handle(
        self, ctx: TaskContext, method: str, record: TaskRecord | None = None
    ) -> dict[str, Any]:
        """The result of a ``tasks/*`` request (the core checked its shape), about
        ``record`` (the caller's task found already) if given."""
        if record is None:
            record = self._owned(ctx, ctx.params["taskId"])
        running = self._running.get(record.task_id)
        if method != "tasks/cancel":
            record.seen(ctx.now)
        if method == "tasks/get":
            return record.get_result()
        if method == "tasks/update":
            responses = _responses(ctx, record)
            was = record.status
            taken = record.answer(responses, ctx.now)
            if record.status is not was:
                if running is not None:
                    running.wake()
                self._announce(ctx, record)
            elif taken and (local := self._local.get(record.task_id)) is not None:
                local.kick()  # some answers taken: stored for the other replicas
            return {}
        # tasks/cancel: cooperative, and idempotent on a task that is over.
        if record.cancel(ctx.now):
            if running is not None:
                self._stop(running)
            self._announce(ctx, record)
        return {}

    # Replicas sharing a store (``shared``) ---------------------------------------------

    def _control_channel(self, replica: str) -> str:
        """Where ``tasks/update`` and ``tasks/cancel`` reach the replica running a task."""
        # A bus channel: the bus adds the stores' namespace itself.
        return f"{TASK_CONTROL_CHANNEL}:{replica}"

    def _alarm(self, ctx: TaskContext, seconds: float, signal: Signal) -> Cancellable:
        """Set ``signal`` after ``seconds`` (a wait with a bound, backend-neutral)."""

        async def ring() -> None:
            await ctx.sleep(seconds)
            signal.set()

        return ctx.start_background(ring)

    async def _create(self, ctx: TaskContext, running: RunningTask) -> None:
        """Store the new task before its ``CreateTaskResult`` goes out, then keep it
        stored (:meth:`_write`).  The store failing stops the tool at once: -32603
        naming the store, and nothing of the task is left to run later."""
        assert self.shared is not None and self.stores is not None
        record, now = running.record, running.now()
        before = record.to_dict()
        stored = StoredTask(record, 0, self.stores.replica_id, now + self.lease)
        try:
            await self.shared.create(stored, now)
        except StoreUnavailable as exc:
            self._stop(running)
            await self._give_place_up(record.owner, running.place)
            raise _store_error(exc) from None
        if running.place is not None:
            # Held from now on by the writer, which renews it every third of the lease.
            try:
                await self.shared.renew(record.owner, running.place, now, now + self.lease)
            except StoreUnavailable:
                pass  # the writer renews it soon
        running.dirty = record.to_dict() != before  # it moved on while being stored
        self._local[record.task_id] = running
        self._remember(record.task_id, record.owner)
        await self._publish_status(record)
        ctx.start_background(lambda: self._write(ctx, running))

    async def _write(self, ctx: TaskContext, running: RunningTask) -> None:
        """The task's one writer: stores its record whenever it changes (then tells
        every replica) and at least every third of the lease (renewing it), until
        its end is stored.  Losing a compare-and-set means a reader failed the task
        (its lease ran out) or ``tasks/cancel`` ended it on another replica: the
        stored end stands and the tool is stopped."""
        assert self.shared is not None and self.stores is not None
        task_id = running.record.task_id
        try:
            while True:
                signal = running._kick = ctx.new_signal()
                if not running.dirty:
                    alarm = self._alarm(ctx, self.lease / 3, signal)
                    await signal.wait()
                    alarm.cancel()
                announce, running.dirty = running.dirty, False
                record, now = running.record, running.now()
                stored = StoredTask(record, running.version, self.stores.replica_id)
                stored.lease_until = now + self.lease
                try:
                    written = await self.shared.save(stored, now)
                except TaskConflict:
                    if await self._adopt(running, now):
                        await self._give_place_up(record.owner, running.place)
                        return
                    continue
                except StoreUnavailable:
                    running.dirty = running.dirty or announce
                    await ctx.sleep(min(self.lease / 3, 0.5))
                    continue
                running.version = written.version
                if announce:
                    await self._publish_status(record)
                if record.terminal:
                    await self._give_place_up(record.owner, running.place)
                    return
                if running.place is not None:
                    try:
                        await self.shared.renew(record.owner, running.place, now, now + self.lease)
                    except StoreUnavailable:
                        pass  # renewed at the next write, or the place lapses
        finally:
            self._local.pop(task_id, None)

    async def _adopt(self, running: RunningTask, now: float) -> bool:
        """After a lost compare-and-set: take the stored state.  True when it ended the
        task (the tool is stopped); False to write ours again over its version."""
        assert self.shared is not None
        record = running.record
        try:
            stored = await self.shared.load(record.task_id, now)
        except StoreUnavailable:
            running.dirty = True
            return False
        if stored is not None and not stored.record.terminal:
            running.version = stored.version
            running.dirty = True
            return False
        if stored is not None:
            for field in attrs.fields(TaskRecord):
                setattr(record, field.name, getattr(stored.record, field.name))
        self._stop(running)
        for waiter in self._waiters.pop(record.task_id, []):
            waiter.set()
        return True

    async def _publish_status(self, record: TaskRecord) -> None:
        """Tell every replica (this one too) the task's state, for its listeners."""
        assert self.stores is not None
        message = {"owner": record.owner, "task": record.detailed()}
        try:
            await self.stores.events.publish(TASK_STATUS_CHANNEL, message)
        except StoreUnavailable:
            pass  # pushes are at most once; pollers read the store

    async def _tell_owner(self, stored: StoredTask, message: dict[str, Any]) -> None:
        await self._publish(self._control_channel(stored.replica), message)

    async def _publish(self, channel: str, message: dict[str, Any]) -> None:
        assert self.stores is not None
        await self.stores.events.publish(channel, message)

    def _remember(self, task_id: str, owner: str) -> None:
        """Note whose a task is (bounded: the oldest is forgotten first)."""
        self._known.pop(task_id, None)
        self._known[task_id] = owner
        while len(self._known) > _MAX_KNOWN_TASKS:
            del self._known[next(iter(self._known))]

    def _on_status(self, message: dict[str, Any]) -> None:
        """A task's new state, from the bus: to this replica's listeners."""
        task, owner = message.get("task"), message.get("owner")
        if not isinstance(task, dict) or not isinstance(owner, str):
            return
        task_id = task.get("taskId")
        if not isinstance(task_id, str):
            return
        self._remember(task_id, owner)
        if isinstance(status := task.get("status"), str) and status in _TERMINAL_VALUES:
            for waiter in self._waiters.pop(task_id, []):
                waiter.set()
        if self.hub is not None:
            self.hub.task_status(task)

    def _on_control(self, message: dict[str, Any]) -> None:
        """``tasks/update`` or ``tasks/cancel`` taken by another replica, for a task
        this one runs."""
        task_id, at = message.get("task"), message.get("at")
        running = self._local.get(task_id) if isinstance(task_id, str) else None
        if running is None or running.record.terminal or not isinstance(at, (int, float)):
            return
        record, op = running.record, message.get("op")
        record.seen(at)
        responses = message.get("responses")
        if op == "update" and isinstance(responses, dict):
            # Checked by the replica that took the request; checked again, as any input.
            responses = {k: v for k, v in responses.items() if isinstance(v, dict)}
            was = record.status
            if record.answer(responses, at) and record.status is was:
                running.kick()  # some answers taken, some still pending
            if record.status is not was:
                running.wake()
                self._announce(running._ctx, record)
        elif op == "cancel":
            # The cancelling replica stored the end; our writer finds it and stops.
            record.cancel(at)
            running.kick()
            self._stop(running)

    async def _find(self, ctx: TaskContext, task_id: str) -> tuple[TaskRecord, StoredTask | None]:
        """The caller's task: this replica's own record while it runs here, else the
        stored one (failed first if its replica's lease ran out); -32602 if unknown."""
        assert self.shared is not None
        owner = task_owner(ctx)
        local = self._local.get(task_id)
        if local is not None:
            if local.record.owner != owner:
                raise _unknown(task_id)
            return local.record, None
        stored = await self.shared.load(task_id, ctx.now, owner)
        if stored is None:
            raise _unknown(task_id)
        self._remember(task_id, owner)
        return (await self._declare_dead(stored, ctx.now)).record, stored

    async def _change_stored(
        self, stored: StoredTask, now: float, change: Callable[[StoredTask], bool]
    ) -> tuple[StoredTask, bool]:
        """Apply ``change`` (False: it does not apply) and save, a compare-and-set: on a
        conflict reload and apply again (of two replicas one writes, the other sees
        what it wrote); then tell every replica.  The stored task, and whether it changed."""
        assert self.shared is not None
        while change(stored):
            try:
                stored = await self.shared.save(stored, now)
            except TaskConflict:
                again = await self.shared.load(stored.record.task_id, now)
                if again is None:
                    raise _unknown(stored.record.task_id) from None
                stored = again
                continue
            await self._publish_status(stored.record)
            return stored, True
        return stored, False

    async def _declare_dead(self, stored: StoredTask, now: float) -> StoredTask:
        """Fail an open task whose replica stopped renewing its lease."""

        def fail(found: StoredTask) -> bool:
            if not found.lease_over(now):
                return False
            error = InternalError(
                message=f"the replica {found.replica} running the task stopped answering "
                f"(its lease ran out at {iso_time(found.lease_until)}): the task was lost",
                data={"taskId": found.record.task_id, "replica": found.replica},
            )
            return found.record.fail(error, now)

        return (await self._change_stored(stored, now, fail))[0]

    async def _cancel_stored(self, stored: StoredTask, now: float) -> StoredTask | None:
        """End a task another replica runs as ``cancelled`` (the store first, so the
        answer holds whatever that replica does), then tell it to stop the tool.
        None if it was over already."""
        stored, changed = await self._change_stored(stored, now, lambda s: s.record.cancel(now))
        if not changed:
            return None
        await self._tell_owner(stored, {"op": "cancel", "task": stored.record.task_id, "at": now})
        return stored

    async def handle_shared(self, ctx: TaskContext, method: str) -> dict[str, Any]:
        """:meth:`handle` when replicas share the store."""
        with _store_errors():
            return await self._handle_shared(ctx, method)

    async def _handle_shared(self, ctx: TaskContext, method: str) -> dict[str, Any]:
        task_id: str = ctx.params["taskId"]
        record, stored = await self._find(ctx, task_id)
        if stored is None:  # this replica runs it: as in one process
            return self.handle(ctx, method, record)
        if method == "tasks/get":
            if self.limits.unpolled_ttl_ms is not None and not record.terminal:
                await self._tell_owner(stored, {"op": "seen", "task": task_id, "at": ctx.now})
            return record.get_result()
        if method == "tasks/update":
            responses = _responses(ctx, record)
            if not record.terminal:
                message = {"op": "update", "task": task_id, "responses": responses, "at": ctx.now}
                await self._tell_owner(stored, message)
            return {}
        await self._cancel_stored(stored, ctx.now)
        return {}

    async def handle_core_shared(self, ctx: TaskContext, method: str) -> dict[str, Any]:
        """:meth:`handle_core` when replicas share the store."""
        with _store_errors():
            record, stored = await self._find(ctx, ctx.params["taskId"])
            if stored is None:
                return self.handle_core(ctx, method, record)
            if method == "tasks/cancel":
                written = await self._cancel_stored(stored, ctx.now)
                if written is None:
                    raise _already_over(record)
                record = written.record
            return record.core_task()

    async def listing_shared(self, ctx: TaskContext) -> list[dict[str, Any]]:
        """:meth:`listing` when replicas share the store."""
        assert self.shared is not None
        with _store_errors():
            found = await self.shared.owned(task_owner(ctx), ctx.now)
            return [(await self._declare_dead(s, ctx.now)).record.core_task() for s in found]

    async def _shared_payload(self, ctx: TaskContext) -> dict[str, Any]:
        """``tasks/result`` over a shared store: woken by the task's end on the bus,
        and reading the store again every third of the lease (a push may be missed,
        and a dead replica's task is failed only by a reader)."""
        task_id = ctx.params["taskId"]
        while True:
            with _store_errors():
                record, _ = await self._find(ctx, task_id)
            if record.terminal:
                return record.core_payload()
            signal = ctx.new_signal()
            waiters = self._waiters.setdefault(task_id, [])
            waiters.append(signal)
            alarm = self._alarm(ctx, self.lease / 3, signal)
            try:
                await signal.wait()
            finally:
                alarm.cancel()
                if signal in self._waiters.get(task_id, ()):
                    self._waiters[task_id].remove(signal)


#: Tasks a replica remembers the owner of from the bus (for ``subscriptions/listen``).
_MAX_KNOWN_TASKS = 10_000
_TERMINAL_VALUES = frozenset(s.value for s in TaskStatus if s in TERMINAL_STATUSES)


def _responses(ctx: TaskContext, record: TaskRecord) -> dict[str, Any]:
    """``tasks/update``'s ``inputResponses``: -32602 unless each answer to a pending
    request is an object."""
    responses: dict[str, Any] = ctx.params["inputResponses"]
    for key in record.pending.keys() & responses.keys():
        if not isinstance(responses[key], dict):
            raise InvalidParams(message=f"inputResponses[{key!r}] must be an object")
    return responses


def _unknown(task_id: str) -> InvalidParams:
    return InvalidParams(message=f"unknown or expired task: {task_id!r}")


def _already_over(record: TaskRecord) -> InvalidParams:
    """The -32602 of cancelling a 2025-11-25 task that has ended."""
    return InvalidParams(message=f"task {record.task_id} is already {record.status.value}")


def _store_error(exc: StoreUnavailable) -> InternalError:
    """The JSON-RPC error of a request the shared store failed (it names the store)."""
    return InternalError(message=str(exc), data={"store": exc.store})


@contextmanager
def _store_errors() -> Iterator[None]:
    """A failure of the shared store, raised in the block, as the request's :func:`_store_error`."""
    try:
        yield
    except StoreUnavailable as exc:
        raise _store_error(exc) from None
