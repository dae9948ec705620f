"""A2E (Agent-to-Environment) and its MCP bridge, sans-IO.

* The A2E envelope and every message type of the MCP bridge capability, plus
  the core tool messages the bridge feeds (``_messages``).
* ``MCPServerConfig``, ``MCPServerInfo``, resources, prompts, roots and the
  error codes (``_models``).
* The codec: :func:`decode`, :func:`encode`, :class:`A2EFramer`; WebSocket
  framing: :class:`A2EWebSocket`.
* :class:`BridgeHost`: A2E to one agent, MCP to many servers, no I/O;
  :class:`BridgeConfig` (its config file).
* The agent's side (``A2EClientBase``, ``AgentInbox``) and the bridge runner
  are async: :mod:`sansio_mcp_apps.a2e.runtime`.
"""

from ._actions import Action, ConnectServer, DisconnectServer, FlushServer, SendToAgent
from ._codec import (
    A2EFramer,
    A2EWebSocket,
    DecodeError,
    adopt,
    decode,
    decode_text,
    encode,
    encode_line,
    to_obj,
)
from ._config import BridgeConfig, bridge_command, load_config, parse_config
from ._fields import FieldProblem, copy_json
from ._host import BRIDGE_INFO, BridgeHost
from ._link_states import render_link_table
from ._messages import *  # noqa: F403
from ._messages import __all__ as _messages_all
from ._models import *  # noqa: F403
from ._models import __all__ as _models_all

__all__ = [
    "BRIDGE_INFO",
    "A2EFramer",
    "A2EWebSocket",
    "Action",
    "BridgeConfig",
    "BridgeHost",
    "ConnectServer",
    "DecodeError",
    "DisconnectServer",
    "FieldProblem",
    "FlushServer",
    "SendToAgent",
    "adopt",
    "bridge_command",
    "copy_json",
    "decode",
    "decode_text",
    "encode",
    "encode_line",
    "load_config",
    "parse_config",
    "render_link_table",
    "to_obj",
    *_messages_all,
    *_models_all,
]
