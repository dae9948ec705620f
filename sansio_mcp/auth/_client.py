"""The client's authorization machine, sans I/O.

:class:`OAuthClient` is told what the MCP server answered (:meth:`on_response`) and,
when a flow is due, says which request to make next (:meth:`next_step`): an
:class:`HTTPCall` whose answer comes back through :meth:`receive_reply`, an
:class:`OpenBrowser` whose redirect comes back through :meth:`receive_redirect`, and
finally :class:`Authorized` or :class:`AuthorizationFailed`.  Time enters as ``now``
(seconds, any clock) and randomness through the ``entropy`` callable.

A flow walks the states of :data:`TRANSITIONS`::

    IDLE ─▶ RESOURCE_METADATA ─▶ SERVER_METADATA ─▶ REGISTER ─▶ AUTHORIZE ─▶ TOKEN ─▶ DONE
      │            (next URL ⟲)       (next URL ⟲)      │  (CIMD, pre-registered: skip)
      │                                     └─▶ EXCHANGE (ID token → ID-JAG) ─▶ TOKEN
      └─▶ TOKEN (refresh) ──(refused)──▶ RESOURCE_METADATA       any ─▶ FAILED
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .. import _json
from .._errors import LocalProtocolError
from ._challenge import Challenge, parse_challenges
from ._crypto import DPoPKey, dpop_proof
from ._discovery import (
    as_metadata_urls,
    canonical_resource,
    fallback_endpoints,
    insecure_endpoint,
    origin_of,
    prm_urls,
    resource_identical,
)
from ._pkce import code_challenge, random_string
from ._tokens import auth_method, authenticate, form_call, json_object, oauth_error, token_set
from ._types import (
    AuthorizationError,
    AuthorizationFailed,
    Authorized,
    ClientInfo,
    Grant,
    HTTPCall,
    HTTPReply,
    OAuthConfig,
    OpenBrowser,
    TokenSet,
)

__all__ = ["Decision", "FlowState", "OAuthClient", "TRANSITIONS"]

Step = HTTPCall | OpenBrowser | Authorized | AuthorizationFailed

_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


class FlowState(enum.Enum):
    IDLE = "idle"
    RESOURCE_METADATA = "resource metadata"
    SERVER_METADATA = "server metadata"
    REGISTER = "register"
    AUTHORIZE = "authorize"
    EXCHANGE = "exchange"
    TOKEN = "token"
    DONE = "done"
    FAILED = "failed"


S = FlowState
#: Which state may follow which (anything may fail).
TRANSITIONS: Mapping[FlowState, frozenset[FlowState]] = {
    S.IDLE: frozenset({S.RESOURCE_METADATA, S.TOKEN}),
    S.RESOURCE_METADATA: frozenset({S.RESOURCE_METADATA, S.SERVER_METADATA}),
    S.SERVER_METADATA: frozenset({S.SERVER_METADATA, S.REGISTER, S.AUTHORIZE, S.EXCHANGE, S.TOKEN}),
    S.REGISTER: frozenset({S.AUTHORIZE}),
    S.AUTHORIZE: frozenset({S.TOKEN}),
    S.EXCHANGE: frozenset({S.TOKEN}),
    S.TOKEN: frozenset({S.TOKEN, S.DONE, S.RESOURCE_METADATA}),
    S.DONE: frozenset({S.IDLE}),
    S.FAILED: frozenset({S.IDLE}),
}


class Decision(enum.Enum):
    """What to do with an MCP server's answer (:meth:`OAuthClient.on_response`)."""

    #: Not an authorization matter: use the answer.
    PROCEED = "proceed"
    #: Send the request again as it is (a new DPoP nonce): no flow needed.
    RETRY = "retry"
    #: Run a flow (``next_step`` until it is over), then send the request again.
    AUTHORIZE = "authorize"
    #: Authorization will not help (or the retry limit is reached): the request fails.
    GIVE_UP = "give up"


def _scopes(value: Any) -> list[str]:
    return value.split() if isinstance(value, str) else []


def _merge(*groups: list[str]) -> list[str]:
    merged: list[str] = []
    for group in groups:
        merged.extend(s for s in group if s not in merged)
    return merged


class OAuthClient:
    """Authorization for one MCP server URL: discovery, registration, tokens, DPoP.

    ``entropy(n)`` returns ``n`` random bytes (``os.urandom`` by default; tests pass
    their own).  ``tokens``, ``clients`` (registrations by issuer) and
    ``authorization_server`` (what a refresh needs: see the property) may come from a
    store and are kept here as they change; ``changed`` counts the changes.
    """

    def __init__(
        self,
        server_url: str,
        config: OAuthConfig | None = None,
        *,
        entropy: Callable[[int], bytes] = os.urandom,
        tokens: TokenSet | None = None,
        clients: Mapping[str, ClientInfo] | None = None,
        dpop_key: DPoPKey | None = None,
        authorization_server: Mapping[str, Any] | None = None,
    ) -> None:
        self.server_url = server_url
        self.config = config or OAuthConfig()
        self.entropy = entropy
        self.tokens = tokens
        self.clients: dict[str, ClientInfo] = dict(clients or {})
        self.state = FlowState.IDLE
        self.changed = 0
        self._dpop_key = dpop_key
        self._use_dpop = False
        self._rs_nonce: str | None = None
        self._as_nonce: str | None = None
        self._flows_in_a_row = 0
        self._challenge = Challenge("bearer")
        self._requested: list[str] = []
        self._urls: list[str] = []
        self._origin_is_issuer = False
        self._prm: dict[str, Any] = {}
        self._metadata: dict[str, Any] = {}
        self._issuer = ""
        self._resource = canonical_resource(server_url)
        self._client: ClientInfo | None = None
        self._verifier = ""
        self._state_param = ""
        self._browser_sent = False
        self._code = ""
        self._assertion: str | None = None
        self._refreshing = False
        self._refresh_after_discovery = False
        self._nonce_retries = 0
        self._error: AuthorizationError | None = None
        if authorization_server is not None:
            self._restore(authorization_server)

    @property
    def authorization_server(self) -> dict[str, Any] | None:
        """What a refresh needs, to be stored beside the tokens: the issuer, its
        metadata (the token endpoint and how to authenticate there) and the resource
        the tokens are for.  None until a flow has found them."""
        if not self._metadata:
            return None
        return {"issuer": self._issuer, "resource": self._resource, "metadata": self._metadata}

    def _restore(self, saved: Mapping[str, Any]) -> None:
        """Take back a stored :attr:`authorization_server`; a malformed one, or one of
        another issuer than the tokens', is ignored (the next flow rediscovers)."""
        issuer, resource, metadata = (saved.get(k) for k in ("issuer", "resource", "metadata"))
        if not (
            isinstance(issuer, str)
            and isinstance(resource, str)
            and isinstance(metadata, dict)
            and isinstance(metadata.get("token_endpoint"), str)
        ):
            return
        if self.tokens is not None and self.tokens.issuer not in (None, issuer):
            return
        self._issuer, self._resource, self._metadata = issuer, resource, dict(metadata)
        # A refresh from the stored state proves the stored key, as the first flow did.
        self._decide_dpop()

    @property
    def dpop_key(self) -> DPoPKey | None:
        """The DPoP key pair (None until DPoP is used): stored beside the tokens, as a
        DPoP-bound refresh token is of no use without it."""
        return self._dpop_key

    # What the MCP requests carry ---------------------------------------------------

    def request_headers(self, method: str, url: str, now: float) -> dict[str, str]:
        """``Authorization`` (and ``DPoP``) for a request to the MCP server."""
        tokens = self.tokens
        if tokens is None:
            return {}
        if tokens.token_type.lower() == "dpop" and self._dpop_key is not None:
            proof = dpop_proof(
                self._dpop_key,
                method,
                url,
                now=now,
                jti=random_string(self.entropy(16)),
                nonce=self._rs_nonce,
                access_token=tokens.access_token,
            )
            return {"authorization": f"DPoP {tokens.access_token}", "dpop": proof}
        return {"authorization": f"Bearer {tokens.access_token}"}

    def needs_refresh(self, now: float) -> bool:
        """The token has expired and a refresh token can renew it: call
        :meth:`start_refresh` and run the flow before sending."""
        t = self.tokens
        return (
            t is not None
            and t.refresh_token is not None
            and t.expired(now)
            and bool(self._metadata)
        )

    def start_refresh(self) -> None:
        assert self.tokens is not None and self.tokens.refresh_token is not None
        self._refreshing = True
        self._nonce_retries = 0
        self._go(S.TOKEN)

    def on_response(
        self, status: int, headers: Mapping[str, str], *, authorized: bool = True
    ) -> Decision:
        """The MCP server answered ``status``; ``authorized``: the request carried
        our token.  Says whether to use the answer, resend, authorize first, or fail."""
        nonce = headers.get("dpop-nonce")
        challenges = parse_challenges(headers.get("www-authenticate"))
        if status < 400:
            if nonce:
                self._rs_nonce = nonce
            if authorized and self.tokens is not None:
                self._flows_in_a_row = 0
            return Decision.PROCEED
        if status not in (401, 403):
            return Decision.PROCEED
        challenge = next(iter(challenges), Challenge("bearer"))
        if challenge.error == "use_dpop_nonce" and nonce:
            # RFC 9449 §9: the resource server wants its nonce in the proof; no new token.
            if nonce == self._rs_nonce:
                return Decision.GIVE_UP
            self._rs_nonce = nonce
            return Decision.RETRY
        if status == 403 and challenge.error != "insufficient_scope":
            return Decision.PROCEED
        if self._flows_in_a_row >= self.config.max_authorizations:
            self._error = AuthorizationError(
                message=f"the server still refuses after {self._flows_in_a_row} authorizations",
                data={"status": status, "error": challenge.error},
            )
            return Decision.GIVE_UP
        self._flows_in_a_row += 1
        step_up = status == 403
        self._begin(challenge, step_up=step_up)
        return Decision.AUTHORIZE

    @property
    def last_error(self) -> AuthorizationError | None:
        """Why the last flow failed, or why :meth:`on_response` gave up."""
        return self._error

    # The flow ----------------------------------------------------------------------

    def _go(self, state: FlowState) -> None:
        if state is not S.FAILED and state not in TRANSITIONS[self.state]:
            raise LocalProtocolError(f"no transition from {self.state.value} to {state.value}")
        self.state = state

    def _fail(self, message: str, **data: Any) -> None:
        self._error = AuthorizationError(message=message, data=data or None)
        self.state = S.FAILED

    def _begin(self, challenge: Challenge, *, step_up: bool) -> None:
        if self.state not in (S.IDLE, S.DONE, S.FAILED):
            raise LocalProtocolError(f"a flow is already running ({self.state.value})")
        self.state = S.IDLE
        self._error = None
        self._challenge = challenge
        previous = self._requested if step_up else []
        refreshable = (
            not step_up
            and challenge.error == "invalid_token"
            and self.tokens is not None
            and self.tokens.refresh_token is not None
            and not self._refreshing
        )
        if refreshable and self._metadata:
            self.start_refresh()
            return
        self._refreshing = False
        # A refresh token without its server's metadata (a store from before it kept
        # them): discover the server, then refresh rather than register and browse.
        self._refresh_after_discovery = refreshable
        self._requested = _merge(previous, challenge.scope)
        self._urls = prm_urls(self.server_url, challenge.resource_metadata)
        self._origin_is_issuer = False
        self._go(S.RESOURCE_METADATA)

    def next_step(self, now: float) -> Step:
        """The next thing to do for the running flow."""
        state = self.state
        if state is S.DONE:
            assert self.tokens is not None
            self._go(S.IDLE)
            return Authorized(self.tokens)
        if state is S.FAILED:
            self.state = S.IDLE
            assert self._error is not None
            return AuthorizationFailed(self._error)
        if state in (S.RESOURCE_METADATA, S.SERVER_METADATA):
            return HTTPCall("GET", self._urls[0], {"accept": "application/json"})
        if state is S.REGISTER:
            return self._registration_call()
        if state is S.AUTHORIZE:
            if not self._browser_sent:
                self._browser_sent = True
                return OpenBrowser(self._authorization_url())
            raise LocalProtocolError("waiting for the redirect: call receive_redirect()")
        if state is S.EXCHANGE:
            return self._exchange_call()
        if state is S.TOKEN:
            return self._token_call(now)
        raise LocalProtocolError("no flow is running: on_response() starts one")

    def receive_reply(self, reply: HTTPReply, now: float) -> None:
        """The answer to the :class:`HTTPCall` of :meth:`next_step`."""
        state = self.state
        if state is S.RESOURCE_METADATA:
            self._on_resource_metadata(reply)
        elif state is S.SERVER_METADATA:
            self._on_server_metadata(reply)
        elif state is S.REGISTER:
            self._on_registration(reply)
        elif state is S.EXCHANGE:
            self._on_exchange(reply)
        elif state is S.TOKEN:
            self._on_token(reply, now)
        else:
            raise LocalProtocolError(f"no request is outstanding ({state.value})")

    def fail(self, message: str) -> None:
        """The flow cannot go on (a request failed to connect, the user gave up)."""
        self._fail(message)

    # Discovery ---------------------------------------------------------------------

    def _on_resource_metadata(self, reply: HTTPReply) -> None:
        url = self._urls.pop(0)
        document = json_object(reply) if reply.status == 200 else None
        if document is None:
            if self._urls:
                self._go(S.RESOURCE_METADATA)
                return
            if self._challenge.resource_metadata:
                self._fail(f"no protected resource metadata at {url} (HTTP {reply.status})")
                return
            # 2025-03-26: no metadata; the server's origin is the authorization server.
            self._origin_is_issuer = True
            self._prm = {}
            self._resource = canonical_resource(self.server_url)
            self._start_server_metadata(origin_of(self.server_url))
            return
        resource = document.get("resource")
        servers = document.get("authorization_servers")
        from_challenge = bool(self._challenge.resource_metadata)
        if not isinstance(resource, str) or not resource_identical(
            self.server_url, url, resource, from_challenge=from_challenge
        ):
            self._fail(
                f"the protected resource metadata at {url} names resource {resource!r}, "
                f"not the identifier its URL was built from (RFC 9728 §3.3)",
                resource=resource,
            )
            return
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            self._fail(f"the protected resource metadata at {url} names no authorization server")
            return
        self._prm = document
        self._resource = resource  # exactly as published (RFC 9728 §3.3)
        self._start_server_metadata(servers[0])

    def _start_server_metadata(self, issuer: str) -> None:
        problem = insecure_endpoint(issuer)
        if problem is not None:
            self._fail(f"the authorization server {issuer} {problem}", issuer=issuer)
            return
        self._issuer = issuer
        self._urls = as_metadata_urls(issuer)
        self._go(S.SERVER_METADATA)

    def _on_server_metadata(self, reply: HTTPReply) -> None:
        url = self._urls.pop(0)
        document = json_object(reply) if reply.status == 200 else None
        if document is None:
            if self._urls:
                self._go(S.SERVER_METADATA)
            elif self._origin_is_issuer:
                self._metadata = fallback_endpoints(self.server_url)
                self._after_metadata()
            else:
                self._fail(f"no authorization server metadata for {self._issuer}")
            return
        issuer = document.get("issuer")
        if not isinstance(issuer, str) or issuer.rstrip("/") != self._issuer.rstrip("/"):
            # RFC 8414 §3.3: metadata for another issuer must not be used at all.
            self._fail(
                f"the metadata at {url} is for issuer {issuer!r}, not {self._issuer!r}",
                issuer=issuer,
            )
            return
        for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
            if key in document and not isinstance(document[key], str):
                self._fail(f"the metadata at {url} has a malformed {key}")
                return
        if not isinstance(document.get("token_endpoint"), str):
            self._fail(f"the metadata at {url} names no token_endpoint")
            return
        methods = document.get("code_challenge_methods_supported")
        if self.config.grant is Grant.AUTHORIZATION_CODE and not (
            isinstance(methods, list) and "S256" in methods
        ):
            # MCP 2025-11-25: no PKCE S256 advertised, no authorization code flow at all.
            listed = "lacks" if methods is None else f"has {methods!r} without S256 in"
            self._fail(
                f"{issuer} does not support PKCE: its metadata at {url} {listed} "
                "code_challenge_methods_supported",
                issuer=issuer,
            )
            return
        for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
            problem = insecure_endpoint(document[key]) if key in document else None
            if problem is not None:
                # Codes, secrets and tokens would travel in the clear.
                endpoint = document[key]
                self._fail(f"the {key} {endpoint} of {issuer} {problem}", **{key: endpoint})
                return
        self._metadata = document
        self._issuer = issuer
        self._after_metadata()

    def _decide_dpop(self) -> None:
        """DPoP or not, by the config and the authorization server's metadata; a key
        is made when none was given (a stored one is kept: its tokens are bound to it)."""
        config, metadata = self.config, self._metadata
        algs = metadata.get("dpop_signing_alg_values_supported")
        offered = isinstance(algs, list) and "ES256" in algs
        self._use_dpop = config.dpop is True or (config.dpop is None and offered)
        if self._use_dpop and self._dpop_key is None:
            self._dpop_key = DPoPKey()
            self.changed += 1

    def _after_metadata(self) -> None:
        config, metadata = self.config, self._metadata
        self._decide_dpop()
        if self.tokens is not None and self.tokens.issuer not in (None, self._issuer):
            # SEP-2352: tokens (and refresh tokens) of another server are not used here.
            self.tokens = None
            self.changed += 1
        if self._refresh_after_discovery and self.tokens is not None:
            self._refresh_after_discovery = False
            self.start_refresh()
            return
        if config.grant is Grant.TOKEN_EXCHANGE:
            self._client = self._known_client()
            if self._client is None:
                self._fail("token exchange needs a pre-registered client")
                return
            idp = config.idp_token_endpoint
            problem = insecure_endpoint(idp) if idp else None
            if problem is not None:
                self._fail(f"the idp_token_endpoint {idp} {problem}", idp_token_endpoint=idp)
                return
            self._go(S.EXCHANGE)
            return
        if config.grant is not Grant.AUTHORIZATION_CODE:
            # A JWT bearer grant may come without client authentication (RFC 7523 §3.1);
            # client credentials are the client's own.
            self._client = self._known_client()
            if self._client is None and config.grant is Grant.CLIENT_CREDENTIALS:
                self._fail("the client credentials grant needs a pre-registered client")
                return
            self._nonce_retries = 0
            self._go(S.TOKEN)
            return
        self._client = self._known_client() or self._metadata_document_client()
        if self._client is None:
            if not isinstance(metadata.get("registration_endpoint"), str):
                self._fail(
                    f"{self._issuer} supports no dynamic registration and no client is "
                    "registered for it"
                )
                return
            self._go(S.REGISTER)
            return
        self._go(S.AUTHORIZE)
        self._prepare_authorization()

    def _known_client(self) -> ClientInfo | None:
        known = self.clients.get(self._issuer)
        if known is not None:
            return known
        pre = self.config.client
        if pre is not None and pre.issuer in (None, self._issuer):
            return pre
        return None

    def _metadata_document_client(self) -> ClientInfo | None:
        """The client as its Client ID Metadata Document URL, where the server takes one."""
        url = self.config.client_metadata_url
        if url and self._metadata.get("client_id_metadata_document_supported"):
            return ClientInfo(url, auth_method="none")
        return None

    # Registration ------------------------------------------------------------------

    def _registration_call(self) -> HTTPCall:
        config = self.config
        body: dict[str, Any] = {
            "client_name": config.client_name,
            "redirect_uris": [config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": config.application_type,
        }
        scope = self._scope()
        if scope:
            body["scope"] = scope
        return HTTPCall(
            "POST",
            self._metadata["registration_endpoint"],
            {"content-type": "application/json", "accept": "application/json"},
            _json.dumps(body).encode("utf-8"),
        )

    def _on_registration(self, reply: HTTPReply) -> None:
        document = json_object(reply)
        if reply.status not in (200, 201) or document is None:
            self._fail_with_oauth_error("registration", reply, document)
            return
        client_id = document.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            self._fail("the registration answer has no client_id")
            return
        secret = document.get("client_secret")
        method = document.get("token_endpoint_auth_method")
        client = ClientInfo(
            client_id,
            secret if isinstance(secret, str) else None,
            method if isinstance(method, str) else None,
            self._issuer,
        )
        self.clients[self._issuer] = client
        self.changed += 1
        self._client = client
        self._go(S.AUTHORIZE)
        self._prepare_authorization()

    # Authorization -----------------------------------------------------------------

    def _scope(self) -> str | None:
        config = self.config
        if config.scope is not None:
            return config.scope or None
        scopes = self._requested or _scopes(" ".join(self._prm.get("scopes_supported") or []))
        supported = self._metadata.get("scopes_supported")
        if (
            scopes
            and config.offline_access
            and config.grant is Grant.AUTHORIZATION_CODE
            and isinstance(supported, list)
            and "offline_access" in supported
        ):
            scopes = _merge(scopes, ["offline_access"])
        self._requested = scopes
        return " ".join(scopes) or None

    def _prepare_authorization(self) -> None:
        self._verifier = random_string(self.entropy(32))
        self._state_param = random_string(self.entropy(16))
        self._browser_sent = False

    def _authorization_url(self) -> str:
        assert self._client is not None
        endpoint = self._metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise LocalProtocolError(f"{self._issuer} has no authorization_endpoint")
        params = {
            "response_type": "code",
            "client_id": self._client.client_id,
            "redirect_uri": self.config.redirect_uri,
            "code_challenge": code_challenge(self._verifier),
            "code_challenge_method": "S256",
            "state": self._state_param,
        }
        scope = self._scope()
        if scope:
            params["scope"] = scope
        params["resource"] = self._resource
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)

    @property
    def authorization_url(self) -> str | None:
        """The URL the user is sent to, while the flow waits for the redirect."""
        return self._authorization_url() if self.state is S.AUTHORIZE else None

    def receive_redirect(self, url: str) -> None:
        """The URL the authorization server redirected the browser to."""
        if self.state is not S.AUTHORIZE:
            raise LocalProtocolError(f"no authorization is waiting ({self.state.value})")
        pairs = parse_qsl(urlsplit(url).query, keep_blank_values=True)
        query: dict[str, str] = {}
        for name, value in pairs:
            if name in query and name in ("code", "state", "iss"):
                self._fail(f"the redirect repeats {name!r}")
                return
            query[name] = value
        if query.get("state") != self._state_param:
            self._fail("the redirect's state does not match the request's")
            return
        # RFC 9207: a present iss must be the issuer, by plain string comparison;
        # an advertised one must be present.
        iss = query.get("iss")
        if iss is not None and iss != self._metadata.get("issuer", self._issuer):
            self._fail(f"the redirect comes from issuer {iss!r}, not {self._issuer!r}", iss=iss)
            return
        if iss is None and self._metadata.get("authorization_response_iss_parameter_supported"):
            self._fail("the authorization server promised an iss parameter and sent none")
            return
        if "error" in query:
            described = f"{query['error']} {query.get('error_description', '')}".strip()
            self._fail(f"authorization refused: {described}", error=query["error"])
            return
        code = query.get("code")
        if not code:
            self._fail("the redirect carries no code")
            return
        self._code = code
        self._nonce_retries = 0
        self._go(S.TOKEN)

    # Tokens ------------------------------------------------------------------------

    def _exchange_call(self) -> HTTPCall:
        config = self.config
        if not (config.id_token and config.idp_token_endpoint):
            raise LocalProtocolError("token exchange needs id_token and idp_token_endpoint")
        form = {
            "grant_type": Grant.TOKEN_EXCHANGE.value,
            "requested_token_type": _ID_JAG,
            "audience": self._issuer,
            "resource": self._resource,
            "subject_token": config.id_token,
            "subject_token_type": _ID_TOKEN,
        }
        if config.idp_client_id:
            form["client_id"] = config.idp_client_id
        scope = self._scope()
        if scope:
            form["scope"] = scope
        return form_call(config.idp_token_endpoint, form, {})

    def _on_exchange(self, reply: HTTPReply) -> None:
        document = json_object(reply)
        token = document.get("access_token") if document else None
        if reply.status != 200 or not isinstance(token, str):
            self._fail_with_oauth_error("token exchange", reply, document)
            return
        self._assertion = token
        self._nonce_retries = 0
        self._go(S.TOKEN)

    def _token_call(self, now: float) -> HTTPCall:
        config, client = self.config, self._client
        endpoint = self._metadata["token_endpoint"]
        form: dict[str, str] = {}
        if self._refreshing:
            assert self.tokens is not None and self.tokens.refresh_token is not None
            form = {"grant_type": "refresh_token", "refresh_token": self.tokens.refresh_token}
            client = client or self._known_client() or self._metadata_document_client()
        elif config.grant is Grant.AUTHORIZATION_CODE:
            form = {
                "grant_type": "authorization_code",
                "code": self._code,
                "redirect_uri": config.redirect_uri,
                "code_verifier": self._verifier,
            }
        elif config.grant is Grant.CLIENT_CREDENTIALS:
            form = {"grant_type": "client_credentials"}
        else:
            exchanged = config.grant is Grant.TOKEN_EXCHANGE
            assertion = self._assertion if exchanged else config.assertion
            if not assertion:
                raise LocalProtocolError("a JWT bearer grant needs an assertion")
            form = {"grant_type": Grant.JWT_BEARER.value, "assertion": assertion}
        if not self._refreshing and config.grant is not Grant.AUTHORIZATION_CODE:
            scope = self._scope()
            if scope:
                form["scope"] = scope
        form["resource"] = self._resource
        headers: dict[str, str] = {}
        if client is not None:
            authenticate(
                client,
                auth_method(client, self._metadata, bool(config.private_key)),
                form,
                headers,
                private_key=config.private_key,
                algorithm=config.signing_algorithm,
                audience=self._issuer,
                now=now,
                jti=lambda: random_string(self.entropy(16)),
            )
        if self._use_dpop and self._dpop_key is not None:
            headers["dpop"] = dpop_proof(
                self._dpop_key,
                "POST",
                endpoint,
                now=now,
                jti=random_string(self.entropy(16)),
                nonce=self._as_nonce,
            )
        return form_call(endpoint, form, headers)

    def _on_token(self, reply: HTTPReply, now: float) -> None:
        document = json_object(reply)
        nonce = reply.headers.get("dpop-nonce")
        if nonce:
            self._as_nonce = nonce
        if (
            reply.status == 400
            and document is not None
            and document.get("error") == "use_dpop_nonce"
            and nonce
            and self._nonce_retries < 1
        ):
            self._nonce_retries += 1
            self._go(S.TOKEN)
            return
        previous = self.tokens.refresh_token if self.tokens and self._refreshing else None
        tokens = (
            token_set(
                document,
                now,
                requested=self._requested,
                issuer=self._issuer,
                previous_refresh=previous,
            )
            if reply.status == 200 and document is not None
            else None
        )
        if tokens is None:
            if self._refreshing:
                # A refused refresh token: start over with a full flow.
                self._refreshing = False
                self.tokens = None
                self.changed += 1
                self._urls = prm_urls(self.server_url, self._challenge.resource_metadata)
                self._go(S.RESOURCE_METADATA)
                return
            self._fail_with_oauth_error("token request", reply, document)
            return
        self.tokens = tokens
        self._refreshing = False
        self.changed += 1
        self._go(S.DONE)

    def _fail_with_oauth_error(
        self, what: str, reply: HTTPReply, document: dict[str, Any] | None
    ) -> None:
        error = document.get("error") if document else None
        self._fail(oauth_error(what, reply, document), status=reply.status, error=error)
