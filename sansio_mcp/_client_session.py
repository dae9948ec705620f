"""The client side of MCP: :class:`ClientSession`, in either era."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import attrs

from . import _json
from ._errors import (
    ErrorCode,
    InputRoundsExceeded,
    LocalProtocolError,
    MCPError,
    RemoteProtocolError,
    RequestCancelled,
    UnsupportedProtocolVersion,
)
from ._events import (
    InputRequired,
    NotificationReceived,
    ProtocolViolation,
    RequestFailed,
    ResponseReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
)
from ._gates import CLIENT_GATES, trim_capabilities, trim_info
from ._jsonrpc import JSONRPCNotification, RequestId, is_request_id
from ._params import LOG_LEVELS, check_params
from ._requests import IdMemory, OutgoingRequest
from ._session import Session
from ._state import Role, SessionState, Trigger
from ._stateless import build_request_meta, check_input_required, stateless_versions
from ._tasks import declares_tasks, request_declares_tasks
from ._versions import (
    ALL_REVISIONS,
    META_CLIENT_CAPABILITIES,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    REVISIONS,
    Era,
)

__all__ = ["ClientSession", "DEFAULT_CLIENT_INFO"]

DEFAULT_CLIENT_INFO: dict[str, Any] = {"name": "sansio-mcp", "version": "0.1.0"}

#: Each accepted ``mode`` and the era it names; ``legacy`` and ``modern`` are the
#: deprecated spellings of ``handshake`` and ``stateless``.
_MODES = {
    "handshake": "handshake",
    "stateless": "stateless",
    "auto": "auto",
    "legacy": "handshake",
    "modern": "stateless",
}


class ClientSession(Session):
    """The client side of MCP.

    ``mode`` picks the era: ``"handshake"`` (the initialize handshake),
    ``"stateless"`` (2026-07-28: ``server/discover`` then ``_meta`` on every
    request) or ``"auto"`` (probe with ``server/discover``, fall back to
    ``initialize`` when the server does not speak the stateless revision).
    :meth:`start` begins whichever the mode calls for; :meth:`initialize`
    and :meth:`discover` are the explicit forms.  ``"legacy"`` and
    ``"modern"`` are deprecated spellings of ``"handshake"`` and ``"stateless"``
    (:attr:`mode` holds the new one).
    """

    role = Role.CLIENT
    _gates = CLIENT_GATES
    #: Whether an ``input_required`` result ends its request as a result (the caller
    #: answers it, as a gateway passing MRTR through does) instead of an
    #: :class:`InputRequired` round answered by this client.
    pass_input_required = False

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        supported_versions: Iterable[str] = ALL_REVISIONS,
        protocol_version: str | None = None,
        mode: str = "handshake",
        max_input_rounds: int = 10,
        log_level: str | None = None,
        max_message_size: int = _json.DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = _json.DEFAULT_MAX_DEPTH,
    ) -> None:
        super().__init__(
            capabilities=capabilities,
            info=client_info or DEFAULT_CLIENT_INFO,
            supported_versions=supported_versions,
            max_message_size=max_message_size,
            max_depth=max_depth,
        )
        if mode not in _MODES:
            raise LocalProtocolError(f"mode must be handshake, stateless or auto, not {mode!r}")
        mode = _MODES[mode]
        if protocol_version is not None and protocol_version not in self.supported_versions:
            raise LocalProtocolError(
                f"protocol version {protocol_version!r} is not among {self.supported_versions}"
            )
        if log_level is not None and log_level not in LOG_LEVELS:
            raise LocalProtocolError(f"unknown log level {log_level!r}")
        handshake = [v for v in self.supported_versions if REVISIONS[v].era is Era.HANDSHAKE]
        stateless = [v for v in self.supported_versions if REVISIONS[v].era is Era.STATELESS]
        if protocol_version is not None:
            mode = "stateless" if REVISIONS[protocol_version].era is Era.STATELESS else "handshake"
        if mode != "stateless" and not handshake:
            raise LocalProtocolError("no handshake revision is supported: use mode='stateless'")
        if mode != "handshake" and not stateless:
            raise LocalProtocolError("no 2026-07-28-or-later revision is supported")
        self.mode = mode
        #: The version we ask for in initialize (our latest handshake revision by default).
        self.requested_version = (
            protocol_version
            if protocol_version and REVISIONS[protocol_version].era is Era.HANDSHAKE
            else (handshake[-1] if handshake else "")
        )
        #: The version we put in ``_meta`` on stateless requests.
        self.stateless_version = (
            protocol_version
            if protocol_version and REVISIONS[protocol_version].era is Era.STATELESS
            else (stateless[-1] if stateless else "")
        )
        self.max_input_rounds = max_input_rounds
        #: Log level asked per request of a stateless server (``logging/setLevel`` if handshake).
        self.log_level = log_level
        self.instructions: str | None = None
        #: The server's DiscoverResult, when the stateless era was reached through discover.
        self.discovery: dict[str, Any] | None = None
        self._start_id: RequestId | None = None
        # Origins of requests already retried at the version the server refused.
        self._same_version_retries = IdMemory()

    @property
    def is_stateless(self) -> bool:
        """Whether this client speaks the stateless revision."""
        return self.state is SessionState.STATELESS

    @property
    def is_modern(self) -> bool:
        """Deprecated name of :attr:`is_stateless`."""
        return self.is_stateless

    @property
    def modern_version(self) -> str:
        """Deprecated name of :attr:`stateless_version`."""
        return self.stateless_version

    # Starting ------------------------------------------------------------------

    def start(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Begin as ``mode`` says; the returned id ends with the handshake's outcome."""
        if self.mode == "handshake":
            return self.initialize(now=now, timeout=timeout)
        return self.discover(now=now, timeout=timeout)

    def initialize(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Queue the initialize request."""
        request_id = self._send_request(
            "initialize", self._initialize_params(), now=now, timeout=timeout, progress=False
        )
        self._start_id = request_id
        return request_id

    def _initialize_params(self) -> dict[str, Any]:
        revision = REVISIONS[self.requested_version]
        return {
            "protocolVersion": self.requested_version,
            "capabilities": trim_capabilities(
                self._capabilities, revision.client_capabilities, revision
            ),
            "clientInfo": trim_info(self.info, revision),
        }

    @property
    def declared_capabilities(self) -> dict[str, Any]:
        """The capabilities this client declares to its server: its own, trimmed to
        what the revision in use defines."""
        if self.is_stateless:
            name = self.stateless_version
        else:
            name = self.revision.name if self.revision is not None else self.requested_version
        revision = REVISIONS[name]
        return trim_capabilities(self._capabilities, revision.client_capabilities, revision)

    def discover(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Queue ``server/discover`` at our stateless version (the stateless era's start)."""
        request_id = self._send_request(
            "server/discover",
            {"_meta": self._stateless_meta(None)},
            now=now,
            timeout=timeout,
            progress=False,
            trigger=Trigger.SEND_DISCOVER,
        )
        self._start_id = request_id
        return request_id

    #: What :meth:`_declared_per_request` gave last: (version, a deep copy of the
    #: capabilities and of the info it read, the capabilities and info it made).
    _declared: tuple[str, Any, Any, dict[str, Any], dict[str, Any]] | None = None

    def _declared_per_request(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The capabilities and client info a stateless request's ``_meta`` declares:
        made again only when the version, capabilities or info changed (compared by
        value, so a change made in place counts), each request given copies."""
        version, capabilities, info = self.stateless_version, self._capabilities, self.info
        known = self._declared
        if known is None or known[0] != version or known[1] != capabilities or known[2] != info:
            revision = REVISIONS[version]
            trimmed = trim_capabilities(capabilities, revision.client_capabilities)
            if "roots" in trimmed:
                trimmed["roots"] = {}  # listChanged is gone in this revision
            made = trim_info(info, revision)
            known = (version, copy.deepcopy(capabilities), copy.deepcopy(info), trimmed, made)
            self._declared = known
        return dict(known[3]), dict(known[4])

    def _stateless_meta(self, existing: Any) -> dict[str, Any]:
        capabilities, client_info = self._declared_per_request()
        # A request may declare more than the session does (the tasks extension for
        # one tools/call): what its own _meta declares joins the session's.
        own = existing.get(META_CLIENT_CAPABILITIES) if isinstance(existing, dict) else None
        if isinstance(own, dict):
            for name, value in own.items():
                known = capabilities.get(name)
                if isinstance(known, dict) and isinstance(value, dict):
                    value = {**known, **value}
                capabilities[name] = value
        return build_request_meta(
            existing,
            version=self.stateless_version,
            capabilities=capabilities,
            client_info=client_info,
            log_level=self.log_level,
        )

    def _decorate_params(
        self, method: str, params: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        if self.state is not SessionState.STATELESS and method != "server/discover":
            return params, None
        params = dict(params or {})
        params["_meta"] = self._stateless_meta(params.get("_meta"))
        return params, self.stateless_version

    def _fall_back_to_handshake(self, pending: OutgoingRequest, now: float | None) -> None:
        """The server does not speak the stateless revision: redo the start as initialize."""
        self._transition(Trigger.HANDSHAKE_FALLBACK, local=True)
        self.mode = "handshake"
        self._send_request(
            "initialize",
            self._initialize_params(),
            now=now,
            timeout=None,
            progress=False,
            trigger=Trigger.HANDSHAKE_FALLBACK,
            origin=pending.origin,
            deadline=pending.deadline,
        )

    def _on_timeout(self, pending: OutgoingRequest, now: float) -> bool:
        if (
            pending.method == "server/discover"
            and pending.origin == self._start_id
            and self.state is SessionState.INITIALIZING
            and self.mode == "auto"
            and self.requested_version
        ):
            # No answer to the probe: a handshake-era server that ignores unknown requests.
            self._requests.end(pending.origin, drop_late_answer=True)
            # The handshake gets the same time the probe had, not an open-ended wait.
            deadline = now + pending.timeout if pending.timeout is not None else None
            self._fall_back_to_handshake(attrs.evolve(pending, deadline=deadline), now)
            return True
        return False

    # Responses ---------------------------------------------------------------------

    def _complete(
        self, pending: OutgoingRequest, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if pending.origin == self._start_id and self.state is SessionState.INITIALIZING:
            if pending.method == "initialize":
                self._on_initialize_response(pending, result, error)
            else:
                self._on_discover_response(pending, result, error)
            return
        if pending.modern:
            if error is not None and error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
                if self._retry_with_mutual_version(pending, error):
                    return
            if result is not None:
                result_type = result.get("resultType", "complete")
                if result_type == "input_required" and not self.pass_input_required:
                    self._on_input_required(pending, result)
                    return
                if result_type == "task" and not self._may_be_task(pending):
                    result_type = "task, which the request did not declare"
                if result_type not in ("complete", "input_required", "task"):
                    result, error = (
                        None,
                        MCPError(
                            ErrorCode.INVALID_REQUEST, f"unrecognised resultType {result_type!r}"
                        ),
                    )
        Session._complete(self, pending, result, error)  # (by name: no super object per answer)

    def _on_initialize_response(
        self, pending: OutgoingRequest, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if error is None:
            assert result is not None
            error = self._accept_initialize_result(result)
        self._requests.forget_progress(pending)
        if error is not None:
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(pending.origin, "initialize", error))
            return
        assert result is not None
        self._transition(Trigger.RECV_INITIALIZE_RESULT, local=False)
        self.send_notification("notifications/initialized")
        self._announce(result)

    def _announce(self, result: dict[str, Any]) -> None:
        assert self.revision and self.peer_capabilities is not None and self.peer_info is not None
        self._events.append(
            SessionInitialized(
                self.revision.name, self.peer_info, self.peer_capabilities, self.instructions
            )
        )
        assert self._start_id is not None
        method = "initialize" if self.revision.era is Era.HANDSHAKE else "server/discover"
        self._events.append(ResponseReceived(self._start_id, method, result))

    def _accept_initialize_result(self, result: dict[str, Any]) -> MCPError | None:
        version = result.get("protocolVersion")
        capabilities = result.get("capabilities")
        server_info = result.get("serverInfo")
        if not isinstance(version, str):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks a protocolVersion")
        handshake = [v for v in self.supported_versions if REVISIONS[v].era is Era.HANDSHAKE]
        if version not in handshake:
            return UnsupportedProtocolVersion(
                message=(
                    f"the server chose protocol version {version!r}, which this client "
                    f"does not support (supported: {', '.join(handshake)})"
                ),
                data={"supported": handshake, "requested": version},
            )
        if not isinstance(capabilities, dict):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks capabilities")
        if not isinstance(server_info, dict):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks serverInfo")
        self.revision = REVISIONS[version]
        self.peer_capabilities = capabilities
        self.peer_info = server_info
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        return None

    def _on_discover_response(
        self, pending: OutgoingRequest, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if error is not None:
            if error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
                # A stateless server: retry at a mutual stateless version, never fall back.
                if self._retry_with_mutual_version(pending, error):
                    return
                supported = (
                    (error.data or {}).get("supported") if isinstance(error.data, dict) else None
                )
                if (
                    self.mode == "auto"
                    and isinstance(supported, list)
                    and any(v in supported for v in self.supported_versions)
                    and self.requested_version
                ):
                    self._fall_back_to_handshake(pending, None)
                    return
            elif self.mode == "auto" and self.requested_version:
                self._fall_back_to_handshake(pending, None)  # a handshake-era server
                return
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(pending.origin, pending.method, error))
            return
        assert result is not None
        problem = self._accept_discover_result(result)
        if problem is not None:
            if self.mode == "auto" and self.requested_version:
                self._fall_back_to_handshake(pending, None)
                return
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(pending.origin, pending.method, problem))
            return
        self._transition(Trigger.RECV_DISCOVER_RESULT, local=False)
        self._announce(result)

    def _accept_discover_result(self, result: dict[str, Any]) -> MCPError | None:
        versions = result.get("supportedVersions")
        capabilities = result.get("capabilities")
        if not isinstance(versions, list) or not isinstance(capabilities, dict):
            return MCPError(
                ErrorCode.INVALID_REQUEST,
                "server/discover result lacks supportedVersions or capabilities",
            )
        mutual = [v for v in stateless_versions(self.supported_versions) if v in versions]
        if not mutual:
            return UnsupportedProtocolVersion(
                message="the server supports no stateless revision this client speaks",
                data={"supported": versions, "requested": self.stateless_version},
            )
        if self.stateless_version not in mutual:
            self.stateless_version = mutual[-1]
        meta = result.get("_meta")
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        self.revision = REVISIONS[self.stateless_version]
        self.peer_capabilities = capabilities
        self.peer_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self.discovery = result
        return None

    def _retry_with_mutual_version(self, pending: OutgoingRequest, error: MCPError) -> bool:
        data = error.data if isinstance(error.data, dict) else {}
        supported = data.get("supported")
        if not isinstance(supported, list):
            return False
        mutual = [v for v in stateless_versions(self.supported_versions) if v in supported]
        if not mutual:
            return False
        # Compare with the version this request used: others may have moved on already.
        if mutual[-1] == (pending.version or self.stateless_version):
            # The server lists the very version it refused (a deployment mid-upgrade,
            # say): retry once at it, then let the error stand.
            if pending.origin in self._same_version_retries:
                return False
            self._same_version_retries.add(pending.origin)
        self.stateless_version = mutual[-1]
        params = pending.params
        if pending.method == "server/discover":
            params = {"_meta": self._stateless_meta(None)}
        self._resend(pending, params, None)
        return True

    def _resend(
        self, pending: OutgoingRequest, params: dict[str, Any] | None, extra: dict[str, Any] | None
    ) -> RequestId:
        trigger = (
            Trigger.HANDSHAKE_FALLBACK
            if self.state is SessionState.INITIALIZING
            else Trigger.SEND_REQUEST
        )
        return self._send_request(
            pending.method,
            params,
            now=None,
            timeout=None,
            progress=False,
            trigger=trigger,
            origin=pending.origin,
            rounds=pending.rounds + (1 if extra is not None else 0),
            deadline=pending.deadline,
            token=pending.progress_token,
            extra=extra,
        )

    def _may_be_task(self, pending: OutgoingRequest) -> bool:
        """A ``CreateTaskResult`` may only answer a ``tools/call`` that declared the tasks
        extension (the caller follows the task: runtime ``ToolTask``)."""
        # Every stateless request carries this session's capabilities in its _meta.
        return pending.method == "tools/call" and (
            declares_tasks(self._capabilities) or request_declares_tasks(pending.params)
        )

    # MRTR ---------------------------------------------------------------------------

    def _on_input_required(self, pending: OutgoingRequest, result: dict[str, Any]) -> None:
        try:
            check_input_required(pending.method, result)
        except ValueError as exc:
            self._requests.fail(
                pending,
                MCPError(ErrorCode.INVALID_REQUEST, f"invalid input_required result: {exc}"),
            )
            return
        # ``rounds`` counts wire requests; the limit counts answered rounds (as the SDKs do).
        if pending.rounds > self.max_input_rounds:
            self._requests.fail(
                pending,
                InputRoundsExceeded(
                    message=f"{pending.method} still needed input after "
                    f"{pending.rounds} rounds (limit {self.max_input_rounds})"
                ),
            )
            return
        state = result.get("requestState")
        pending.params = dict(pending.params or {})
        self._requests.pause(attrs.evolve(pending, params={**pending.params, "__state__": state}))
        self._events.append(
            InputRequired(
                pending.origin,
                pending.method,
                dict(result.get("inputRequests") or {}),
                state,
                pending.rounds,
            )
        )

    def provide_input(self, request_id: RequestId, responses: dict[str, Any]) -> RequestId:
        """Retry an :class:`InputRequired` request with the answers, keyed as asked.

        ``requestState`` is echoed exactly as received; the retry gets a new
        wire id, but events keep using ``request_id``.
        """
        paused = self._requests.resume(request_id)
        if paused is None:
            raise LocalProtocolError(f"request {request_id!r} is not waiting for input")
        params = dict(paused.params or {})
        state = params.pop("__state__", None)
        extra: dict[str, Any] = {"inputResponses": responses}
        if state is not None:
            extra["requestState"] = state
        return self._resend(attrs.evolve(paused, params=params), params, extra)

    def fail_input(self, request_id: RequestId, error: MCPError) -> None:
        """Give up on an :class:`InputRequired` request (no handler could answer)."""
        paused = self._requests.resume(request_id)
        if paused is None:
            raise LocalProtocolError(f"request {request_id!r} is not waiting for input")
        self._requests.fail(paused, error)

    # Notifications --------------------------------------------------------------------

    def _on_notification(self, notification: JSONRPCNotification) -> None:
        params = notification.params or {}
        meta = params.get("_meta")
        subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if notification.method == "notifications/subscriptions/acknowledged":
            # The tag is the listen request's wire id; events report its origin.
            origin = self._listen_of_wire(subscription)
            if origin is not None and isinstance(params.get("notifications"), dict):
                self._events.append(SubscriptionAcknowledged(origin, params["notifications"]))
            else:
                self._events.append(
                    ProtocolViolation(
                        RemoteProtocolError(
                            "acknowledgement for an unknown subscription",
                            request_id=subscription if is_request_id(subscription) else None,
                        )
                    )
                )
            return
        if subscription is not None and self.is_stateless:
            origin = self._listen_of_wire(subscription)
            if origin is None:
                return  # a late notification for a subscription we ended
            problem = check_params(notification.method, params)
            if problem:
                self._events.append(
                    ProtocolViolation(RemoteProtocolError(problem, code=ErrorCode.INVALID_PARAMS))
                )
                return
            self._events.append(NotificationReceived(notification.method, params, origin))
            return
        super()._on_notification(notification)

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        origin = self._listen_of_wire(request_id)
        if origin is not None:
            # The server tore down one of our subscriptions (2026-07-28; otherwise
            # a cancellation names the sender's own request, never ours).
            pending = self._requests.take(params["requestId"])
            assert pending is not None
            reason = params.get("reason")
            self._events.append(
                RequestFailed(
                    origin,
                    pending.method,
                    RequestCancelled(
                        message=f"the server ended the request: {reason or 'no reason given'}"
                    ),
                )
            )
            return
        super()._on_cancelled(params)

    def _listen_of_wire(self, wire_id: Any) -> RequestId | None:
        """The origin of our pending ``subscriptions/listen`` with this wire id, on a
        stateless session: the only request of ours a server tags notifications
        with, acknowledges, or may end."""
        if not self.is_stateless or not is_request_id(wire_id):
            return None  # peer input: may be unhashable, or a bool that would equal 1
        pending = self._requests.on_wire(wire_id)
        if pending is None or pending.method != "subscriptions/listen":
            return None
        return pending.origin

    def send_roots_list_changed(self) -> None:
        self.send_notification("notifications/roots/list_changed")
