"""A token verifier for JWT access tokens (RFC 9068), on PyJWT: the signature against
the authorization server's keys, ``iss``, ``aud`` (the resource's URL), the time
claims, scopes from ``scope`` or ``scp``, and ``cnf.jkt`` for DPoP-bound tokens.

Sans I/O: keys come from a JWK set the application gives, or from ``jwks_uri``;
then :meth:`JWTVerifier.next_call` says when the set must be fetched (none yet,
older than ``jwks_ttl``, or a token names an unknown ``kid``) and
:meth:`JWTVerifier.receive_reply` takes the answer.  The runtime's HTTP service
makes that call with the library's own HTTP client on its backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import _json
from ._crypto import _jwt
from ._server import AccessToken
from ._types import HTTPCall, HTTPReply

__all__ = ["DEFAULT_JWT_ALGORITHMS", "JWTVerifier", "access_token_from_claims"]

#: Asymmetric algorithms only: an HMAC key would be the key set's public text.
DEFAULT_JWT_ALGORITHMS: tuple[str, ...] = ("RS256", "PS256", "ES256", "ES384", "EdDSA")


def access_token_from_claims(token: str, claims: Mapping[str, Any]) -> AccessToken:
    """An :class:`AccessToken` read from verified claims: scopes from ``scope`` (a
    space-separated string) or ``scp`` (a list or string), the client from
    ``client_id`` or ``azp``, and the DPoP key from ``cnf.jkt``."""
    raw = claims.get("scope", claims.get("scp", ""))
    if isinstance(raw, str):
        scopes = frozenset(raw.split())
    elif isinstance(raw, list):
        scopes = frozenset(s for s in raw if isinstance(s, str))
    else:
        scopes = frozenset()
    client = claims.get("client_id", claims.get("azp"))
    subject = claims.get("sub")
    exp = claims.get("exp")
    cnf = claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    return AccessToken(
        token,
        scopes,
        client_id=client if isinstance(client, str) else None,
        subject=subject if isinstance(subject, str) else None,
        expires_at=float(exp) if isinstance(exp, (int, float)) else None,
        claims=dict(claims),
        jkt=jkt if isinstance(jkt, str) else None,
    )


class JWTVerifier:
    """Verifies JWT access tokens issued by ``issuer`` for ``audience``.

    ``audience`` is the protected resource's URL (a server on an ephemeral port may set
    the attribute once it knows it); ``jwks`` a JWK set (``{"keys": [...]}``) or
    ``jwks_uri`` where to fetch one, cached ``jwks_ttl`` seconds and fetched again for
    an unknown ``kid`` at most every ``refetch_interval`` seconds (so tokens with made-up
    key ids cannot make the server hammer the authorization server).  ``leeway`` is the
    clock skew allowed on ``exp``, ``nbf`` and ``iat``.
    """

    def __init__(
        self,
        issuer: str,
        audience: str | Sequence[str],
        *,
        jwks: Mapping[str, Any] | None = None,
        jwks_uri: str | None = None,
        algorithms: Sequence[str] = DEFAULT_JWT_ALGORITHMS,
        leeway: float = 30.0,
        jwks_ttl: float = 300.0,
        refetch_interval: float = 30.0,
    ) -> None:
        if (jwks is None) == (jwks_uri is None):
            raise ValueError("give exactly one of jwks and jwks_uri")
        self.issuer = issuer
        self.audience = audience
        self.jwks_uri = jwks_uri
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.jwks_ttl = jwks_ttl
        self.refetch_interval = refetch_interval
        self._keys: dict[str | None, Any] = {}
        self._fetched_at: float | None = None
        if jwks is not None:
            self._keys = self._parse_jwks(jwks)

    # The key set ------------------------------------------------------------------------

    @staticmethod
    def _parse_jwks(jwks: Mapping[str, Any]) -> dict[str | None, Any]:
        jwt = _jwt()
        keys: dict[str | None, Any] = {}
        entries = jwks.get("keys")
        if not isinstance(entries, list):
            raise ValueError("a JWK set needs a 'keys' list")
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except Exception:  # an unsupported or malformed key: skip it (RFC 7517 §5)
                continue
            keys[entry.get("kid") if isinstance(entry.get("kid"), str) else None] = key
        return keys

    def _kid(self, token: str) -> str | None:
        jwt = _jwt()
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.InvalidTokenError:
            return None
        return kid if isinstance(kid, str) else None

    def next_call(self, token: str, now: float) -> HTTPCall | None:
        """The request for the key set when ``token`` needs one fetched, else None."""
        if self.jwks_uri is None:
            return None
        fetched = self._fetched_at
        if fetched is not None and now - fetched < self.jwks_ttl:
            if self._kid(token) in self._keys or now - fetched < self.refetch_interval:
                return None
        return HTTPCall("GET", self.jwks_uri, {"accept": "application/json"})

    def receive_reply(self, reply: HTTPReply | None, now: float) -> None:
        """The answer to :meth:`next_call` (None: it could not be fetched).  A failed
        fetch keeps the keys held, and is not retried before ``refetch_interval``."""
        self._fetched_at = now
        if reply is None or reply.status != 200:
            return
        try:
            document = _json.loads(reply.body)
            keys = self._parse_jwks(document)
        except Exception:  # not JSON, not a JWK set: keep what we had
            return
        self._keys = keys

    # Tokens -----------------------------------------------------------------------------

    def verify(self, token: str, now: float) -> AccessToken | None:
        """The token's :class:`AccessToken`, or None when it is not valid here."""
        jwt = _jwt()
        kid = self._kid(token)
        key = self._keys.get(kid)
        if key is None and kid is None and len(self._keys) == 1:
            key = next(iter(self._keys.values()))
        if key is None:
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(self.algorithms),
                audience=self.audience,
                issuer=self.issuer,
                # Time is checked below against the ``now`` passed in, not PyJWT's clock.
                options={
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "require": ["exp", "iss", "aud"],
                },
            )
        except (jwt.PyJWTError, ValueError, TypeError):  # e.g. a key of another type
            return None
        if not self._timely(claims, now):
            return None
        return access_token_from_claims(token, claims)

    def _timely(self, claims: Mapping[str, Any], now: float) -> bool:
        def number(name: str) -> float | None:
            value = claims.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            return float(value)

        exp, nbf, iat = number("exp"), number("nbf"), number("iat")
        if exp is None or now >= exp + self.leeway:
            return False
        if nbf is not None and now < nbf - self.leeway:
            return False
        return iat is None or iat <= now + self.leeway
