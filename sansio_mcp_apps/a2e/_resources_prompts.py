"""Reading and subscribing to resources, and getting prompts: each routed to the
one server it belongs to (never a first-server guess), and the subscriptions
kept across reconnects (``resources/subscribe``, or one
``subscriptions/listen`` per 2026-07-28 server)."""

from __future__ import annotations

from typing import Any

import attrs

from sansio_mcp import ErrorCode, MCPError, SubscriptionAcknowledged, listen_filter

from ._failures import Failure, Refused
from ._host_state import HostState, ServerLink, ServerRecord
from ._messages import (
    MCPPromptGetRequest,
    MCPPromptGetResponse,
    MCPResourceReadRequest,
    MCPResourceReadResponse,
    MCPResourceSubscribeRequest,
    MCPResourceSubscribeResponse,
)
from ._models import A2EErrorCode, MCPErrorCode
from ._translate import prompt_arguments, prompt_message_from_mcp, resource_content_from_mcp

__all__ = ["ResourcesAndPrompts"]


class ResourcesAndPrompts:
    """Serves ``mcp/resource/read``, ``mcp/resource/subscribe`` and ``mcp/prompt/get``."""

    def __init__(self, state: HostState) -> None:
        self._state = state

    # Resources ---------------------------------------------------------------------------

    def _route_uri(self, uri: str, server_id: str) -> ServerRecord:
        """The one server a URI belongs to: the hint, else the server that listed it,
        else the one whose template matches.  Never a first-server guess."""
        state = self._state
        if not uri:
            raise Refused(
                Failure(A2EErrorCode.SCHEMA_VIOLATION, "uri must not be empty", {"field": "uri"})
            )
        if server_id:
            server = state.servers.get(server_id)
            if server is None:
                raise Refused(state.not_found(server_id))
            candidates = [server]
        else:
            candidates = [s for s in state.servers.values() if uri in s.resources]
            if not candidates:
                candidates = [
                    s
                    for s in state.servers.values()
                    if any(t.match(uri) is not None for t, _ in s.templates)
                ]
        if len(candidates) != 1:
            reason = "several servers offer it" if candidates else "no server lists it"
            raise Refused(
                Failure(
                    MCPErrorCode.MCP_RESOURCE_NOT_FOUND,
                    f"cannot route {uri!r}: {reason}" + (" (give server_id)" if candidates else ""),
                    {"uri": uri, "candidates": [s.server_id for s in candidates]},
                )
            )
        server = candidates[0]
        if not server.allows_resource(uri):
            raise Refused(
                Failure(
                    MCPErrorCode.MCP_RESOURCE_NOT_FOUND,
                    f"{uri!r} is not on server {server.server_id!r}'s resource_allow_list",
                    {"uri": uri, "server_id": server.server_id},
                )
            )
        if not server.ready:
            raise Refused(state.unavailable(server))
        return server

    def on_resource_read(self, request: MCPResourceReadRequest) -> None:
        state = self._state
        server = self._route_uri(request.uri, request.server_id)
        assert server.link is not None

        def ok(result: dict[str, Any]) -> None:
            raw = result.get("contents")
            contents = [
                resource_content_from_mcp(c).to_dict()
                for c in (raw if isinstance(raw, list) else [])
                if isinstance(c, dict)
            ]
            state.send(
                MCPResourceReadResponse(
                    **state.envelope(),
                    req_id=request.id,
                    contents=contents,
                    server_id=server.server_id,
                )
            )

        state.call(
            server.link,
            "resources/read",
            {"uri": request.uri},
            ok,
            state.fail_with(request, server, "resources/read", uri=request.uri),
            for_agent=True,
        )

    def on_subscribe(self, request: MCPResourceSubscribeRequest) -> None:
        state = self._state
        server = self._route_uri(request.uri, request.server_id)
        link = server.link
        assert link is not None
        if not (server.capabilities.get("resources") or {}).get("subscribe"):
            raise Refused(
                Failure(
                    MCPErrorCode.MCP_CAPABILITY_MISSING,
                    f"server {server.server_id!r} does not offer resource subscriptions",
                    {"server_id": server.server_id, "uri": request.uri},
                )
            )

        def answer(failure: Failure | None) -> None:
            if failure is not None:
                state.reply_failure(request, failure)
                return
            state.send(MCPResourceSubscribeResponse(**state.envelope(), req_id=request.id, ok=True))

        if link.session.is_stateless:
            server.subscriptions.add(request.uri)
            link.listen_waiters.append((request.uri, answer))
            self._open_listen(link)
            return

        def ok(result: dict[str, Any]) -> None:
            server.subscriptions.add(request.uri)
            answer(None)

        state.call(
            link,
            "resources/subscribe",
            {"uri": request.uri},
            ok,
            state.fail_with(request, server, "resources/subscribe", uri=request.uri),
            for_agent=True,
        )

    def renew_subscriptions(self, link: ServerLink) -> None:
        """A link became ready: what the agent subscribed to is subscribed again."""
        if link.session.is_stateless:
            self._open_listen(link)
            return
        for uri in sorted(link.server.subscriptions):
            self._state.call(
                link, "resources/subscribe", {"uri": uri}, lambda r: None, lambda e: None
            )

    def _open_listen(self, link: ServerLink) -> None:
        """2026-07-28 servers send list changes and resource updates only on a
        ``subscriptions/listen`` stream: keep one open per server."""
        state = self._state
        server = link.server
        caps = server.capabilities
        wanted = listen_filter(
            tools=bool((caps.get("tools") or {}).get("listChanged")),
            prompts=bool((caps.get("prompts") or {}).get("listChanged")),
            resources=bool((caps.get("resources") or {}).get("listChanged")),
            uris=sorted(server.subscriptions),
        )
        old = link.listen_id
        if old is not None:
            link.listen_id = None
            link.calls.pop(old, None)
            if old in link.session.pending_requests:
                link.session.cancel(old, "the bridge replaces its subscription")
                state.touch(link)
        if not wanted:
            return

        def ended(error: MCPError) -> None:
            if link.listen_id is not None and not link.closed:
                link.listen_id = None
            failure = state.classify(error, "subscriptions/listen", server)
            waiters, link.listen_waiters = link.listen_waiters, []
            for _, waiter in waiters:
                waiter(failure)

        link.listen_id = state.call(
            link,
            "subscriptions/listen",
            {"notifications": wanted},
            lambda result: None,
            ended,
            timeout=None,
        )

    def listen_acknowledged(self, link: ServerLink, event: SubscriptionAcknowledged) -> None:
        """The server says which subscriptions its listen stream honours."""
        if event.request_id != link.listen_id:
            return
        honoured = event.notifications.get("resourceSubscriptions")
        honoured = honoured if isinstance(honoured, list) else []
        waiters, link.listen_waiters = link.listen_waiters, []
        for uri, waiter in waiters:
            waiter(
                None
                if uri in honoured
                else Failure(
                    MCPErrorCode.MCP_CAPABILITY_MISSING,
                    f"the server did not accept a subscription to {uri!r}",
                    {"server_id": link.server.server_id, "uri": uri},
                )
            )

    # Prompts -----------------------------------------------------------------------------

    def on_prompt_get(self, request: MCPPromptGetRequest) -> None:
        state = self._state
        name = request.name
        if not name:
            raise Refused(
                Failure(A2EErrorCode.SCHEMA_VIOLATION, "name must not be empty", {"field": "name"})
            )
        if request.server_id:
            server = state.servers.get(request.server_id)
            if server is None:
                raise Refused(state.not_found(request.server_id))
        else:
            candidates = [s for s in state.servers.values() if name in s.prompts]
            if len(candidates) != 1:
                raise Refused(
                    Failure(
                        MCPErrorCode.MCP_PROMPT_NOT_FOUND,
                        f"no server offers a prompt {name!r}"
                        if not candidates
                        else f"several servers offer a prompt {name!r}: give server_id",
                        {"name": name, "candidates": [s.server_id for s in candidates]},
                    )
                )
            server = candidates[0]
        if not server.ready or server.link is None:
            raise Refused(state.unavailable(server))
        if "prompts" not in server.capabilities:
            raise Refused(
                Failure(
                    MCPErrorCode.MCP_CAPABILITY_MISSING,
                    f"server {server.server_id!r} offers no prompts",
                    {"server_id": server.server_id},
                )
            )
        known = name in server.prompts

        def ok(result: dict[str, Any]) -> None:
            raw = result.get("messages")
            messages = [
                prompt_message_from_mcp(m).to_dict()
                for m in (raw if isinstance(raw, list) else [])
                if isinstance(m, dict)
            ]
            description = result.get("description")
            state.send(
                MCPPromptGetResponse(
                    **state.envelope(),
                    req_id=request.id,
                    description=description if isinstance(description, str) else "",
                    messages=messages,
                    server_id=server.server_id,
                )
            )

        def err(error: MCPError) -> None:
            failure = state.classify(error, "prompts/get", server)
            if not known and error.code == ErrorCode.INVALID_PARAMS:
                failure = attrs.evolve(failure, code=MCPErrorCode.MCP_PROMPT_NOT_FOUND)
            state.reply_failure(request, failure)

        params: dict[str, Any] = {"name": name}
        if request.arguments:
            params["arguments"] = prompt_arguments(request.arguments)
        state.call(server.link, "prompts/get", params, ok, err, for_agent=True)
