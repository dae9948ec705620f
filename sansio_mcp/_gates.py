"""What each role may send and serve in a revision, and the capabilities that
gate it: the checks a session makes before it serves a request or queues a
message, and the trimming that shows a peer only what its revision defines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._errors import ErrorCode, LocalProtocolError, MCPError, RemoteProtocolError
from ._params import check_params, type_only_fields
from ._state import ROLE_SERVER, Role, SessionState, Trigger, next_state, trigger_for
from ._tasks import (
    TASK_METHOD_PREFIX,
    TASK_METHODS,
    TASK_NOTIFICATION,
    declares_tasks,
    tasks_capability_error,
)
from ._versions import (
    CLIENT_NOTIFICATION_GATES,
    CLIENT_REQUEST_GATES,
    ERA_STATELESS,
    HANDSHAKE_REVISIONS,
    REVISIONS,
    SERVER_NOTIFICATION_GATES,
    SERVER_REQUEST_GATES,
    Era,
    Revision,
)

__all__ = [
    "CLIENT_GATES",
    "SERVER_GATES",
    "RoleGates",
    "declared_elicitation_modes",
    "has_capability",
    "trim_capabilities",
    "trim_info",
]

# Every request a client may send on some handshake revision: what a server
# accepts before the handshake has named one.
_HANDSHAKE_CLIENT_REQUESTS: frozenset[str] = frozenset().union(
    *(REVISIONS[v].client_requests for v in HANDSHAKE_REVISIONS)
)

# Sub-capabilities that only exist from 2025-11-25 (elicitation modes, sampling tools/context).
_LATE_SUBCAPABILITIES = {"elicitation": ("form", "url"), "sampling": ("context", "tools")}


def has_capability(capabilities: dict[str, Any] | None, path: Sequence[str]) -> bool:
    """Whether ``capabilities`` declare ``path`` (a sub-capability set to false does not)."""
    if not isinstance(capabilities, dict):
        return False
    node: Any = capabilities.get(path[0])
    for key in path[1:]:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
        if node is False:
            return False
    return node is not None and node is not False


def declared_elicitation_modes(capabilities: dict[str, Any] | None) -> frozenset[str]:
    """The elicitation modes ``capabilities`` declare: an ``elicitation`` that names
    none means form (as 2025-06-18 declared it)."""
    elicitation = (capabilities or {}).get("elicitation")
    named = frozenset(
        m for m in ("form", "url") if isinstance(elicitation, dict) and m in elicitation
    )
    return named or frozenset({"form"})


def trim_capabilities(
    capabilities: dict[str, Any], known: frozenset[str], revision: Revision | None = None
) -> dict[str, Any]:
    """Keep only what the revision defines, so a peer never sees (and never acts on)
    a capability its revision does not have, such as URL elicitation before 2025-11-25."""
    trimmed = {k: v for k, v in capabilities.items() if k in known}
    if revision is not None and revision.name < "2025-11-25":
        for name, fields in _LATE_SUBCAPABILITIES.items():
            value = trimmed.get(name)
            if isinstance(value, dict):
                trimmed[name] = {k: v for k, v in value.items() if k not in fields}
    return trimmed


def trim_info(info: dict[str, Any], revision: Revision) -> dict[str, Any]:
    fields = revision.implementation_fields
    if info.keys() <= fields:  # the common case: nothing to trim (a copy all the same)
        return dict(info)
    return {k: v for k, v in info.items() if k in fields}


def _check_elicitation(
    params: dict[str, Any], revision: Revision, peer_capabilities: dict[str, Any] | None
) -> None:
    """Raise LocalProtocolError for an elicitation the client cannot take: a mode its
    revision lacks or it did not declare (none declared means form), or a form field
    its revision cannot show."""
    mode = params.get("mode", "form")
    if mode not in revision.elicitation_modes:
        raise LocalProtocolError(
            f"cannot send elicitation/create in {mode!r} mode: revision {revision.name} "
            "does not have it"
        )
    if mode not in declared_elicitation_modes(peer_capabilities):
        raise LocalProtocolError(
            f"cannot send elicitation/create in {mode!r} mode: the client did not declare it"
        )
    schema = params.get("requestedSchema")
    fields = schema.get("properties") if isinstance(schema, dict) else None
    if mode == "form" and not revision.multi_select_elicitation and isinstance(fields, dict):
        for name, field in fields.items():
            if isinstance(field, dict) and field.get("type") == "array":
                raise LocalProtocolError(
                    f"cannot send elicitation/create: field {name!r} is a multi-select, "
                    f"which revision {revision.name} cannot ask for"
                )


#: What a sampling message may carry besides text and images (and audio, where the
#: revision's content has it): the blocks of a tool loop, with sampling tools.
_SAMPLING_TOOL_BLOCKS = frozenset({"tool_use", "tool_result"})


def _check_sampling(
    params: dict[str, Any], revision: Revision, peer_capabilities: dict[str, Any] | None
) -> None:
    """Raise LocalProtocolError for a sampling request the client cannot take: tools
    it did not declare (sampling.tools, which only 2025-11-25 on has; the spec's
    MUST NOT), or message content its revision cannot carry."""
    if "tools" in params or "toolChoice" in params:
        # Before 2025-11-25 no client can declare it.
        if not revision.sampling_tools or not has_capability(
            peer_capabilities, ("sampling", "tools")
        ):
            raise LocalProtocolError(
                "cannot send sampling/createMessage with tools: the client did not "
                f"declare sampling.tools (revision {revision.name})"
            )
    allowed = {"text", "image"} | (revision.content_types & {"audio"})
    if revision.sampling_tools:
        allowed |= _SAMPLING_TOOL_BLOCKS
    messages = params.get("messages")
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and not revision.sampling_tools:
            raise LocalProtocolError(
                "cannot send sampling/createMessage: a message's content is a list, "
                f"which revision {revision.name} cannot carry"
            )
        for block in content if isinstance(content, list) else [content]:
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(kind, str) and kind not in allowed:
                raise LocalProtocolError(
                    f"cannot send sampling/createMessage: a message has {kind!r} content, "
                    f"which revision {revision.name} cannot carry"
                )


#: An entry of :attr:`RoleGates.plain`.
PlainRequest = tuple[
    Revision, SessionState, "str | None", SessionState, tuple[tuple[str, type, bool], ...]
]

#: Requests the gate tests beyond state, capability and param types (or that change
#: the session's era): always through the whole gate.
_NEVER_PLAIN = frozenset(
    {"initialize", "completion/complete", "elicitation/create", "sampling/createMessage"}
)


class RoleGates:
    """The methods one role sends and serves, and the capability each needs."""

    def __init__(self, role: Role) -> None:
        self.role = role
        client = role is Role.CLIENT
        #: Capability each request method of the peer's needs of ours, and what ours
        #: need of the peer's (requests) or of ours (notifications).
        self.incoming_request_gates = SERVER_REQUEST_GATES if client else CLIENT_REQUEST_GATES
        self.outgoing_request_gates = CLIENT_REQUEST_GATES if client else SERVER_REQUEST_GATES
        self.outgoing_notification_gates = (
            CLIENT_NOTIFICATION_GATES if client else SERVER_NOTIFICATION_GATES
        )
        #: (state, method, or None for a 2026-07-28 request) -> the state serving it
        #: leads to (None: forbidden): the state table, looked up once per pair.  Only
        #: methods we serve get here, so it stays as small as the tables.
        self._request_after: dict[tuple[SessionState, str | None], SessionState | None] = {}
        #: method -> (revision, state, capability, after, fields): a handshake request
        #: that its state, one capability of ours (None: none) and the isinstance tests
        #: of its params' ``fields`` (``(field, type, required)``) alone decide, as this
        #: gate let one through in that revision and state (see :meth:`_remember_plain`).
        #: The session lets the next ones through by those tests alone, inline (a call
        #: fewer per request); anything else comes here, and is worded here.
        self.plain: dict[str, PlainRequest] = {}

    def own_requests(self, revision: Revision) -> frozenset[str]:
        return revision.client_requests if self.role is Role.CLIENT else revision.server_requests

    def own_notifications(self, revision: Revision) -> frozenset[str]:
        if self.role is Role.CLIENT:
            return revision.client_notifications
        return revision.server_notifications

    def peer_notifications(self, revision: Revision) -> frozenset[str]:
        if self.role is Role.CLIENT:
            return revision.server_notifications
        return revision.client_notifications

    def peer_requests(self, revision: Revision | None) -> frozenset[str]:
        """What the peer may ask of us (before the handshake: ``revision`` None)."""
        if self.role is Role.CLIENT:
            return frozenset({"ping"}) if revision is None else revision.server_requests
        if revision is None:
            return frozenset({"ping", "initialize"}) | _HANDSHAKE_CLIENT_REQUESTS
        return revision.client_requests

    def check_incoming_notification(
        self, method: str, params: dict[str, Any], revision: Revision | None
    ) -> None:
        """Raise RemoteProtocolError when the peer may not send ``method``."""
        if (
            revision is not None
            and method in self.own_notifications(revision)
            and method not in self.peer_notifications(revision)
        ):
            # One only our side sends (a server's notifications/message sent by a
            # client, say): unknown methods pass, as JSON-RPC allows them.
            raise RemoteProtocolError(f"notification {method!r} is not the peer's to send")
        problem = check_params(method, params)
        if problem:
            raise RemoteProtocolError(problem, code=ErrorCode.INVALID_PARAMS)

    def check_incoming_request(
        self,
        method: str,
        params: dict[str, Any],
        revision: Revision | None,
        capabilities: dict[str, Any],
        state: SessionState,
        *,
        peer_capabilities: dict[str, Any] | None = None,
    ) -> SessionState:
        """The one gate of a request of the peer's, in either era: the state the
        session goes to by serving it, or MCPError when we do not serve it (-32601 for
        a method we lack, -32600 in a state that forbids it, -32602 for bad params).

        ``revision`` is the session's (a handshake request; None before the handshake)
        or the request's own (a 2026-07-28 request, with its ``_meta``'s client
        capabilities as ``peer_capabilities``)."""
        # Only a server serves 2026-07-28 requests; a client keeps its state table.
        stateless = (
            self.role is ROLE_SERVER and revision is not None and revision.era is ERA_STATELESS
        )
        # Whether we serve the method at all (-32601), its capability, its mode.
        if method in ("ping", "initialize") and not stateless:
            if method == "initialize" and self.role is Role.CLIENT:
                raise MCPError(ErrorCode.METHOD_NOT_FOUND, "clients do not serve initialize")
        else:
            extension = False
            if (
                self.role is ROLE_SERVER
                and method.startswith(TASK_METHOD_PREFIX)
                and declares_tasks(capabilities)
            ):
                # A server offering the tasks extension: its tasks/* (a prefix it reserves)
                # exist only for 2026-07-28 requests, whose _meta can declare it; a handshake
                # session cannot (unless the method is also 2025-11-25's own, with the core's
                # tasks capability).
                if stateless:
                    if not declares_tasks(peer_capabilities):
                        raise tasks_capability_error(f"{method} belongs to the tasks extension")
                    extension = method in TASK_METHODS
                elif not (
                    revision is not None
                    and method in revision.client_requests
                    and has_capability(capabilities, ("tasks",))
                ):
                    raise tasks_capability_error(
                        f"{method} belongs to the tasks extension, served on 2026-07-28 "
                        "requests only"
                    )
            # A server's handshake session: peer_requests(revision), inline (every request).
            served = (
                revision.client_requests
                if revision is not None and self.role is ROLE_SERVER
                else self.peer_requests(revision)
            )
            if not extension and method not in served:
                raise MCPError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method!r}")
            # The extension's tasks/* are not the 2025-11-25 ones its capability gates.
            gate = None if extension else self.incoming_request_gates.get(method)
            if gate and (
                method != "completion/complete" or (revision and revision.completion_gated)
            ):
                if len(gate) == 1 and type(capabilities) is dict:
                    node = capabilities.get(gate[0])  # has_capability of one key, inline
                    allowed = node is not None and node is not False
                else:
                    allowed = has_capability(capabilities, gate)
                if not allowed:
                    raise MCPError(
                        ErrorCode.METHOD_NOT_FOUND,
                        f"method not found: {method!r} "
                        f"(capability {'.'.join(gate)} not advertised)",
                    )
            if method == "elicitation/create" and revision is not None:
                mode = params.get("mode", "form")
                if mode not in revision.elicitation_modes:
                    raise MCPError(
                        ErrorCode.INVALID_PARAMS,
                        f"elicitation mode {mode!r} does not exist in {revision.name}",
                    )
                if mode not in declared_elicitation_modes(capabilities):
                    raise MCPError(
                        ErrorCode.INVALID_PARAMS, f"elicitation mode {mode!r} was not declared"
                    )
            if method == "sampling/createMessage" and ("tools" in params or "toolChoice" in params):
                # The server must not offer tools unasked: a client that did not declare
                # sampling.tools says so rather than let its model see them.
                if not (revision and revision.sampling_tools) or not has_capability(
                    capabilities, ("sampling", "tools")
                ):
                    raise MCPError(
                        ErrorCode.INVALID_PARAMS,
                        "sampling with tools, which this client did not declare (sampling.tools)",
                    )
        key = (state, None if stateless else method)
        try:
            after = self._request_after[key]  # one lookup (None is a value here)
        except KeyError:
            trigger = (
                Trigger.RECV_STATELESS_REQUEST
                if stateless
                else trigger_for(method, is_request=True, sending=False)
            )
            after = self._request_after[key] = next_state(self.role, state, trigger)
        if after is None:
            raise MCPError(
                ErrorCode.INVALID_REQUEST,
                f"{method!r} is not allowed while the session is {state.name.lower()}",
            )
        problem = check_params(method, params)
        if problem:
            raise MCPError(ErrorCode.INVALID_PARAMS, problem)
        if not stateless and revision is not None and method not in _NEVER_PLAIN:
            self._remember_plain(method, revision, state, after)
        return after

    def _remember_plain(
        self, method: str, revision: Revision, state: SessionState, after: SessionState
    ) -> None:
        """Keep what :attr:`plain` needs of a handshake request the gate let through,
        when nothing but those tests decides it: a method outside ``_NEVER_PLAIN``
        and the tasks prefix, gated by one capability or none, its params checked by
        type alone."""
        if method.startswith(TASK_METHOD_PREFIX):
            return  # the tasks extension's, or the core's: capability-dependent
        gate = self.incoming_request_gates.get(method)
        fields = type_only_fields(method)
        if fields is None or (gate is not None and len(gate) != 1):
            return
        self.plain[method] = (revision, state, gate[0] if gate else None, after, fields)

    def check_outgoing_request(
        self,
        method: str,
        params: dict[str, Any],
        revision: Revision | None,
        peer_capabilities: dict[str, Any] | None,
        *,
        experimental: bool,
    ) -> None:
        """Raise LocalProtocolError when we may not send ``method`` now."""
        if method == "ping":
            return
        if revision is None:
            raise LocalProtocolError(
                f"cannot send {method!r} before the session is initialized (only ping is allowed)"
            )
        # The tasks extension's requests, to a stateless server that offers it.
        extension = (
            method in TASK_METHODS
            and revision.era is Era.STATELESS
            and declares_tasks(peer_capabilities)
        )
        if not extension and method not in self.own_requests(revision):
            if experimental:
                return
            raise LocalProtocolError(
                f"{method!r} is not a {self.role.value} request in revision {revision.name}"
            )
        gate = None if extension else self.outgoing_request_gates.get(method)
        if gate and (method != "completion/complete" or revision.completion_gated):
            if not has_capability(peer_capabilities, gate):
                raise LocalProtocolError(
                    f"cannot send {method!r}: the peer did not advertise capability "
                    f"{'.'.join(gate)}"
                )
        if method == "elicitation/create":
            _check_elicitation(params, revision, peer_capabilities)
        elif method == "sampling/createMessage":
            _check_sampling(params, revision, peer_capabilities)
        problem = check_params(method, params)
        if problem:
            raise LocalProtocolError(problem)

    def check_outgoing_notification(
        self,
        method: str,
        params: dict[str, Any],
        revision: Revision | None,
        capabilities: dict[str, Any],
    ) -> None:
        """Raise LocalProtocolError when we may not send ``method`` (checked
        against our own advertisement)."""
        # The tasks extension's push, from a stateless server that offers the extension.
        extension = (
            method == TASK_NOTIFICATION
            and self.role is Role.SERVER
            and revision is not None
            and revision.era is Era.STATELESS
            and declares_tasks(capabilities)
        )
        if (
            revision is not None
            and not extension
            and method not in self.own_notifications(revision)
        ):
            raise LocalProtocolError(
                f"{method!r} is not a {self.role.value} notification in revision {revision.name}"
            )
        gate = self.outgoing_notification_gates.get(method)
        if gate and not has_capability(capabilities, gate):
            raise LocalProtocolError(
                f"cannot send {method!r}: we did not advertise capability {'.'.join(gate)}"
            )
        problem = check_params(method, params)
        if problem:
            raise LocalProtocolError(problem)


CLIENT_GATES = RoleGates(Role.CLIENT)
SERVER_GATES = RoleGates(Role.SERVER)
