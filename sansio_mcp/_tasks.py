"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663), pure.

A ``tools/call`` the server chooses to run in the background answers with a
``CreateTaskResult``; the client then polls ``tasks/get``, answers the
task's input requests with ``tasks/update`` and may ``tasks/cancel`` it.
This module holds what does not wait: the status machine (a transition
table), one task's record and its wire shapes, the in-memory table of tasks
with their expiry, and the per-request decision whether a call becomes a
task.  Time enters as seconds since the epoch.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from ._errors import (
    ErrorCode,
    InternalError,
    InvalidParams,
    LocalProtocolError,
    MCPError,
    MethodNotFound,
    MissingRequiredClientCapability,
)
from ._versions import META_CLIENT_CAPABILITIES

__all__ = [
    "TASKS_EXTENSION",
    "CORE_TASKS_REVISION",
    "LEGACY_TASKS_REVISION",
    "CORE_TASKS_CAPABILITY",
    "RELATED_TASK",
    "TASK_METHODS",
    "TASK_METHOD_PREFIX",
    "TASK_NOTIFICATION",
    "TASK_SUPPORT",
    "TERMINAL_STATUSES",
    "TASK_TRANSITIONS",
    "IllegalTaskTransition",
    "TaskStatus",
    "TaskTrigger",
    "TaskRecord",
    "TaskTable",
    "TaskLimits",
    "DEFAULT_MAX_LIVE_TASKS",
    "DEFAULT_MAX_LIVE_TASKS_PER_OWNER",
    "DEFAULT_INPUT_TTL_MS",
    "declares_tasks",
    "declaring_tasks",
    "request_declares_tasks",
    "wants_tasks_declared",
    "poll_seconds",
    "DEFAULT_POLL_INTERVAL",
    "runs_as_task",
    "runs_as_core_task",
    "tasks_capability_error",
    "iso_time",
    "ANONYMOUS_OWNER",
    "owner_key",
    "tool_error_text",
    "TASK_ONLY_DATA",
    "task_only_refusal",
]

#: The extension's identifier, under ``capabilities.extensions``.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: The method prefix the extension reserves (``tasks/*``).
TASK_METHOD_PREFIX = "tasks/"
#: The requests the extension adds (``tasks/result`` and ``tasks/list`` are gone in v2).
TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
#: Polling pace when the server suggests none (seconds).
DEFAULT_POLL_INTERVAL = 0.5
#: Its status push, on ``subscriptions/listen`` streams that name the task.
TASK_NOTIFICATION = "notifications/tasks"
#: How a tool may run: ``optional`` (a task when the client declared the
#: extension, else at once) or ``required`` (only as a task).
TASK_SUPPORT = frozenset({"optional", "required"})

#: The handshake revision whose core has (experimental) tasks: ``params.task`` on
#: ``tools/call``, ``tasks/get|result|list|cancel``, the ``tasks`` capability.
CORE_TASKS_REVISION = "2025-11-25"
#: Deprecated alias of :data:`CORE_TASKS_REVISION`.
LEGACY_TASKS_REVISION = CORE_TASKS_REVISION
#: What a server offering task-capable tools advertises there.
CORE_TASKS_CAPABILITY: Mapping[str, Any] = {
    "list": {},
    "cancel": {},
    "requests": {"tools": {"call": {}}},
}
#: ``_meta`` key tying a message to its task (2025-11-25).
RELATED_TASK = "io.modelcontextprotocol/related-task"


class TaskStatus(enum.Enum):
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskTrigger(enum.Enum):
    """What happens to a task (the inputs of the status machine)."""

    ASKED = "the tool asks for input"
    ANSWERED = "every pending input is answered"
    RETURNED = "the tool returns a result"
    RAISED = "the tool raises a protocol error"
    CANCELLED = "tasks/cancel"
    TOOL_CANCELLED = "the tool ends its task as cancelled"
    TOOL_ERROR = "the tool returns a result with isError (2025-11-25)"


TERMINAL_STATUSES = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})

_S, _T = TaskStatus, TaskTrigger
#: ``(status, trigger) -> next status``; a pair not listed is illegal.  Terminal
#: statuses have no moves.  A tool error (``isError``) is RETURNED, so ``completed``, in
#: the extension (``failed`` is only for protocol errors, SEP-2663); 2025-11-25 ends
#: such a task ``failed`` (TOOL_ERROR).
TASK_TRANSITIONS: Mapping[tuple[TaskStatus, TaskTrigger], TaskStatus] = {
    (_S.WORKING, _T.ASKED): _S.INPUT_REQUIRED,
    (_S.WORKING, _T.RETURNED): _S.COMPLETED,
    (_S.WORKING, _T.RAISED): _S.FAILED,
    (_S.WORKING, _T.TOOL_ERROR): _S.FAILED,
    (_S.WORKING, _T.CANCELLED): _S.CANCELLED,
    (_S.INPUT_REQUIRED, _T.ANSWERED): _S.WORKING,
    (_S.INPUT_REQUIRED, _T.CANCELLED): _S.CANCELLED,
    # The tool stopped waiting on its own (it was cancelled by other means or crashed).
    (_S.INPUT_REQUIRED, _T.RAISED): _S.FAILED,
    # The work was called off from elsewhere (the tool's own peer, say): the tool says so.
    (_S.WORKING, _T.TOOL_CANCELLED): _S.CANCELLED,
    (_S.INPUT_REQUIRED, _T.TOOL_CANCELLED): _S.CANCELLED,
}


class IllegalTaskTransition(LocalProtocolError):
    """A move the status machine does not allow; nothing changed."""


def iso_time(seconds: float) -> str:
    """``seconds`` since the epoch as an ISO 8601 UTC timestamp (milliseconds)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def declares_tasks(client_capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a request's client capabilities declare the extension."""
    extensions = (client_capabilities or {}).get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def declaring_tasks(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` declaring the extension for this one 2026-07-28 request (a client
    session adds its own capabilities to what a request's ``_meta`` declares)."""
    params = dict(params or {})
    meta = dict(params.get("_meta") or {})
    meta[META_CLIENT_CAPABILITIES] = {"extensions": {TASKS_EXTENSION: {}}}
    params["_meta"] = meta
    return params


def request_declares_tasks(params: Mapping[str, Any] | None) -> bool:
    """Whether a request's own ``_meta`` declares the extension (see :func:`declaring_tasks`)."""
    meta = (params or {}).get("_meta")
    declared = meta.get(META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
    return isinstance(declared, dict) and declares_tasks(declared)


def wants_tasks_declared(error: MCPError) -> bool:
    """Whether an error is the -32021 of :func:`tasks_capability_error` (a task-only tool
    called without the extension: the same call, declaring it, may run)."""
    if error.code != ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY:
        return False
    required = error.data.get("requiredCapabilities") if isinstance(error.data, dict) else None
    return isinstance(required, dict) and declares_tasks(required)


def poll_seconds(
    task: Mapping[str, Any], *, core_form: bool = False, legacy: bool = False
) -> float:
    """Seconds until a task is polled again: the server's ``pollIntervalMs``
    (2025-11-25's own form, ``core_form``: ``pollInterval``), else
    :data:`DEFAULT_POLL_INTERVAL`.  ``legacy`` is a deprecated alias of ``core_form``."""
    interval = task.get("pollInterval" if core_form or legacy else "pollIntervalMs")
    if isinstance(interval, int) and not isinstance(interval, bool) and interval > 0:
        return interval / 1000
    return DEFAULT_POLL_INTERVAL


def tasks_capability_error(why: str) -> MissingRequiredClientCapability:
    """-32021 naming the extension as the capability the request lacked."""
    return MissingRequiredClientCapability(
        message=f"{why}: declare the {TASKS_EXTENSION} extension in the request's capabilities",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


#: The owner of a task made by a 2026-07-28 request that carried no verified token:
#: any such caller holding its (random, unguessable) id may use it, no other.
ANONYMOUS_OWNER = "anonymous"


def owner_key(subject: str | None, session_key: str | None = None) -> str:
    """Whose a task is, a plain string stored with it: the verified token's ``subject``
    where auth is on, else the handshake session that made it (``session_key``,
    unique over the process's life, never reused), else :data:`ANONYMOUS_OWNER`."""
    if subject:
        return f"subject:{subject}"
    if session_key:
        return f"session:{session_key}"
    return ANONYMOUS_OWNER


def tool_error_text(result: Mapping[str, Any]) -> str:
    """The ``statusMessage`` of a task its tool's ``isError`` result failed: its text."""
    content = result.get("content")
    texts = [
        part["text"]
        for part in (content if isinstance(content, list) else [])
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return " ".join(texts)[:500] or "the tool reported an error"


#: The ``data`` of the -32601 a task-only tool answers where no task can be asked for
#: (2025-11-25's own word for it), so a client or checker can tell it from other -32601s.
TASK_ONLY_DATA: Mapping[str, Any] = {"taskSupport": "required"}


def task_only_refusal(error: MCPError) -> bool:
    """Whether ``error`` refused a call because the tool only runs as a task and the call
    did not (could not) ask for one: -32021 naming the extension, or -32601 with
    :data:`TASK_ONLY_DATA` (a handshake session)."""
    if error.code == ErrorCode.METHOD_NOT_FOUND:
        return bool(error.data == TASK_ONLY_DATA)
    return wants_tasks_declared(error)


def runs_as_task(
    support: str | None, client_capabilities: Mapping[str, Any] | None, *, modern: bool
) -> bool:
    """Whether this ``tools/call`` becomes a task: the tool may run as one and the
    request declared the extension (only a 2026-07-28 request can).  A tool that
    must run as a task, called without the extension, is -32021 on a 2026-07-28
    request (which may declare it) and -32601 on a handshake revision before
    2025-11-25 (which has no way to ask for a task; 2025-11-25's own rule is
    :func:`runs_as_core_task`)."""
    if support is None:
        return False
    if modern and declares_tasks(client_capabilities):
        return True
    if support == "required":
        if not modern:
            raise MethodNotFound(
                message="this tool only runs as a task, which this session cannot ask for: "
                f"a 2026-07-28 request declaring the {TASKS_EXTENSION} extension can (and "
                f"a {CORE_TASKS_REVISION} session, with params.task, where the server "
                "offers the tasks capability)",
                data=dict(TASK_ONLY_DATA),
            )
        raise tasks_capability_error("this tool only runs as a task")
    return False


def runs_as_core_task(support: str | None, task_param: Any) -> bool:
    """Whether a 2025-11-25 ``tools/call`` runs as a task: it asked with ``params.task``.
    The tool's ``execution.taskSupport`` must allow it, and a tool that requires it
    must be asked so: -32601 otherwise (the revision's tool-level negotiation)."""
    if task_param is None:
        if support == "required":
            raise MethodNotFound(
                message="this tool only runs as a task: call it with params.task",
                data=dict(TASK_ONLY_DATA),
            )
        return False
    if not isinstance(task_param, dict):
        raise InvalidParams(message="tools/call: 'task' must be an object")
    ttl = task_param.get("ttl")
    if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
        raise InvalidParams(message="tools/call: 'task.ttl' must be a non-negative integer")
    if support is None:
        raise MethodNotFound(message="this tool does not run as a task (taskSupport forbidden)")
    return True


def random_task_id() -> str:
    """A fresh random task id (the default id source: a UUID4, unguessable)."""
    return str(uuid.uuid4())


@attrs.define
class TaskRecord:
    """One task: its owner (:func:`owner_key`), status, pending input requests,
    outcome and timestamps.

    Every change goes through :meth:`apply` (the table); the helpers below name
    the changes a running tool makes.  Input request keys are unique over the
    task's life: a key the tool reuses gets a suffix on the wire.
    """

    task_id: str
    created_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status: TaskStatus = TaskStatus.WORKING
    last_updated_at: float = 0.0
    status_message: str | None = None
    #: wire key -> input request, still unanswered.
    pending: dict[str, dict[str, Any]] = attrs.Factory(dict)
    #: wire key -> answer, gathered for the current ask.
    answers: dict[str, Any] = attrs.Factory(dict)
    used_keys: set[str] = attrs.Factory(set)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: When the task became terminal (its retention starts then).
    ended_at: float | None = None
    #: When the task last parked on ``input_required`` (None while it is not parked).
    parked_at: float | None = None
    #: When a client last asked about the task (its creation, ``tasks/get``, ``tasks/update``).
    seen_at: float = 0.0
    #: Whose task it is (:func:`owner_key`): only requests of that owner see it.
    owner: str = ANONYMOUS_OWNER

    def __attrs_post_init__(self) -> None:
        if self.ttl_ms is not None and (isinstance(self.ttl_ms, bool) or self.ttl_ms < 0):
            raise ValueError("ttl_ms must be a non-negative integer or None")
        self.last_updated_at = max(self.last_updated_at, self.created_at)
        self.seen_at = max(self.seen_at, self.created_at)

    @classmethod
    def new(
        cls,
        now: float,
        *,
        ttl_ms: int | None,
        poll_interval_ms: int | None = None,
        owner: str = ANONYMOUS_OWNER,
        new_id: Callable[[], str] = random_task_id,
    ) -> TaskRecord:
        """A fresh ``working`` task of ``owner``, its id from ``new_id`` (random, so
        unguessable, by default)."""
        return cls(new_id(), now, ttl_ms, poll_interval_ms, last_updated_at=now, owner=owner)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def apply(self, trigger: TaskTrigger, now: float) -> TaskStatus:
        """Move by ``trigger``; :class:`IllegalTaskTransition` if the table has no such move."""
        target = TASK_TRANSITIONS.get((self.status, trigger))
        if target is None:
            raise IllegalTaskTransition(
                f"task {self.task_id}: {trigger.value!r} is not allowed when {self.status.value}"
            )
        self.status = target
        self.last_updated_at = max(now, self.last_updated_at)
        self.parked_at = self.last_updated_at if target is TaskStatus.INPUT_REQUIRED else None
        if target in TERMINAL_STATUSES:
            self.ended_at = self.last_updated_at
            self.pending.clear()
        return target

    # What the running tool does ---------------------------------------------------------

    def ask(self, requests: Mapping[str, dict[str, Any]], now: float) -> dict[str, str]:
        """Park the task on ``requests`` (tool key -> input request); returns wire key ->
        tool key, each wire key new over the task's life."""
        if not requests:
            raise ValueError("ask for at least one input")
        keys: dict[str, str] = {}
        for key in requests:
            wire, n = key, 1
            while wire in self.used_keys or wire in keys:
                n += 1
                wire = f"{key}-{n}"
            keys[wire] = key
        self.apply(TaskTrigger.ASKED, now)
        self.used_keys.update(keys)
        self.pending = {wire: requests[key] for wire, key in keys.items()}
        self.answers = {}
        return keys

    def answer(self, responses: Mapping[str, Any], now: float) -> dict[str, Any]:
        """Take the answers to pending keys (unknown or answered keys are ignored, as
        the extension says); returns what was taken.  The task goes back to
        ``working`` once nothing is pending."""
        if self.status is not TaskStatus.INPUT_REQUIRED:
            return {}
        taken = {k: v for k, v in responses.items() if k in self.pending}
        for key, value in taken.items():
            del self.pending[key]
            self.answers[key] = value
        if taken:
            self.last_updated_at = max(now, self.last_updated_at)
        if not self.pending:
            self.apply(TaskTrigger.ANSWERED, now)
        return taken

    def complete(self, result: dict[str, Any], now: float, *, core: bool = False) -> bool:
        """The tool returned ``result``; False if already over.  A tool error
        (``isError``) completes the task, except in 2025-11-25's own tasks form
        (``core``), where it fails it (its ``statusMessage`` the error's text,
        ``tasks/result`` the result)."""
        if self.terminal:
            return False
        if core and result.get("isError") is True:
            self.apply(TaskTrigger.TOOL_ERROR, now)
            self.status_message = tool_error_text(result)
        else:
            self.apply(TaskTrigger.RETURNED, now)
        self.result = result
        return True

    def fail(self, error: MCPError, now: float) -> bool:
        """The tool raised a protocol error (its message becomes the ``statusMessage``);
        False if already over."""
        if self.terminal:
            return False
        self.apply(TaskTrigger.RAISED, now)
        self.error = error.to_dict()
        self.status_message = error.message
        return True

    def cancel(self, now: float) -> bool:
        """``tasks/cancel``: True if this cancelled it, False if it was over already
        (cancelling is idempotent on the wire)."""
        if self.terminal:
            return False
        self.apply(TaskTrigger.CANCELLED, now)
        return True

    def cancelled_by_tool(self, message: str | None, now: float) -> bool:
        """The tool ends its task as ``cancelled`` (``message``, if any, becomes the
        ``statusMessage``); False if it was over already."""
        if self.terminal:
            return False
        self.apply(TaskTrigger.TOOL_CANCELLED, now)
        if message:
            self.status_message = message
        return True

    def set_message(self, message: str | None, now: float) -> None:
        self.status_message = message
        self.last_updated_at = max(now, self.last_updated_at)

    def seen(self, now: float) -> None:
        """A client asked about the task (``tasks/get``, ``tasks/update``)."""
        self.seen_at = max(now, self.seen_at)

    # Expiry -----------------------------------------------------------------------------

    def overdue(self, limits: TaskLimits) -> tuple[float, MCPError] | None:
        """When the open task is to be given up, and the error it then fails with: its
        ``ttlMs`` from creation is over (it is then forgotten too), or, under
        ``limits``, it was parked on input for ``input_ttl_ms`` or asked about by no
        client for ``unpolled_ttl_ms``; None for a task that is over or has no bound."""
        if self.terminal:
            return None
        due: list[tuple[float, MCPError]] = []
        if self.ttl_ms is not None:
            error = InternalError(
                message=f"the task did not finish within its ttl ({self.ttl_ms} ms from "
                "creation): it was stopped",
                data={"taskId": self.task_id, "ttlMs": self.ttl_ms},
            )
            due.append((self.created_at + self.ttl_ms / 1000, error))
        if self.parked_at is not None and limits.input_ttl_ms is not None:
            error = InternalError(
                message=f"the task waited for input longer than {limits.input_ttl_ms} ms "
                "and expired (its input requests were not answered)",
                data={"taskId": self.task_id, "inputTtlMs": limits.input_ttl_ms},
            )
            due.append((self.parked_at + limits.input_ttl_ms / 1000, error))
        if limits.unpolled_ttl_ms is not None:
            error = InternalError(
                message=f"no client asked about the task for {limits.unpolled_ttl_ms} ms: "
                "it was given up",
                data={"taskId": self.task_id, "unpolledTtlMs": limits.unpolled_ttl_ms},
            )
            due.append((self.seen_at + limits.unpolled_ttl_ms / 1000, error))
        return min(due, key=lambda item: item[0]) if due else None

    def expires_at(self) -> float | None:
        """When the task is forgotten: ``ttlMs`` after its creation (both revisions say
        "from creation"; a task still running then is stopped, see :meth:`overdue`),
        or None."""
        if self.ttl_ms is None:
            return None
        return self.created_at + self.ttl_ms / 1000

    # Storage ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-ready values (a shared store keeps it as JSON text)."""
        data = attrs.asdict(self, recurse=False)
        data["status"] = self.status.value
        data["used_keys"] = sorted(self.used_keys)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskRecord:
        """The record :meth:`to_dict` gave; ValueError naming what is missing or malformed."""
        try:
            fields = {f.name: data[f.name] for f in attrs.fields(cls) if f.name in data}
            fields["status"] = TaskStatus(data["status"])
            fields["used_keys"] = set(data.get("used_keys") or ())
            return cls(**fields)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a stored task record: {exc}") from None

    # Wire shapes ------------------------------------------------------------------------

    def task(self) -> dict[str, Any]:
        """The ``Task`` object (no result, error or input requests)."""
        return self._task_object("ttlMs", "pollIntervalMs")

    def _task_object(self, ttl_key: str, poll_key: str) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status.value,
            "createdAt": iso_time(self.created_at),
            "lastUpdatedAt": iso_time(self.last_updated_at),
            ttl_key: self.ttl_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            task[poll_key] = self.poll_interval_ms
        return task

    def detailed(self) -> dict[str, Any]:
        """The ``DetailedTask`` variant of the current status."""
        detailed = self.task()
        if self.status is TaskStatus.INPUT_REQUIRED:
            detailed["inputRequests"] = dict(self.pending)
        elif self.status is TaskStatus.COMPLETED and self.result is not None:
            detailed["result"] = self.result
        elif self.status is TaskStatus.FAILED and self.error is not None:
            detailed["error"] = self.error
        return detailed

    def create_result(self) -> dict[str, Any]:
        """The ``CreateTaskResult`` answering the ``tools/call``."""
        return {"resultType": "task", **self.task()}

    def get_result(self) -> dict[str, Any]:
        """The ``GetTaskResult`` answering ``tasks/get``."""
        return {"resultType": "complete", **self.detailed()}

    def core_task(self) -> dict[str, Any]:
        """The 2025-11-25 ``Task`` (``ttl`` and ``pollInterval``; no outcome inline)."""
        return self._task_object("ttl", "pollInterval")

    def core_payload(self) -> dict[str, Any]:
        """What ``tasks/result`` answers once the task is over: the tool's result,
        tied to the task; :class:`MCPError` for a failed or cancelled task."""
        if self.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) and self.result is not None:
            meta = {**(self.result.get("_meta") or {}), RELATED_TASK: {"taskId": self.task_id}}
            return {**self.result, "_meta": meta}
        if self.status is TaskStatus.FAILED and self.error is not None:
            raise MCPError.from_dict(self.error)
        raise InvalidParams(message=f"task {self.task_id} is {self.status.value}: it has no result")


#: Defaults of :class:`TaskLimits`.
DEFAULT_MAX_LIVE_TASKS = 1000
DEFAULT_MAX_LIVE_TASKS_PER_OWNER = 100
DEFAULT_INPUT_TTL_MS = 3_600_000


def _bound(value: int | None, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer or None")


@attrs.frozen
class TaskLimits:
    """Bounds on the tasks that have not ended (None: no bound).

    ``max_live`` tasks in the process, ``max_live_per_owner`` for one owner (the
    principal a task belongs to, on every replica when a store is shared; a request
    with none counts only towards ``max_live``); a task parked on input for
    ``input_ttl_ms`` fails, and so does one no client asked about (``tasks/get``,
    ``tasks/update``) for ``unpolled_ttl_ms`` (off by default: a client may follow a
    task by its ``subscriptions/listen`` pushes alone).
    """

    max_live: int | None = DEFAULT_MAX_LIVE_TASKS
    max_live_per_owner: int | None = DEFAULT_MAX_LIVE_TASKS_PER_OWNER
    input_ttl_ms: int | None = DEFAULT_INPUT_TTL_MS
    unpolled_ttl_ms: int | None = None

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(TaskLimits):
            _bound(getattr(self, field.name), field.name)

    def check_capacity(self, live: int, owned: int | None) -> None:
        """:class:`InternalError` (-32603, the limit in ``data``) when one more task
        would pass a cap: ``live`` tasks in the process, ``owned`` of them the
        caller's (None: the caller has no owner key)."""
        caps = (
            ("max_live", self.max_live, live, "this server"),
            ("max_live_per_owner", self.max_live_per_owner, owned, "this client"),
        )
        for name, cap, count, whose in caps:
            if cap is not None and count is not None and count >= cap:
                raise InternalError(
                    message=f"too many tasks: {whose} has {count} that have not ended "
                    f"(the limit, {name}, is {cap}); try again once one ends",
                    data={"limit": name, "max": cap},
                )


class TaskTable:
    """The in-memory task store: records by id, each with its owner, forgotten
    ``ttlMs`` after their creation.

    ``get`` treats an expired task, and one of another owner, as unknown (-32602),
    as the extension says (so ids cannot be probed).
    """

    def __init__(self) -> None:
        self._tasks: dict[str, TaskRecord] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[TaskRecord]:
        return iter(list(self._tasks.values()))

    def add(self, record: TaskRecord) -> None:
        if record.task_id in self._tasks:
            raise LocalProtocolError(f"task {record.task_id!r} exists already")
        self._tasks[record.task_id] = record

    def get(self, task_id: str, now: float, owner: str | None = None) -> TaskRecord:
        """The live task ``task_id`` of ``owner`` (None: of anyone, for the server's
        own use); :class:`InvalidParams` (-32602) if unknown, expired or another's."""
        self.forget_expired(now)
        record = self._tasks.get(task_id)
        if record is None or (owner is not None and record.owner != owner):
            raise InvalidParams(message=f"unknown or expired task: {task_id!r}")
        return record

    def owned(self, owner: str, now: float) -> list[TaskRecord]:
        """The live tasks of ``owner``, oldest first."""
        self.forget_expired(now)
        mine = [r for r in self._tasks.values() if r.owner == owner]
        return sorted(mine, key=lambda r: (r.created_at, r.task_id))

    def forget_expired(self, now: float) -> list[str]:
        """Drop every task whose retention is over; returns their ids."""
        gone = [
            task_id
            for task_id, record in self._tasks.items()
            if (expiry := record.expires_at()) is not None and now >= expiry
        ]
        for task_id in gone:
            del self._tasks[task_id]
        return gone
