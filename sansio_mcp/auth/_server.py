"""The resource server's side (RFC 6750, RFC 9728): is a request's bearer token good
enough, the 401/403 answer with its ``WWW-Authenticate`` when it is not, and the
protected resource metadata document."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import attrs

from .. import _json
from ._challenge import format_challenge
from ._discovery import origin_of
from ._dpop_check import NONCE_REQUIRED, DPoPChecker

__all__ = [
    "AccessToken",
    "AuthRefusal",
    "ResourceServer",
    "StaticTokenVerifier",
    "TokenVerifier",
]


@attrs.frozen
class AccessToken:
    """What a verifier learned from a valid token; a handler sees it as ``ctx.auth``.

    ``claims`` are the token's claims (a JWT's payload, an introspection answer);
    ``jkt`` is the thumbprint of the key a DPoP-bound token is bound to (``cnf.jkt``,
    RFC 9449 §6): the request must then carry a DPoP proof signed with that key.
    """

    token: str
    scopes: frozenset[str] = frozenset()
    client_id: str | None = None
    subject: str | None = None
    expires_at: float | None = None
    claims: Mapping[str, Any] = attrs.field(factory=dict, eq=False, hash=False, repr=False)
    jkt: str | None = None


class TokenVerifier(Protocol):
    """Checks a token: an :class:`AccessToken`, or None when it is not valid (unknown,
    expired, for another audience).  ``verify`` may be ``async`` (the HTTP service
    awaits it).  A verifier that needs HTTP calls made for it (a JWK set to fetch)
    may also have ``next_call(token, now) -> HTTPCall | None`` and
    ``receive_reply(reply | None, now)``: the service makes those calls first."""

    def verify(self, token: str, now: float) -> Any: ...


class StaticTokenVerifier:
    """A fixed set of tokens, each with its scopes (for tests and simple deployments).

    Each token is a principal of its own, its subject ``static-token-N`` (N its place
    in ``tokens``, from 1; never the secret itself): a session opened with one token
    answers no other."""

    def __init__(self, tokens: Mapping[str, Collection[str]]) -> None:
        self.tokens = {token: frozenset(scopes) for token, scopes in tokens.items()}
        self._subjects = {token: f"static-token-{n}" for n, token in enumerate(self.tokens, 1)}

    def verify(self, token: str, now: float) -> AccessToken | None:
        scopes = self.tokens.get(token)
        if scopes is None:
            return None
        return AccessToken(token, scopes, subject=self._subjects[token])


@attrs.frozen
class AuthRefusal:
    """The answer to a request that may not pass: status, headers, JSON body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@attrs.frozen
class ResourceServer:
    """An MCP endpoint protected by bearer tokens.

    ``resource`` is the endpoint's canonical URL; ``authorization_servers`` the issuers
    whose tokens the verifier accepts; ``required_scopes`` what every request needs.
    ``operation_scopes`` what some requests need beyond that, by JSON-RPC method
    (``"resources/read"``) or by method and the name or URI its params name
    (``"tools/call deploy"``, ``"resources/read file:///secret"``): a token without
    them gets 403 ``insufficient_scope`` naming every scope the request needs.
    """

    resource: str
    authorization_servers: Sequence[str]
    verifier: TokenVerifier
    required_scopes: Sequence[str] = ()
    scopes_supported: Sequence[str] | None = None
    resource_name: str | None = None
    operation_scopes: Mapping[str, Sequence[str]] = attrs.field(factory=dict)
    #: Checks the DPoP proofs of DPoP-bound tokens (RFC 9449); its replay cache lives
    #: as long as the resource server.
    dpop: DPoPChecker = attrs.field(factory=DPoPChecker)

    @property
    def metadata_path(self) -> str:
        """Where the metadata is served: the path-aware well-known URI (RFC 9728 §3.1)."""
        path = urlsplit(self.resource).path.rstrip("/")
        return "/.well-known/oauth-protected-resource" + path

    @property
    def metadata_url(self) -> str:
        return origin_of(self.resource) + self.metadata_path

    def metadata_document(self) -> bytes:
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported is not None:
            document["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        return _json.dumps(document).encode("utf-8")

    def bearer_token(self, authorization: str | None) -> str | None:
        """The token of an ``Authorization: Bearer`` header, or None."""
        presented = self.presented_token(authorization)
        return presented[1] if presented is not None and presented[0] == "bearer" else None

    def presented_token(self, authorization: str | None) -> tuple[str, str] | None:
        """``(scheme, token)`` of an ``Authorization: Bearer`` or ``DPoP`` header (the
        scheme lowercased), or None."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        token, scheme = token.strip(), scheme.lower()
        return (scheme, token) if scheme in ("bearer", "dpop") and token else None

    def refusal(
        self,
        status: int,
        error: str | None,
        description: str | None,
        scope: Sequence[str] = (),
    ) -> AuthRefusal:
        params = {
            "error": error,
            "error_description": description,
            "scope": " ".join(scope) or None,
            "resource_metadata": self.metadata_url,
        }
        body = {
            "error": error or "unauthorized",
            "error_description": description or "an access token is required",
        }
        return AuthRefusal(
            status,
            {
                "www-authenticate": format_challenge("Bearer", params),
                "content-type": "application/json",
                "cache-control": "no-store",
            },
            _json.dumps(body).encode("utf-8"),
        )

    def dpop_refusal(self, description: str, now: float) -> AuthRefusal:
        """The 401 for a DPoP-bound token without a good proof (RFC 9449 §7.1), or
        without the server's current nonce (``use_dpop_nonce``, §9)."""
        error = "use_dpop_nonce" if description == NONCE_REQUIRED else "invalid_dpop_proof"
        refusal = self.refusal(401, error, description, self.required_scopes)
        challenge = format_challenge(
            "DPoP",
            {
                "error": error,
                "error_description": description,
                "algs": " ".join(self.dpop.algorithms),
                "resource_metadata": self.metadata_url,
            },
        )
        headers = {**refusal.headers, "www-authenticate": challenge}
        nonce = self.dpop.current_nonce(now)
        if nonce is not None:
            headers["dpop-nonce"] = nonce
        return attrs.evolve(refusal, headers=headers)

    def scopes_for(self, method: str, target: str | None = None) -> list[str]:
        """What a request of ``method`` about ``target`` (a tool or prompt name, a
        resource URI) needs: the global scopes, then the operation's."""
        ops = self.operation_scopes
        extra = [*ops.get(method, ()), *(ops.get(f"{method} {target}", ()) if target else ())]
        return list(dict.fromkeys([*self.required_scopes, *extra]))

    def judge(
        self,
        token: AccessToken | None,
        presented: bool,
        now: float,
        required: Sequence[str] | None = None,
    ) -> AuthRefusal | None:
        """None when the request may pass, else its 401 or 403 answer (RFC 6750 §3.1);
        ``required``: the request's scopes (:meth:`scopes_for`), by default the global ones."""
        required = list(self.required_scopes if required is None else required)
        if not presented:
            return self.refusal(401, None, None, required)
        if token is None or (token.expires_at is not None and now >= token.expires_at):
            return self.refusal(401, "invalid_token", "the access token is not valid", required)
        missing = [s for s in required if s not in token.scopes]
        if missing:
            return self.refusal(
                403, "insufficient_scope", "the token lacks a required scope", required
            )
        return None
