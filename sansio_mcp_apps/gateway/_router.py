"""The gateway's HTTP machine: Streamable HTTP at one URL for both eras, with
no protocol session.  A handshake client's ``initialize`` is answered without an
``Mcp-Session-Id``, and each of its later requests is served on a session of its
own, as a 2026-07-28 request is; with API keys configured every request must
carry ``Authorization: Bearer KEY``.

Such a client's declaration is not kept, so by default it is taken to have
declared nothing and is asked nothing.  Told to relay questions (outside the
spec), the gateway asks it on assumed capabilities (elicitation, sampling,
roots): the server-to-client request goes out on the request's own SSE stream
under an id the gateway makes unique, and the client's answer, POSTed without a
session, is routed back to the session that asked by that id (among replicas, to the
replica that asked: see :meth:`GatewayHTTPServer.join_replicas`).

Virtual MCPs are served at ``{endpoint}/{id}``, and ``GET /metrics`` when given."""

from __future__ import annotations

import hmac
import secrets
import weakref
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from functools import partial
from typing import Any

import attrs

from sansio_mcp import (
    ErrorCode,
    Outgoing,
    RemoteProtocolError,
    RequestId,
    ServerSession,
    jsontext,
    parse_message,
)
from sansio_mcp.http import Exchange, HTTPRequest, StreamableHTTPServer, json_error

__all__ = [
    "ASSUMED_CLIENT_CAPABILITIES",
    "Access",
    "GatewayHTTPServer",
    "HANDSHAKE_DEFAULT_VERSION",
]

#: The revision a handshake request without ``MCP-Protocol-Version`` is served at
#: (what the 2025-06-18 transport says a server assumes).
HANDSHAKE_DEFAULT_VERSION = "2025-03-26"
#: What a handshake-era client is taken to have declared when the gateway is told
#: to relay questions to it (outside the spec): its ``initialize`` was answered on
#: another request and is not kept, so the gateway asks, and a client that cannot
#: answer says so (-32601), which the gateway reports as -32021.  By default such a
#: client is taken to have declared nothing, and is asked nothing.
ASSUMED_CLIENT_CAPABILITIES = {
    "sampling": {"tools": {}},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}
#: Questions to handshake-era clients awaiting their answers, at most.
MAX_OPEN_QUESTIONS = 10_000
# Who a handshake-era client is taken to be: its initialize is not kept.
_SESSIONLESS_CLIENT = {"name": "sessionless-client", "version": "0"}


@attrs.frozen
class Access:
    """Where a request came (``endpoint``: a virtual MCP's id, None for the main
    endpoint) and who sent it (``principal``: which API key, by its place in the
    config, never the key itself, or an OAuth token's subject; None without either)."""

    endpoint: str | None = None
    principal: str | None = None


#: The access of a request to the main endpoint of a gateway that needs no key
#: (frozen: one serves every such request).
_ANYONE = Access()


class GatewayHTTPServer(StreamableHTTPServer):
    """:class:`StreamableHTTPServer` without handshake sessions, and with API keys
    (built on the router's extension points only).

    ``virtual_mcps`` (id -> its own API keys) are served at ``{endpoint}/{id}``;
    each session's :class:`Access` goes into ``access``.  The global ``api_keys``
    work everywhere, a virtual MCP's only on its own endpoint (403 elsewhere).
    ``metrics``, if given, makes ``GET /metrics``' body (same API keys as the
    main endpoint).  ``relay_questions`` takes a handshake-era client to have
    declared :data:`ASSUMED_CLIENT_CAPABILITIES` (outside the spec); without it,
    none."""

    keeps_sessions = False

    def __init__(
        self,
        session_factory: Callable[[], ServerSession],
        *,
        api_keys: Iterable[str] = (),
        virtual_mcps: Mapping[str, Iterable[str]] | None = None,
        access: MutableMapping[ServerSession, Access] | None = None,
        metrics: Callable[[], tuple[str, bytes]] | None = None,
        relay_questions: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(session_factory, **options)
        # Who sent the request being handled: its session knows from the start (a
        # subscriptions/listen naming tasks is judged as the session takes it).
        self._incoming: Access | None = None
        # The id of the session new_session gave access to during handle (alive while
        # its exchange holds it): handle need not look it up again.
        self._given: int | None = None
        self.api_keys = tuple(key.encode("utf-8") for key in api_keys)
        self.virtual_mcps = {
            id: tuple(key.encode("utf-8") for key in keys)
            for id, keys in (virtual_mcps or {}).items()
        }
        self.access: MutableMapping[ServerSession, Access] = (
            access if access is not None else weakref.WeakKeyDictionary()
        )
        self.metrics = metrics
        self.relay_questions = relay_questions
        #: The principal of the request being handled when a router in front of this
        #: one verified its token (:class:`GatewayOAuthRouter`: the token's subject).
        self.verified_principal: str | None = None
        # Our id of each question put to a handshake-era client -> the session that
        # asked, its id, and the Authorization its client asked with.  The id is
        # unguessable and the answer must come with the same Authorization: no other
        # client can answer (approve a job, say) in its place.
        self._questions: dict[str, tuple[weakref.ref[ServerSession], RequestId, str]] = {}
        #: Among replicas (see :meth:`join_replicas`): this one's tag, which its
        #: questions' ids carry, and where an answer to another replica's question goes.
        self.replica_tag: str | None = None
        self._forward_answer: Callable[[str, dict[str, Any], str], None] | None = None

    def join_replicas(self, tag: str, forward: Callable[[str, dict[str, Any], str], None]) -> None:
        """Work beside other replicas: the id of each question put to a handshake-era
        client carries ``tag``, and an answer to a question whose id carries another
        replica's tag is passed to ``forward(tag, answer, authorization)`` (it is that
        replica's to take: :meth:`take_answer`) and accepted (202)."""
        if not tag.isalnum():
            raise ValueError("a replica tag is letters and digits")
        self.replica_tag = tag
        self._forward_answer = forward

    def handle(self, request: HTTPRequest, now: float | None = None) -> Exchange:
        refusal = self.host_refusal(request)
        if refusal is not None:
            return refusal
        path, virtual = request.path, None
        if path == "/metrics" and self.metrics is not None:
            return self._metrics(request)
        if path.startswith(self.endpoint + "/"):
            virtual = path[len(self.endpoint) + 1 :]
            if virtual not in self.virtual_mcps:
                return json_error(404, None, ErrorCode.INVALID_REQUEST, f"no virtual MCP at {path}")
            query = request.target[len(path) :]
            request = attrs.evolve(request, target=self.endpoint + query)
            path = self.endpoint
        principal = self._principal(request, virtual)
        if isinstance(principal, Exchange):
            return principal
        if request.method != "POST" and path == self.endpoint:
            # No sessions: nothing to stream to or end (405, as a stateless server says),
            # and no other method either: Allow names POST alone.
            refusal = json_error(
                405, None, ErrorCode.INVALID_REQUEST, "this gateway keeps no sessions; POST only"
            )
            refusal.headers["allow"] = "POST"
            return refusal
        if now is not None:
            self.expire_idle(now)
        incoming = _ANYONE if virtual is None and principal is None else Access(virtual, principal)
        self._incoming, self._given = incoming, None
        try:
            exchange = self.route(request)  # Host and Origin were checked above
        finally:
            self._incoming = None
        session = exchange.session
        if session is not None and id(session) != self._given and session not in self.access:
            self.access[session] = incoming
        return exchange

    def new_session(self) -> ServerSession:
        session = StreamableHTTPServer.new_session(self)  # (by name: no super object per request)
        if self._incoming is not None:
            self.access[session] = self._incoming
            self._given = id(session)
        return session

    def _metrics(self, request: HTTPRequest) -> Exchange:
        assert self.metrics is not None
        principal = self._principal(request, None)
        if isinstance(principal, Exchange):
            return principal
        if request.method != "GET":
            refusal = json_error(405, None, ErrorCode.INVALID_REQUEST, "GET /metrics only")
            refusal.headers["allow"] = "GET"
            return refusal
        content_type, body = self.metrics()
        return Exchange(200, {"content-type": content_type}, body)

    def _principal(self, request: HTTPRequest, virtual: str | None) -> str | Exchange | None:
        """Which API key ``request`` carries, as a principal: ``api_keys[N]``, or
        ``virtual_mcps.ID.api_keys[N]``; None when none is needed; else the 401
        (no valid key) or 403 (another virtual MCP's key) that refuses it; or the
        :attr:`verified_principal` a token gave."""
        if self.verified_principal is not None:
            return self.verified_principal
        own = self.virtual_mcps.get(virtual, ()) if virtual is not None else ()
        if not self.api_keys and not own:
            return None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip().encode("utf-8") if scheme.lower() == "bearer" else b""
        found: str | None = None
        elsewhere = False
        # Every key compared, in constant time each: timing tells nothing of which.
        for where, keys in [("", self.api_keys)] + [
            (f"virtual_mcps.{id}.", keys) for id, keys in self.virtual_mcps.items()
        ]:
            for n, key in enumerate(keys):
                if hmac.compare_digest(given, key) and given:
                    if where in ("", f"virtual_mcps.{virtual}."):
                        found = found or f"{where}api_keys[{n}]"
                    else:
                        elsewhere = True
        if found is not None:
            return found
        if elsewhere:
            return json_error(
                403, None, ErrorCode.INVALID_REQUEST, "this API key is not valid at this endpoint"
            )
        refusal = json_error(401, None, ErrorCode.INVALID_REQUEST, "a valid API key is required")
        refusal.headers["www-authenticate"] = "Bearer"
        return refusal

    def post_without_session(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        """A handshake-era client's request, answer or notification: the request
        served on a session of its own, brought to READY as the client's handshake
        (answered on another request, not kept) did."""
        version = request.headers.get("mcp-protocol-version") or HANDSHAKE_DEFAULT_VERSION
        if version not in self.handshake_versions:
            return json_error(
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                f"unsupported MCP-Protocol-Version {version!r}",
            )
        if isinstance(obj, list):
            return json_error(
                400, None, ErrorCode.INVALID_REQUEST, "this gateway takes one message per POST"
            )
        message = messages[0]
        authorization = request.headers.get("authorization", "")
        if "method" not in message and "id" in message:
            return self._answer_to_question(message, authorization)
        if "id" not in message:
            # notifications/initialized, a cancellation: nothing waits for them here;
            # but what is no notification at all (``{}``) is refused, not accepted.
            try:
                parse_message(message)
            except RemoteProtocolError as exc:
                return json_error(400, None, ErrorCode.INVALID_REQUEST, exc.message)
            return Exchange(202, {})
        session = self.new_session()
        # READY at the client's version as its own handshake (answered earlier, on
        # another request) left it, with ASSUMED_CLIENT_CAPABILITIES if told to
        # relay questions, else with none.
        capabilities = ASSUMED_CLIENT_CAPABILITIES if self.relay_questions else {}
        session.adopt_handshake(version, capabilities, _SESSIONLESS_CLIENT)
        session.receive_message(message)
        exchange = self.request_exchange(session, message["id"])
        # An error goes with HTTP 200 here (400 for -32021 is the 2026-07-28 rule, and
        # older clients take it for a transport failure).
        exchange.error_statuses = {}
        # (positional: a partial given keywords merges them on every call)
        exchange.rewrite = partial(self._ask, exchange, authorization)
        self.flush(session)
        return exchange

    def _answer_to_question(self, message: dict[str, Any], authorization: str) -> Exchange:
        """A client's answer to a question its request's session put to it (here,
        or on the replica whose tag the question's id carries)."""
        session = self.take_answer(message, authorization)
        if session is None:
            tag = _tag_of(message)
            if tag is not None and tag != self.replica_tag and self._forward_answer is not None:
                self._forward_answer(tag, message, authorization)
                return Exchange(202, {})
            return json_error(
                404, None, ErrorCode.INVALID_REQUEST, "no request is waiting for this answer"
            )
        # Carrying the session lets the service drive it: the waiting handler goes on.
        return Exchange(202, {}, session=session)

    def take_answer(self, message: dict[str, Any], authorization: str) -> ServerSession | None:
        """Hand ``message`` (a client's answer, sent with ``authorization``) to the
        session whose question it answers; that session (to drive), or None when no
        question of this replica's waits for it with that ``authorization``."""
        key = str(message.get("id"))
        asked = self._questions.get(key)
        session = asked[0]() if asked is not None else None
        if (
            asked is None
            or session is None
            or not self.serving(session)
            or not hmac.compare_digest(authorization.encode(), asked[2].encode())
        ):
            return None
        del self._questions[key]
        session.receive_message({**message, "id": asked[1]})
        return session

    def _ask(self, exchange: Exchange, authorization: str, item: Outgoing) -> Outgoing:
        """``item`` as it goes to a handshake-era client: a question under an id of
        ours, by which the client's answer (with the same ``authorization``) finds
        the session that asked."""
        obj, session = item.message, exchange.session
        if not (isinstance(obj, dict) and "method" in obj and "id" in obj and session is not None):
            return item
        if len(self._questions) >= MAX_OPEN_QUESTIONS:
            self._questions = {
                key: asked for key, asked in self._questions.items() if asked[0]() is not None
            }
        tag = f"{self.replica_tag}-" if self.replica_tag is not None else ""
        ours = f"gateway-{tag}{secrets.token_hex(16)}"
        self._questions[ours] = (weakref.ref(session), obj["id"], authorization)
        obj = {**obj, "id": ours}
        return Outgoing(obj, jsontext.encode(obj), item.route)  # under our id, re-encoded

    def owns(self, session: ServerSession) -> bool:
        # A request still being answered keeps its session (an answer from its client
        # may arrive on another POST).
        return StreamableHTTPServer.owns(self, session) or self.serving(session)


def _tag_of(message: dict[str, Any]) -> str | None:
    """The replica tag ``message``'s id carries, if it is a replica's question's
    (``gateway-TAG-HEX``)."""
    parts = str(message.get("id")).split("-")
    if len(parts) == 3 and parts[0] == "gateway" and parts[1].isalnum() and parts[2]:
        return parts[1]
    return None
