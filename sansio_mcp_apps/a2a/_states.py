"""A2A task states and what the bridge makes of them, as a table (data).

``status`` is the envelope's ``status``; ``is_error`` makes the tool result an error;
``phase`` says whether the agent is still at it (``active``), waits for someone
(``interrupted``) or is done (``terminal``); ``note`` is set where MCP has no exact
counterpart and the envelope must say what was lost; ``task_status`` is the tasks
extension's ``TaskStatus`` for the state.
"""

from __future__ import annotations

import attrs

from sansio_mcp.state_tables import generated_block

__all__ = [
    "A2A_ERRORS",
    "STATES",
    "StateMapping",
    "UnknownTaskState",
    "a2a_error_name",
    "render_a2a_states",
    "state_mapping",
]


@attrs.frozen
class StateMapping:
    a2a_state: str
    status: str
    is_error: bool
    phase: str
    task_status: str
    note: str | None = None

    @property
    def active(self) -> bool:
        return self.phase == "active"


def _row(
    state: str, status: str, is_error: bool, phase: str, task_status: str, note: str | None = None
) -> StateMapping:
    return StateMapping(f"TASK_STATE_{state}", status, is_error, phase, task_status, note)


#: Every A2A v1.0 ``TaskState`` (ProtoJSON names), keyed by name.
STATES: dict[str, StateMapping] = {
    row.a2a_state: row
    for row in (
        _row(
            "SUBMITTED",
            "working",
            False,
            "active",
            "working",
            "the agent accepted the task but has not started it; MCP has no such state",
        ),
        _row("WORKING", "working", False, "active", "working"),
        _row(
            "INPUT_REQUIRED",
            "input_required",
            False,
            "interrupted",
            "input_required",
            "the agent asked in free text; the bridge offers it as a form with one string field",
        ),
        _row("COMPLETED", "completed", False, "terminal", "completed"),
        _row("FAILED", "failed", True, "terminal", "completed"),
        _row(
            "REJECTED",
            "failed",
            True,
            "terminal",
            "completed",
            "the agent rejected the task; MCP has no rejected state",
        ),
        _row(
            "AUTH_REQUIRED",
            "failed",
            True,
            "interrupted",
            "completed",
            "the agent needs authorization out of band (MCP forbids collecting credentials "
            "by elicitation); follow the agent's text, then send again with the taskHandle",
        ),
        _row("CANCELED", "cancelled", False, "terminal", "cancelled"),
        _row(
            "UNSPECIFIED",
            "failed",
            True,
            "terminal",
            "completed",
            "the agent reported no lifecycle state; the bridge does not guess one",
        ),
    )
}


class UnknownTaskState(ValueError):
    """An agent sent a task state A2A v1.0 does not define."""


def state_mapping(state: str | None) -> StateMapping:
    """The row of ``state`` (a ProtoJSON name; absent means unspecified)."""
    row = STATES.get(state or "TASK_STATE_UNSPECIFIED")
    if row is None:
        raise UnknownTaskState(f"the agent sent an unknown task state {state!r}")
    return row


#: The typed A2A errors (A2A v1.0 section 3.3.2): code to name.
A2A_ERRORS: dict[int, str] = {
    -32001: "TaskNotFoundError",
    -32002: "TaskNotCancelableError",
    -32003: "PushNotificationNotSupportedError",
    -32004: "UnsupportedOperationError",
    -32005: "ContentTypeNotSupportedError",
    -32006: "InvalidAgentResponseError",
    -32007: "ExtendedAgentCardNotConfiguredError",
    -32008: "ExtensionSupportRequiredError",
    -32009: "VersionNotSupportedError",
}


def a2a_error_name(code: int) -> str:
    return A2A_ERRORS.get(code, "A2AError")


def render_a2a_states() -> str:
    """:data:`STATES` as Markdown (docs/a2a-bridge.md): a row per state."""
    out = [
        "",
        "| A2A `TaskState` | phase | envelope `status` | tool error | tasks extension "
        "| what is lost (the `note`) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in STATES.values():
        name = row.a2a_state.removeprefix("TASK_STATE_")
        error = "yes" if row.is_error else "no"
        extension = row.task_status + (", `isError`" if row.is_error else "")
        out.append(
            f"| {name} | {row.phase} | {row.status} | {error} | {extension} | {row.note or '—'} |"
        )
    return generated_block("a2a-states", out)
