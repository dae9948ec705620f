"""The A2E side of the runtime: the agent's client (:class:`A2EClientBase`,
backend-neutral; the Trio and asyncio ``A2EClient`` supply the event loop), the
in-process hand-off to it (:class:`AgentInbox`), and the bridge runner that
carries out a :class:`~sansio_mcp_apps.a2e.BridgeHost`'s actions."""

from ._client import A2EClientBase, A2ERequestError, AgentInbox
from ._runner import BridgeRunner, direct_bridge

__all__ = ["A2EClientBase", "A2ERequestError", "AgentInbox", "BridgeRunner", "direct_bridge"]
