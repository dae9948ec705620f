"""The pure half of the A2A-to-MCP bridge (``sansio-mcp a2a-bridge``): its
configuration, the handle table, the task-state table, and the translation of A2A
parts, tasks and messages into MCP tool results.  No I/O and no A2A SDK here: A2A
values come in their ProtoJSON form.  The async half is :mod:`sansio_mcp_apps.a2a.runtime`."""

from ._config import (
    AGENT_CARD_PATH,
    DEFAULT_HANDLE_TTL_MS,
    DEFAULT_PORT,
    DEFAULT_TASK_TTL_MS,
    AgentConfig,
    BridgeConfig,
    ConfigError,
    load_config,
    parse_config,
)
from ._envelope import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_RESULT_PARTS,
    ResultLimits,
    a2a_error_result,
    bridge_failure,
    message_result,
    message_text,
    task_result,
)
from ._handles import (
    DEFAULT_MAX_HANDLES,
    DEFAULT_MAX_HANDLES_PER_OWNER,
    ExpiredHandle,
    HandleError,
    HandleTable,
    TooManyHandles,
    UnknownHandle,
)
from ._parts import META_KEY, PART_KINDS, PartError, part_kind, part_to_content
from ._states import (
    A2A_ERRORS,
    STATES,
    StateMapping,
    UnknownTaskState,
    render_a2a_states,
    state_mapping,
)

__all__ = [
    "A2A_ERRORS",
    "AGENT_CARD_PATH",
    "DEFAULT_HANDLE_TTL_MS",
    "DEFAULT_TASK_TTL_MS",
    "DEFAULT_MAX_HANDLES",
    "DEFAULT_MAX_HANDLES_PER_OWNER",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_RESULT_PARTS",
    "DEFAULT_PORT",
    "META_KEY",
    "PART_KINDS",
    "STATES",
    "AgentConfig",
    "BridgeConfig",
    "ConfigError",
    "ExpiredHandle",
    "HandleError",
    "HandleTable",
    "PartError",
    "ResultLimits",
    "StateMapping",
    "TooManyHandles",
    "UnknownHandle",
    "UnknownTaskState",
    "a2a_error_result",
    "bridge_failure",
    "load_config",
    "message_result",
    "message_text",
    "parse_config",
    "part_kind",
    "part_to_content",
    "render_a2a_states",
    "state_mapping",
    "task_result",
]
