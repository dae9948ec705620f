"""The gateway's HTTP machine: Streamable HTTP at one URL for both eras, with
no protocol session.  A handshake client's ``initialize`` is answered without an
``Mcp-Session-Id``, and each of its later requests is served on a session of its
own, as a 2026-07-28 request is; with API keys configured every request must
carry ``Authorization: Bearer KEY``.

Such a request can still ask its client (elicitation, sampling, roots): the
server-to-client request goes out on the request's own SSE stream under an id the
gateway makes unique, and the client's answer, POSTed without a session, is
routed back to the session that asked by that id."""

from __future__ import annotations

import hmac
import secrets
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from sansio_mcp import (
    HANDSHAKE_REVISIONS,
    ErrorCode,
    Outgoing,
    RemoteProtocolError,
    RequestId,
    ServerSession,
    jsontext,
    parse_message,
)
from sansio_mcp.http import (
    Exchange,
    HandshakeSession,
    HTTPRequest,
    StreamableHTTPServer,
    json_error,
)

__all__ = ["ASSUMED_CLIENT_CAPABILITIES", "GatewayHTTPServer", "LEGACY_DEFAULT_VERSION"]

#: The revision a handshake request without ``MCP-Protocol-Version`` is served at
#: (what the 2025-06-18 transport says a server assumes).
LEGACY_DEFAULT_VERSION = "2025-03-26"
#: What a handshake-era client is taken to have declared: its ``initialize`` was
#: answered on another request and is not kept, so the gateway asks, and a client
#: that cannot answer says so (-32601), which the gateway reports as -32021.
ASSUMED_CLIENT_CAPABILITIES = {
    "sampling": {"tools": {}},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}
#: Questions to handshake-era clients awaiting their answers, at most.
MAX_OPEN_QUESTIONS = 10_000


class GatewayHTTPServer(StreamableHTTPServer):
    """:class:`StreamableHTTPServer` without handshake sessions, and with API keys."""

    def __init__(
        self,
        session_factory: Callable[[], ServerSession],
        *,
        api_keys: Iterable[str] = (),
        **options: Any,
    ) -> None:
        super().__init__(session_factory, **options)
        self.api_keys = tuple(key.encode("utf-8") for key in api_keys)
        # The answers to handshake-era requests, each with its Authorization header:
        # an error goes with HTTP 200 there (400 for -32021 is the 2026-07-28 rule, and
        # older clients take it for a transport failure).
        self._handshake_era: weakref.WeakKeyDictionary[Exchange, str] = weakref.WeakKeyDictionary()
        # Our id of each question put to a handshake-era client -> the session that
        # asked, its id, and the Authorization its client asked with.  The id is
        # unguessable and the answer must come with the same Authorization: no other
        # client can answer (approve a job, say) in its place.
        self._questions: dict[str, tuple[weakref.ref[ServerSession], RequestId, str]] = {}

    def handle(self, request: HTTPRequest, now: float | None = None) -> Exchange:
        refusal = self._check_security(request)
        if refusal is not None:
            return refusal
        if self.api_keys and not self._authorized(request):
            refusal = json_error(
                401, None, ErrorCode.INVALID_REQUEST, "a valid API key is required"
            )
            refusal.headers["www-authenticate"] = "Bearer"
            return refusal
        if request.method != "POST" and request.path == self.endpoint:
            # No sessions: nothing to stream to or end (405, as a stateless server says),
            # and no other method either: Allow names POST alone.
            refusal = json_error(
                405, None, ErrorCode.INVALID_REQUEST, "this gateway keeps no sessions; POST only"
            )
            refusal.headers["allow"] = "POST"
            return refusal
        return super().handle(request, now)

    def _authorized(self, request: HTTPRequest) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        given = token.strip().encode("utf-8")
        # Every key compared, in constant time each: timing tells nothing of which.
        return any([hmac.compare_digest(given, key) for key in self.api_keys])

    def _initialize(self, message: dict[str, Any]) -> Exchange:
        session = self.session_factory()
        session.receive_message(message)
        out = session.outgoing_to_send()
        session.close()
        body = out[-1].data if out else b""
        return Exchange(400 if not out else 200, {"content-type": "application/json"}, body)

    def _post_legacy(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        if any(m.get("method") == "initialize" for m in messages) or (
            "mcp-session-id" in request.headers
        ):
            return super()._post_legacy(request, obj, messages)
        version = request.headers.get("mcp-protocol-version") or LEGACY_DEFAULT_VERSION
        if version not in self._legacy_versions:
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
        if "method" not in message and "id" in message:
            return self._answer_to_question(message, request.headers.get("authorization", ""))
        if "id" not in message:
            # notifications/initialized, a cancellation: nothing waits for them here;
            # but what is no notification at all (``{}``) is refused, not accepted.
            try:
                parse_message(message)
            except RemoteProtocolError as exc:
                return json_error(400, None, ErrorCode.INVALID_REQUEST, exc.message)
            return Exchange(202, {})
        session = self.session_factory()
        _replay_handshake(session, version)
        session.receive_message(message)
        request_id = message["id"]
        early = session.outgoing_to_send()
        exchange = self._request_exchange(session, request_id)
        self._handshake_era[exchange] = request.headers.get("authorization", "")
        for item in early:
            self._deliver(exchange, item, None)
        return exchange

    def _answer_to_question(self, message: dict[str, Any], authorization: str) -> Exchange:
        """A client's answer to a question its request's session put to it."""
        key = str(message.get("id"))
        asked = self._questions.get(key)
        session = asked[0]() if asked is not None else None
        if (
            asked is None
            or session is None
            or id(session) not in self._modern_exchange
            or not hmac.compare_digest(authorization.encode(), asked[2].encode())
        ):
            return json_error(
                404, None, ErrorCode.INVALID_REQUEST, "no request is waiting for this answer"
            )
        del self._questions[key]
        session.receive_message({**message, "id": asked[1]})
        # Carrying the session lets the service drive it: the waiting handler goes on.
        return Exchange(202, {}, session=session)

    def _deliver(self, exchange: Exchange, item: Outgoing, state: HandshakeSession | None) -> None:
        obj = item.message
        authorization = self._handshake_era.get(exchange)
        if (
            authorization is not None
            and isinstance(obj, dict)
            and "method" in obj
            and "id" in obj
            and exchange.session is not None
        ):
            if len(self._questions) >= MAX_OPEN_QUESTIONS:
                self._questions = {
                    key: asked for key, asked in self._questions.items() if asked[0]() is not None
                }
            ours = f"gateway-{secrets.token_hex(16)}"
            self._questions[ours] = (weakref.ref(exchange.session), obj["id"], authorization)
            obj = {**obj, "id": ours}
            item = Outgoing(obj, jsontext.encode(obj), item.route)  # under our id, re-encoded
        super()._deliver(exchange, item, state)

    def owns(self, session: ServerSession) -> bool:
        # A request still being answered keeps its session (an answer from its client
        # may arrive on another POST).
        return super().owns(session) or id(session) in self._modern_exchange

    def _answer_plainly(self, exchange: Exchange, item: Outgoing) -> bool:
        answered = super()._answer_plainly(exchange, item)
        if answered and exchange in self._handshake_era:
            exchange.status = 200
        return answered


def _replay_handshake(session: ServerSession, version: str) -> None:
    """Bring a fresh session to READY at ``version``, as the client's own handshake
    (answered earlier, on another request) did, with
    :data:`ASSUMED_CLIENT_CAPABILITIES`."""
    assert version in HANDSHAKE_REVISIONS
    session.receive_message(
        {
            "jsonrpc": "2.0",
            "id": "gateway-handshake",
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": ASSUMED_CLIENT_CAPABILITIES,
                "clientInfo": {"name": "sessionless-client", "version": "0"},
            },
        }
    )
    session.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    session.messages_to_send()
