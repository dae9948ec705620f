"""The server side of MCP: :class:`ServerSession`, serving both eras at once."""

from __future__ import annotations

import functools
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Self

import attrs

from . import _json
from ._errors import (
    ErrorCode,
    LocalProtocolError,
    MCPError,
    UnsupportedProtocolVersion,
)
from ._events import Event, RequestMeta, RequestReceived, SessionInitialized, request_received
from ._gates import SERVER_GATES, trim_capabilities, trim_info
from ._jsonrpc import JSONRPCNotification, RequestId, is_request_id
from ._outbox import Outbox
from ._params import LOG_LEVELS, check_params
from ._requests import NO_ENTRIES, RequestTracker, progress_token_in
from ._session import Session
from ._state import STATE_CLOSED, STATE_IDLE, STATE_READY, Role, SessionState
from ._stateless import (
    CacheHints,
    check_input_required,
    honoured_filter,
    missing_capability_error,
    missing_input_capabilities,
    request_meta_of,
    shape_result,
    stateless_versions,
)
from ._tasks import (
    TASK_NOTIFICATION,
    declares_tasks,
    owner_key,
    tasks_capability_error,
)
from ._versions import (
    ALL_REVISIONS,
    LATEST_STATELESS_REVISION,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    REVISIONS,
    Era,
    Revision,
)

__all__ = ["ServerSession", "DEFAULT_SERVER_INFO"]

DEFAULT_SERVER_INFO: dict[str, Any] = {"name": "sansio-mcp-server", "version": "0.1.0"}
#: Methods no handshake revision has: outside a handshake session they are
#: taken as 2026-07-28 requests even when their ``_meta`` is missing.
_STATELESS_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})
_new = object.__new__
_NO_META: Any = object()


@attrs.define
class _Listen:
    """One open ``subscriptions/listen`` on the server side."""

    notifications: dict[str, Any]


@functools.lru_cache(maxsize=32)
def _eras(versions: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(handshake versions, stateless versions) of ``versions``, cached per tuple."""
    handshake = tuple(v for v in versions if REVISIONS[v].era is Era.HANDSHAKE)
    return handshake, tuple(stateless_versions(versions))


class ServerSession(Session):
    """The server side of MCP, serving both eras at once.

    An ``initialize`` starts a handshake session; a request whose ``_meta``
    names a 2026-07-28 protocol version is served statelessly beside it.
    The core answers ``initialize``, ``ping``, ``logging/setLevel``,
    ``server/discover`` and ``subscriptions/listen`` itself and refuses
    (-32601) methods of capabilities it did not advertise.
    """

    role = Role.SERVER
    _gates = SERVER_GATES
    #: Whether a stateless request may go from :meth:`_receive_stateless` straight to
    #: :meth:`_on_stateless_request`: not when a subclass refines one of the methods
    #: it skips (:meth:`receive_message`, :meth:`_on_request`, :meth:`_served_elsewhere`).
    _stateless_inline = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._stateless_inline = (
            cls._requests_inline
            and cls._on_request is Session._on_request
            and cls._served_elsewhere is ServerSession._served_elsewhere
        )

    #: The level the client chose with logging/setLevel (None: send all).
    log_level: str | None = None
    #: The verified access token (``sansio_mcp.auth.AccessToken``) of the HTTP
    #: request that brought the session its latest input; None when unprotected.
    auth: Any = None
    #: ``(task_id, owner) -> bool``: whether an owner may see a task (set by the
    #: server that runs tasks); ``subscriptions/listen`` acknowledges only those.
    task_visible: Callable[[str, str], bool] | None = None
    _key: str | None = None

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        server_info: dict[str, Any] | None = None,
        instructions: str | None = None,
        supported_versions: Iterable[str] = ALL_REVISIONS,
        cache_hints: CacheHints | None = None,
        max_message_size: int = _json.DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = _json.DEFAULT_MAX_DEPTH,
    ) -> None:
        super().__init__(
            capabilities=capabilities,
            info=server_info or DEFAULT_SERVER_INFO,
            supported_versions=supported_versions,
            max_message_size=max_message_size,
            max_depth=max_depth,
        )
        self.instructions = instructions
        self.cache_hints = cache_hints or CacheHints()
        self._handshake_versions, self._stateless_versions = _eras(self.supported_versions)

    def _start(self) -> None:
        # Session._start's three, inline (a call fewer per session built).
        self._events = deque()
        self._outbox = Outbox()
        self._requests = RequestTracker(self._events)
        #: Resource URIs the client subscribed to.
        self.subscriptions: set[str] = set()
        self._listens: dict[RequestId, _Listen] = {}
        self._open_elsewhere = self._listens

    def _fresh_copy(self) -> Self:
        """A new session with this one's settings (versions, capabilities, info, limits,
        instructions, cache hints, log level, the task filter) and bookkeeping of its
        own, without the checks and work of building one: a server makes a session per
        stateless request.  This one must be fresh (nothing heard, nothing asked); the
        copy's capabilities are objects of its own (shared until either side's are
        asked for, see ``capabilities``: a copy made for one request only reads them)."""
        # One function (what _start does, inline): a copy is made per stateless request.
        # The tracker's map read directly: a frozenset per copy spared (wire_ids()).
        if self.state is not STATE_IDLE or self.heard_from_peer or self._requests._outgoing:
            raise LocalProtocolError("only a fresh session is copied")
        new = _new(type(self))
        new.supported_versions = self.supported_versions
        new._capabilities = self._capabilities
        new._capabilities_shared = self._capabilities_shared = True
        new.info = dict(self.info)
        new.max_message_size = self.max_message_size
        new.max_depth = self.max_depth
        new.max_bad_lines = self.max_bad_lines
        new.instructions = self.instructions
        new.cache_hints = self.cache_hints
        new.task_visible = self.task_visible
        new.log_level = self.log_level
        new._handshake_versions = self._handshake_versions
        new._stateless_versions = self._stateless_versions
        events: deque[Event] = deque()
        new._events = events
        new._outbox = Outbox()
        new._requests = RequestTracker(events)
        new.subscriptions = set()
        # The shared read-only NO_ENTRIES until a subscriptions/listen opens (_open_listen).
        new._listens = new._open_elsewhere = NO_ENTRIES
        if self._tracer is not None:
            new.tracer = self._tracer
        return new

    @property
    def key(self) -> str:
        """Unique over the process's life (``id()`` is reused): what owns the tasks
        this handshake session makes when no principal is authenticated.  Made when
        first asked for: a stateless request's session seldom needs it."""
        if self._key is None:
            self._key = uuid.uuid4().hex
        return self._key

    # The stateless era ----------------------------------------------------------------

    def _receive_stateless(self, message: dict[str, Any], meta: RequestMeta) -> bool:
        """:meth:`receive_message` of a stateless request whose ``params`` and their
        ``_meta`` are dicts (the caller, the router, has checked that) and whose
        ``_meta`` it read already: ``meta`` is ``request_meta_of`` of it (what this
        session would read), taken as it is.  A well-formed request that
        :meth:`receive_message` would hand to :meth:`_on_stateless_request` goes
        there directly (the calls between spared: a session is made per such request);
        anything else takes the general way.  Whether the session has output queued now
        (a refusal, an answer of its own; not a request left to the application)."""
        request_id = message.get("id")
        method = message.get("method")
        requests = self._requests
        if (
            # receive_message's fast path: a request, nothing to trace, an open session.
            message.get("jsonrpc") == "2.0"
            and type(method) is str
            and (type(request_id) is str or type(request_id) is int)
            and "result" not in message
            and "error" not in message
            and self._tracer is None
            and self._stateless_inline
            and self.state is not STATE_CLOSED
            # _on_request's: no id in use, nothing cancelled; _served_elsewhere's.
            and not requests.incoming
            and not self._open_elsewhere
            and requests.cancelled_incoming is None
            and self._stateless_versions
        ):
            if TYPE_CHECKING:  # checked by its type above, not by isinstance
                assert isinstance(request_id, (str, int))
            self.heard_from_peer = True
            params = message["params"]
            self._on_stateless_request(request_id, method, params, params["_meta"], meta)
        else:
            self.receive_message(message)
        # The outbox's own list read (not taken, which makes a new one): most requests
        # go to the application and queue nothing yet.
        return bool(self._outbox._queue)

    # Asked only of a request with a _meta, or one before the handshake named a revision
    # (a handshake session's revision needs a handshake version, which leaves both
    # branches below to such requests): a request of a handshake session skips the call.
    _sorts_eras = True

    def _served_elsewhere(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        # Inside a handshake session a request without modern _meta is of that
        # session's revision, which has no server/discover or subscriptions/listen
        # (-32601); outside one they are 2026-07-28 requests missing _meta (-32602).
        if self._stateless_versions:
            # is_stateless_request, its _meta read once for what follows (the None test
            # first: most requests have no _meta, and it spares them an isinstance call).
            meta = params["_meta"] if "_meta" in params else None
            if (meta is not None and isinstance(meta, dict) and META_PROTOCOL_VERSION in meta) or (
                self.revision is None and method in _STATELESS_ONLY_METHODS
            ):
                self._on_stateless_request(request_id, method, params, meta)
                return True
        if not self._handshake_versions:
            self._refuse_handshake(request_id, method, params)
            return True
        return False

    def _refuse_handshake(self, request_id: RequestId, method: str, params: dict[str, Any]) -> None:
        """A modern-only server: name the versions it supports (spec: basic/versioning)."""
        if method == "initialize":
            requested = params.get("protocolVersion")
            error: MCPError = UnsupportedProtocolVersion(
                message="this server only speaks the stateless revision(s) "
                + ", ".join(self._stateless_versions),
                data={
                    "supported": list(self._stateless_versions),
                    "requested": requested if isinstance(requested, str) else "",
                },
            )
        else:
            error = MCPError(
                ErrorCode.INVALID_PARAMS,
                f"params._meta[{META_PROTOCOL_VERSION!r}] is required (2026-07-28)",
            )
        self._refuse(request_id, error)

    def _refuse(self, request_id: RequestId, error: MCPError) -> None:
        self._outbox.answer(request_id, self._refusal(request_id, error))

    def _on_stateless_request(
        self,
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        given: Any,
        read: RequestMeta | None = None,
    ) -> None:
        """Serve a request as a 2026-07-28 request; ``given`` is its ``params._meta``,
        ``read`` what the router read of it (:meth:`_receive_stateless`), if it did."""
        try:
            meta = read if read is not None else request_meta_of(given)
            if meta.protocol_version not in self._stateless_versions:
                raise UnsupportedProtocolVersion(
                    message=f"unsupported protocol version {meta.protocol_version!r}",
                    data={
                        # Only versions a request's _meta may name (not the handshake ones).
                        "supported": list(self._stateless_versions),
                        "requested": meta.protocol_version,
                    },
                )
            revision = REVISIONS[meta.protocol_version]
            # The same gate as a handshake session's requests pass; the state it
            # names is the one the session is in (a stateless request changes none).
            self._gates.check_incoming_request(
                method,
                params,
                revision,
                self._capabilities,
                self.state,
                peer_capabilities=meta.client_capabilities,
            )
            if method == "subscriptions/listen":
                self._check_listen(params, meta.client_capabilities)
        except MCPError as error:
            self._refuse(request_id, error)
            return
        if method == "server/discover":
            self._outbox.answer(
                request_id,
                {"jsonrpc": "2.0", "id": request_id, "result": self._discover_result(revision)},
            )
            return
        if method == "subscriptions/listen":
            self._open_listen(request_id, params["notifications"])
            return
        token = progress_token_in(given)  # a dict: request_meta_of took it
        event = request_received(request_id, method, params, token, False, None, meta)
        self._requests.incoming[request_id] = event
        self._events.append(event)

    @property
    def offers_tasks(self) -> bool:
        """Whether this server advertises the tasks extension."""
        return declares_tasks(self._capabilities)

    def _check_listen(self, params: dict[str, Any], client_capabilities: dict[str, Any]) -> None:
        notifications = params.get("notifications")
        if not isinstance(notifications, dict):
            raise MCPError(
                ErrorCode.INVALID_PARAMS, "subscriptions/listen: 'notifications' must be an object"
            )
        task_ids = notifications.get("taskIds")
        if task_ids is None:
            return
        if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
            raise MCPError(
                ErrorCode.INVALID_PARAMS,
                "subscriptions/listen: 'notifications.taskIds' must be an array of strings",
            )
        if not declares_tasks(client_capabilities):
            raise tasks_capability_error("taskIds belong to the tasks extension")

    def _stateless_capabilities(self, revision: Revision) -> dict[str, Any]:
        return trim_capabilities(self._effective_capabilities(), revision.server_capabilities)

    def _discover_result(self, revision: Revision) -> dict[str, Any]:
        result: dict[str, Any] = {
            # The versions later requests may name in _meta (the handshake ones cannot be).
            "supportedVersions": list(self._stateless_versions),
            "capabilities": self._stateless_capabilities(revision),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return shape_result(
            "server/discover",
            result,
            server_info=trim_info(self.info, revision),
            cache=self.cache_hints,
        )

    def _result_message(
        self, request_id: RequestId, incoming: RequestReceived, result: dict[str, Any]
    ) -> dict[str, Any]:
        if incoming.meta is None:
            return super()._result_message(request_id, incoming, result)
        given = result.get("_meta", _NO_META)
        if given is not _NO_META and not isinstance(given, dict):
            raise LocalProtocolError("a result's _meta must be an object")
        if result.get("resultType") == "input_required":
            try:
                check_input_required(incoming.method, result)
                missing = missing_input_capabilities(
                    result.get("inputRequests") or {}, incoming.meta.client_capabilities
                )
            except ValueError as exc:
                raise LocalProtocolError(str(exc)) from None
            if missing:
                # Never send an interim result the client cannot act on.
                return self._error_obj(request_id, missing_capability_error(missing))
        revision = REVISIONS[incoming.meta.protocol_version]
        shaped = shape_result(
            incoming.method,
            result,
            server_info=trim_info(self.info, revision),
            cache=self.cache_hints,
        )
        return {"jsonrpc": "2.0", "id": request_id, "result": shaped}

    # Subscriptions ----------------------------------------------------------------------

    def _open_listen(self, request_id: RequestId, requested: dict[str, Any]) -> None:
        honoured = honoured_filter(requested, self._effective_capabilities())
        if "taskIds" in honoured and self.task_visible is not None:
            # Another principal's task is as unknown as no task: ids cannot be probed.
            subject = getattr(self.auth, "subject", None)
            owner = owner_key(subject if isinstance(subject, str) else None)
            visible = self.task_visible
            honoured["taskIds"] = [t for t in honoured["taskIds"] if visible(t, owner)]
        if self._listens is NO_ENTRIES:  # (a session copy's, until its first)
            self._listens = self._open_elsewhere = {}
        self._listens[request_id] = _Listen(honoured)
        self.send_notification(
            "notifications/subscriptions/acknowledged",
            {"_meta": {META_SUBSCRIPTION_ID: request_id}, "notifications": honoured},
            stateless=True,
            related_request=request_id,
        )

    @property
    def reached_by_broadcasts(self) -> bool:
        """Whether what is told every session (a list changed, a resource updated, a
        task's status) can reach this one now: a handshake session once ready, or one
        with an open subscription.  A session serving one stateless request that
        opens none never is: nothing of the server's hub would be sent on it."""
        return bool(self._listens) or self.state is STATE_READY

    @property
    def open_subscriptions(self) -> frozenset[RequestId]:
        """Ids of the ``subscriptions/listen`` requests still open."""
        return frozenset(self._listens)

    def end_subscription(self, request_id: RequestId) -> None:
        """Tear down a subscription gracefully (the final, empty result)."""
        if self._listens.pop(request_id, None) is None:
            raise LocalProtocolError(f"no open subscription {request_id!r}")
        meta = {
            META_SUBSCRIPTION_ID: request_id,
            META_SERVER_INFO: trim_info(self.info, REVISIONS[LATEST_STATELESS_REVISION]),
        }
        self._outbox.append(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"resultType": "complete", "_meta": meta},
            },
            request_id,
        )

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if is_request_id(request_id) and request_id in self._listens:
            del self._listens[request_id]  # the client closed its subscription
            return
        super()._on_cancelled(params)

    def _notify_listeners(self, method: str, params: dict[str, Any], wants: Any) -> bool:
        sent = False
        for listen_id, listen in self._listens.items():
            if wants(listen.notifications):
                tagged = {**params, "_meta": {META_SUBSCRIPTION_ID: listen_id}}
                self.send_notification(method, tagged, stateless=True, related_request=listen_id)
                sent = True
        return sent

    def _on_notification(self, notification: JSONRPCNotification) -> None:
        # A stateless client may cancel without any handshake session.
        if notification.method == "notifications/cancelled" and self._stateless_versions:
            params = notification.params or {}
            request_id = params.get("requestId")
            if not is_request_id(request_id):
                super()._on_notification(notification)  # reported as malformed there
                return
            incoming = self._requests.incoming.get(request_id)
            if (
                request_id in self._listens
                or (incoming is not None and incoming.meta is not None)
                # No handshake session: a cancel that lost the race with our answer.
                or (incoming is None and self.state is STATE_IDLE)
            ):
                problem = check_params(notification.method, params)
                if problem is None:
                    self._on_cancelled(params)
                return
        super()._on_notification(notification)

    # The handshake era ----------------------------------------------------------------

    def adopt_handshake(
        self,
        protocol_version: str,
        client_capabilities: dict[str, Any],
        client_info: dict[str, Any],
    ) -> None:
        """Start this fresh session READY at ``protocol_version``, as if the client's
        ``initialize`` (with ``client_capabilities`` and ``client_info``) and
        ``notifications/initialized`` had been received and answered: for a handshake
        that happened elsewhere (another replica, an earlier request through a
        gateway).  Nothing is queued to send; :class:`SessionInitialized` is queued, as
        the handshake queues it.  LocalProtocolError if the session is not fresh (IDLE,
        nothing negotiated), the version is unknown, a stateless revision (it has no
        handshake) or one this session does not support, or the client's capabilities
        or info are not objects."""
        if self.state is not SessionState.IDLE or self.revision is not None:
            raise LocalProtocolError(
                f"adopt_handshake needs a fresh session; this one is {self.state.name}"
            )
        revision = REVISIONS.get(protocol_version)
        if revision is None:
            raise LocalProtocolError(
                f"unknown protocol version {protocol_version!r}; known: {list(REVISIONS)}"
            )
        if revision.era is not Era.HANDSHAKE:
            raise LocalProtocolError(
                f"{protocol_version!r} is a stateless revision: it has no handshake to adopt "
                "(each of its requests carries its own _meta)"
            )
        if protocol_version not in self._handshake_versions:
            raise LocalProtocolError(
                f"this session does not support {protocol_version!r}; its handshake "
                f"versions: {list(self._handshake_versions)}"
            )
        # (The version is known to be a string; objects pass initialize's checks, so
        # the common case asks no more of them than their type.)
        if type(client_capabilities) is not dict or type(client_info) is not dict:
            problem = check_params(
                "initialize",
                {
                    "protocolVersion": protocol_version,
                    "capabilities": client_capabilities,
                    "clientInfo": client_info,
                },
            )
            if problem is not None:
                raise LocalProtocolError(problem)
        self.revision = revision
        self.peer_capabilities = client_capabilities
        self.peer_info = client_info
        self.heard_from_peer = True
        self.state = SessionState.READY
        self._on_initialized()

    def _on_initialize(self, request_id: RequestId, params: dict[str, Any]) -> None:
        requested = params["protocolVersion"]
        # Echo the client's version when we support it, else offer our latest.
        version = (
            requested if requested in self._handshake_versions else self._handshake_versions[-1]
        )
        self.revision = REVISIONS[version]
        self.peer_capabilities = params["capabilities"]
        self.peer_info = params["clientInfo"]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": trim_capabilities(
                self._effective_capabilities(), self.revision.server_capabilities
            ),
            "serverInfo": trim_info(self.info, self.revision),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        self._outbox.answer(request_id, {"jsonrpc": "2.0", "id": request_id, "result": result})

    def _effective_capabilities(self) -> dict[str, Any]:
        # What goes into a message: the session's own objects, never a template's.
        return self.capabilities

    def _on_initialized(self) -> None:
        assert self.revision and self.peer_info is not None and self.peer_capabilities is not None
        self._events.append(
            SessionInitialized(
                self.revision.name, self.peer_info, self.peer_capabilities, self.instructions
            )
        )

    _local_methods = Session._local_methods | {"logging/setLevel"}
    _bookkept_methods = frozenset({"resources/subscribe", "resources/unsubscribe"})

    def _handle_locally(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        if method != "logging/setLevel":
            return False
        self.log_level = params["level"]
        self._outbox.answer(request_id, {"jsonrpc": "2.0", "id": request_id, "result": {}})
        return True

    def _after_response(self, incoming: RequestReceived, result: dict[str, Any]) -> None:
        uri = incoming.params.get("uri")
        if incoming.method == "resources/subscribe" and isinstance(uri, str):
            self.subscriptions.add(uri)
        elif incoming.method == "resources/unsubscribe" and isinstance(uri, str):
            self.subscriptions.discard(uri)

    # Conveniences -------------------------------------------------------------

    def is_stateless_request(self, request_id: RequestId) -> bool:
        """Whether an open request came in the stateless (2026-07-28) era."""
        incoming = self._requests.incoming.get(request_id)
        return incoming is not None and incoming.meta is not None

    def send_log_message(
        self,
        level: str,
        data: Any,
        logger: str | None = None,
        *,
        request_id: RequestId | None = None,
    ) -> bool:
        """Send ``notifications/message`` unless it is below the client's level.

        For a stateless request (``request_id`` given) the level is the one its
        ``_meta`` asked for, and nothing is sent if it asked for none.
        """
        if level not in LOG_LEVELS:
            raise LocalProtocolError(f"unknown log level {level!r}")
        incoming = self._requests.incoming.get(request_id) if request_id is not None else None
        stateless = incoming is not None and incoming.meta is not None
        threshold = (
            incoming.meta.log_level if stateless and incoming and incoming.meta else self.log_level
        )
        if stateless and threshold is None:
            return False
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return False
        if not stateless and self.revision is None:
            return False  # no handshake session to log to
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.send_notification(
            "notifications/message", params, stateless=stateless, related_request=request_id
        )
        return True

    def send_resource_updated(self, uri: str) -> bool:
        """Send ``notifications/resources/updated`` to whoever subscribed to ``uri``."""
        sent = self._notify_listeners(
            "notifications/resources/updated",
            {"uri": uri},
            lambda f: uri in (f.get("resourceSubscriptions") or ()),
        )
        if uri in self.subscriptions and self.state is SessionState.READY:
            self.send_notification("notifications/resources/updated", {"uri": uri})
            sent = True
        return sent

    def send_task_status(self, detailed_task: dict[str, Any]) -> bool:
        """Send ``notifications/tasks`` (a DetailedTask) to the subscriptions that
        listen for its task id."""
        task_id = detailed_task["taskId"]
        return self._notify_listeners(
            TASK_NOTIFICATION,
            detailed_task,
            lambda f: task_id in (f.get("taskIds") or ()),
        )

    def send_core_task_status(self, task: dict[str, Any]) -> bool:
        """Send 2025-11-25's ``notifications/tasks/status`` (a Task) on this handshake
        session, if its revision has it."""
        revision = self.revision if self.state is SessionState.READY else None
        if revision is None or "notifications/tasks/status" not in revision.server_notifications:
            return False
        self.send_notification("notifications/tasks/status", task)
        return True

    #: Deprecated alias of :meth:`send_core_task_status`.
    send_legacy_task_status = send_core_task_status

    def send_list_changed(self, kind: str) -> bool:
        """Send ``notifications/{kind}/list_changed`` (tools, prompts or resources)
        on the handshake session and to the subscriptions that asked for it."""
        if kind not in ("tools", "prompts", "resources"):
            raise LocalProtocolError(f"no list_changed notification for {kind!r}")
        method = f"notifications/{kind}/list_changed"
        sent = self._notify_listeners(method, {}, lambda f: f.get(f"{kind}ListChanged") is True)
        if self.state is SessionState.READY:
            self.send_notification(method)
            sent = True
        return sent
