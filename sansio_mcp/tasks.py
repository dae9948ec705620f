"""What a client or an intermediary needs to know of MCP tasks (the extension and
the 2025-11-25 form): whether a peer declares them, how a request declares them,
which statuses end a task and how long to wait before polling again."""

from ._tasks import (
    ANONYMOUS_OWNER,
    CORE_TASKS_REVISION,
    LEGACY_TASKS_REVISION,
    RELATED_TASK,
    TASKS_EXTENSION,
    TERMINAL_STATUSES,
    TaskLimits,
    TaskStatus,
    declares_tasks,
    declaring_tasks,
    owner_key,
    poll_seconds,
    task_only_refusal,
    wants_tasks_declared,
)

__all__ = [
    "ANONYMOUS_OWNER",
    "CORE_TASKS_REVISION",
    "LEGACY_TASKS_REVISION",
    "RELATED_TASK",
    "TASKS_EXTENSION",
    "TERMINAL_STATUSES",
    "TaskLimits",
    "TaskStatus",
    "declares_tasks",
    "declaring_tasks",
    "owner_key",
    "poll_seconds",
    "task_only_refusal",
    "wants_tasks_declared",
]
