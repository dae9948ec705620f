"""What the servers offer: keeping each server's tools, resources, templates and
prompts in sync, and listing them to the agent (tools at once; resources and
prompts page by page across servers, behind one opaque cursor)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sansio_mcp import ErrorCode, MCPError, UriTemplate

from ._failures import Failure, Refused
from ._fields import copy_json
from ._host_state import HostState, ServerLink, ServerRecord
from ._messages import (
    MCPPromptListRequest,
    MCPPromptListResponse,
    MCPResourceListRequest,
    MCPResourceListResponse,
    ToolListRequest,
    ToolListResponse,
)
from ._models import A2EErrorCode, MCPErrorCode
from ._translate import (
    decode_cursor,
    encode_cursor,
    prompt_from_mcp,
    resource_from_mcp,
    template_from_mcp,
    tool_definition,
)

__all__ = ["Catalog"]

#: The lists a server's session syncs, by the capability that offers them.
_KINDS = ("tools", "resources", "prompts")

_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}

#: Where a listing stands: (server id, phase, that server's MCP cursor).
_Position = tuple[str, str, str | None]


class Catalog:
    """Syncs the servers' lists and answers the agent's listings.

    ``synced`` is told whenever one of a link's syncs ends (the lifecycle
    makes the link ready once none is left).
    """

    def __init__(self, state: HostState, *, synced: Callable[[ServerLink], None]) -> None:
        self._state = state
        self._synced = synced

    # Sync --------------------------------------------------------------------------------

    def start_sync(self, link: ServerLink) -> None:
        """A session started: read every list its server offers (and forget the others)."""
        server = link.server
        kinds = [k for k in _KINDS if k in server.capabilities]
        for kind in _KINDS:
            if kind not in server.capabilities:
                self._store(server, kind, [], [])
        server.syncing = set(kinds)
        for kind in kinds:
            self._sync(link, kind)

    def list_changed(self, link: ServerLink, method: str) -> None:
        """A notification came: read the list it says changed, if it is one.

        Also while the first sync (or a reconnect's) runs: a list it has already
        read may be stale now (:meth:`_resync` waits for a list still being read).
        """
        kind = _LIST_CHANGED.get(method)
        if kind is not None and not link.closed:
            self._resync(link, kind)

    def _list_all(
        self,
        link: ServerLink,
        method: str,
        key: str,
        done: Callable[[list[dict[str, Any]]], None],
        failed: Callable[[MCPError], None],
    ) -> None:
        """Every item of a paginated list, one page after the other."""
        state = self._state
        items: list[dict[str, Any]] = []
        seen: set[str] = set()

        def page(cursor: str | None) -> None:
            state.call(link, method, {"cursor": cursor} if cursor else None, got, failed)

        def got(result: dict[str, Any]) -> None:
            batch = result.get(key)
            if isinstance(batch, list):
                items.extend(item for item in batch if isinstance(item, dict))
            cursor = result.get("nextCursor")
            if isinstance(cursor, str) and cursor not in seen and len(seen) < state.max_pages:
                seen.add(cursor)
                page(cursor)
            else:
                done(items)

        page(None)

    def _sync(self, link: ServerLink, kind: str) -> None:
        server = link.server

        def finished(kind_done: str) -> None:
            server.syncing.discard(kind_done)
            if kind_done in server.resync and not link.closed:
                server.resync.discard(kind_done)
                server.syncing.add(kind_done)
                self._sync(link, kind_done)
                return
            self._synced(link)

        def failed(error: MCPError) -> None:
            if link.closed:
                return
            # Not fatal: the server stays usable without this list.
            self._store(server, kind, [], [])
            finished(kind)

        if kind == "resources":

            def got_resources(resources: list[dict[str, Any]]) -> None:
                if link.closed:
                    return

                def got_templates(templates: list[dict[str, Any]]) -> None:
                    if link.closed:
                        return
                    self._store(server, kind, resources, templates)
                    finished(kind)

                def no_templates(error: MCPError) -> None:
                    if link.closed:
                        return
                    self._store(server, kind, resources, [])
                    finished(kind)

                self._list_all(
                    link,
                    "resources/templates/list",
                    "resourceTemplates",
                    got_templates,
                    no_templates,
                )

            self._list_all(link, "resources/list", "resources", got_resources, failed)
            return

        def got(items: list[dict[str, Any]]) -> None:
            if link.closed:
                return
            self._store(server, kind, items, [])
            finished(kind)

        self._list_all(link, f"{kind}/list", kind, got, failed)

    def _resync(self, link: ServerLink, kind: str) -> None:
        server = link.server
        if kind not in server.capabilities:
            return
        if kind in server.syncing:
            server.resync.add(kind)
            return
        server.syncing.add(kind)
        self._sync(link, kind)

    def _store(
        self,
        server: ServerRecord,
        kind: str,
        items: list[dict[str, Any]],
        templates: list[dict[str, Any]],
    ) -> None:
        if kind == "tools":
            server.tools = {
                t["name"]: t
                for t in items
                if isinstance(t.get("name"), str) and server.allows_tool(t["name"])
            }
        elif kind == "resources":
            server.resources = {
                r["uri"]: r
                for r in items
                if isinstance(r.get("uri"), str) and server.allows_resource(r["uri"])
            }
            server.templates = []
            for template in templates:
                text = template.get("uriTemplate")
                if not isinstance(text, str):
                    continue
                try:
                    server.templates.append((UriTemplate(text), template))
                except (ValueError, KeyError):
                    continue
        elif kind == "prompts":
            server.prompts = {p["name"]: p for p in items if isinstance(p.get("name"), str)}

    # Tools -------------------------------------------------------------------------------

    def withdraw_tools(self, link: ServerLink) -> None:
        """The server is down and no reconnect is coming (``auto_reconnect`` off): its
        tools leave ``tool/list``, and the agent is told as on a list change (a push of
        ``notifications/tools/list_changed``).  Registering it again brings them back."""
        server = link.server
        if server.tools:
            server.tools = {}
            self._state.push(link, "notifications/tools/list_changed", {})

    def tool_definitions(self) -> list[dict[str, Any]]:
        # From a copy: the agent may change what it is given without changing the host.
        return [
            tool_definition(server.server_id, copy_json(tool))
            for server in self._state.servers.values()
            for tool in server.tools.values()
        ]

    def on_tool_list(self, request: ToolListRequest) -> None:
        query = request.query.lower()
        tools = []
        for definition in self.tool_definitions():
            if request.filter_kind and request.filter_kind != definition["source"]:
                continue
            if any(tag not in definition["tags"] for tag in request.filter_tags):
                continue
            if query and not any(
                query in text.lower()
                for text in (definition["name"], definition["description"], *definition["tags"])
            ):
                continue
            tools.append(definition)
        state = self._state
        state.send(ToolListResponse(**state.envelope(), req_id=request.id, tools=tools))

    # Resources and prompts, paged --------------------------------------------------------

    def on_resource_list(self, request: MCPResourceListRequest) -> None:
        self._paged_list(
            request,
            capability="resources",
            phases=(
                ("resources", "resources/list", "resources"),
                ("templates", "resources/templates/list", "resourceTemplates"),
            ),
        )

    def on_prompt_list(self, request: MCPPromptListRequest) -> None:
        self._paged_list(
            request, capability="prompts", phases=(("prompts", "prompts/list", "prompts"),)
        )

    def _targets(self, server_id: str) -> list[ServerRecord]:
        state = self._state
        server = state.servers.get(server_id)
        if server is None:
            raise Refused(state.not_found(server_id))
        if not server.ready:
            raise Refused(state.unavailable(server))
        return [server]

    def _cursor_state(
        self, request: MCPResourceListRequest | MCPPromptListRequest, phases: tuple[str, ...]
    ) -> tuple[str, str, str, str | None] | None:
        """(scope, server id, phase, MCP cursor) of a list request's cursor."""
        if not request.cursor:
            return None
        state = decode_cursor(request.cursor)
        if (
            state is None
            or len(state) != 4
            or not all(isinstance(v, str) for v in state[:3])
            or not (state[3] is None or isinstance(state[3], str))
            or state[2] not in phases
        ):
            raise Refused(
                Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    "the cursor was not issued by this bridge",
                    {"field": "cursor"},
                )
            )
        scope, server_id, phase, cursor = state
        if request.server_id and request.server_id != scope:
            raise Refused(
                Failure(
                    A2EErrorCode.SCHEMA_VIOLATION,
                    "the cursor belongs to a listing of another server",
                    {"field": "cursor", "server_id": request.server_id},
                )
            )
        return scope, server_id, phase, cursor

    def _paged_list(
        self,
        request: MCPResourceListRequest | MCPPromptListRequest,
        *,
        capability: str,
        phases: tuple[tuple[str, str, str], ...],
    ) -> None:
        """One page of a listing across servers.

        Pages of the servers are gathered in order (for resources: each
        server's resources, then its templates) until one server says it has
        more; the agent's ``next_cursor`` then points there.  The cursor is
        opaque: it names the scope, the server, the phase and that server's
        own cursor.  With no pagination anywhere, one response has everything.
        """
        state = self._state
        phase_names = tuple(p[0] for p in phases)
        resume = self._cursor_state(request, phase_names)
        scope = request.server_id if resume is None else resume[0]
        targets = self._targets(scope) if scope else list(state.servers.values())
        order = [s.server_id for s in targets]
        position: _Position | None
        if resume is None:
            position = (order[0], phase_names[0], None) if order else None
        else:
            _, server_id, phase, cursor = resume
            if server_id not in order:
                raise Refused(
                    Failure(
                        MCPErrorCode.MCP_SERVER_NOT_FOUND,
                        f"server {server_id!r} of this cursor is no longer registered",
                        {"server_id": server_id, "field": "cursor"},
                    )
                )
            position = (server_id, phase, cursor)
        collected: list[dict[str, Any]] = []
        skipped: list[str] = []
        hops = 0

        def after(server_id: str, phase: str) -> _Position | None:
            index = phase_names.index(phase)
            if index + 1 < len(phase_names):
                return server_id, phase_names[index + 1], None
            at = order.index(server_id)
            return (order[at + 1], phase_names[0], None) if at + 1 < len(order) else None

        def respond(nxt: _Position | None) -> None:
            next_cursor = encode_cursor([scope, *nxt]) if nxt is not None else ""
            extra = {"skipped_servers": skipped} if skipped else {}
            page: dict[str, Any] = {
                **state.envelope(),
                "req_id": request.id,
                "next_cursor": next_cursor,
                "extra": extra,
            }
            if isinstance(request, MCPResourceListRequest):
                state.send(MCPResourceListResponse(**page, resources=collected))
            else:
                state.send(MCPPromptListResponse(**page, prompts=collected))

        def step(pos: _Position | None) -> None:
            nonlocal hops
            while pos is not None:
                hops += 1
                if hops > state.max_pages:
                    respond(pos)  # enough for one answer: the agent continues from here
                    return
                server_id, phase, cursor = pos
                server = state.servers.get(server_id)
                if server is None or not server.ready or server.link is None:
                    if server_id not in skipped:
                        skipped.append(server_id)
                    pos = after(server_id, phase)
                    continue
                if capability not in server.capabilities:
                    pos = after(server_id, phase)
                    continue
                fetch(server, server.link, phase, cursor)
                return
            respond(None)

        def fetch(server: ServerRecord, link: ServerLink, phase: str, cursor: str | None) -> None:
            _, method, key = phases[phase_names.index(phase)]

            def ok(result: dict[str, Any]) -> None:
                raw = result.get(key)
                entries = [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
                collected.extend(self._page_items(server, phase, entries))
                more = result.get("nextCursor")
                if isinstance(more, str) and more and more != cursor:
                    respond((server.server_id, phase, more))
                else:
                    step(after(server.server_id, phase))

            def err(error: MCPError) -> None:
                if phase == "templates" and error.code == ErrorCode.METHOD_NOT_FOUND:
                    step(after(server.server_id, phase))  # no templates here
                    return
                state.reply_failure(request, state.classify(error, method, server))

            state.call(
                link, method, {"cursor": cursor} if cursor else None, ok, err, for_agent=True
            )

        step(position)

    def _page_items(
        self, server: ServerRecord, phase: str, entries: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        sid = server.server_id
        out: list[dict[str, Any]] = []
        if phase == "resources":
            for entry in entries:
                uri = entry.get("uri")
                if isinstance(uri, str) and server.allows_resource(uri):
                    server.resources[uri] = entry  # routing learns from every listing
                    out.append(resource_from_mcp(sid, copy_json(entry)).to_dict())
        elif phase == "templates":
            known = {t.template for t, _ in server.templates}
            for entry in entries:
                text = entry.get("uriTemplate")
                if not isinstance(text, str) or not server.allows_resource(text):
                    continue
                if text not in known:
                    try:
                        server.templates.append((UriTemplate(text), entry))
                    except (ValueError, KeyError):
                        pass
                out.append(template_from_mcp(sid, copy_json(entry)).to_dict())
        else:
            for entry in entries:
                if isinstance(entry.get("name"), str):
                    server.prompts[entry["name"]] = entry
                    out.append(prompt_from_mcp(sid, copy_json(entry)).to_dict())
        return out
