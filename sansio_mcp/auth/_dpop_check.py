"""The resource server's check of a DPoP proof (RFC 9449 §4.3, §7): the proof a client
sends with a DPoP-bound token is signed by the key the token is bound to (``cnf.jkt``),
for this request (``htm``, ``htu``), recently (``iat``), for this token (``ath``), and
only once (``jti``).  PyJWT checks the signature; the time comes in as a number."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._crypto import _jwt, jwk_thumbprint
from ._pkce import b64url

__all__ = [
    "DEFAULT_DPOP_ALGORITHMS",
    "NONCE_REQUIRED",
    "REPLAYED",
    "DPoPChecker",
    "normalize_htu",
]

#: What :meth:`DPoPChecker.check` says of a proof without the server's current nonce:
#: the answer is then ``use_dpop_nonce`` with a ``DPoP-Nonce`` header (RFC 9449 §9).
NONCE_REQUIRED = "the DPoP proof lacks the resource server's current nonce"

#: What :meth:`DPoPChecker.check` (or a shared replay cache) says of a proof seen before.
REPLAYED = "the DPoP proof was used before"

#: The asymmetric algorithms a proof may be signed with (never ``none`` or HMAC).
DEFAULT_DPOP_ALGORITHMS: tuple[str, ...] = ("ES256", "ES384", "RS256", "PS256", "EdDSA")
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_htu(url: str) -> str:
    """``url`` as RFC 9449 §4.3 compares it: no query or fragment, lowercase scheme and
    host, no default port (RFC 3986 §6.2.2-6.2.3)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", "", ""))


def _same_htu(htu: Any, url: str) -> bool:
    try:
        return isinstance(htu, str) and normalize_htu(htu) == normalize_htu(url)
    except ValueError:  # a port that is not a number
        return False


class DPoPChecker:
    """Checks DPoP proofs and remembers their ``jti`` values.

    ``iat_window``: how far (seconds) a proof's ``iat`` may be from now, either way;
    ``replay_window``: how long a ``jti`` is remembered (at least ``2 * iat_window``,
    so that a proof is refused as replayed for as long as its ``iat`` is acceptable).
    ``nonce_secret`` (random bytes the application supplies) makes the server require
    its own nonces (RFC 9449 §9): each is good for one ``nonce_lifetime`` period and the
    next, and is derived from the secret and the time, so nothing is stored.
    """

    def __init__(
        self,
        algorithms: Sequence[str] = DEFAULT_DPOP_ALGORITHMS,
        *,
        iat_window: float = 60.0,
        replay_window: float | None = None,
        max_remembered: int = 100_000,
        nonce_secret: bytes | None = None,
        nonce_lifetime: float = 300.0,
    ) -> None:
        if iat_window <= 0 or nonce_lifetime <= 0:
            raise ValueError("iat_window and nonce_lifetime must be positive")
        if nonce_secret is not None and len(nonce_secret) < 16:
            raise ValueError("nonce_secret needs at least 16 random bytes")
        self.nonce_secret = nonce_secret
        self.nonce_lifetime = nonce_lifetime
        self.algorithms = tuple(algorithms)
        self.iat_window = iat_window
        self.replay_window = max(replay_window or 0.0, 2 * iat_window)
        self.max_remembered = max_remembered
        self._seen: dict[str, float] = {}

    def _nonce(self, period: int) -> str:
        assert self.nonce_secret is not None
        mac = hmac.new(self.nonce_secret, str(period).encode("ascii"), hashlib.sha256)
        return f"{period}.{b64url(mac.digest()[:16])}"

    def current_nonce(self, now: float) -> str | None:
        """The nonce proofs should carry now (None: nonces are not required)."""
        if self.nonce_secret is None:
            return None
        return self._nonce(int(now // self.nonce_lifetime))

    def _nonce_ok(self, nonce: Any, now: float) -> bool:
        if self.nonce_secret is None:
            return True
        if not isinstance(nonce, str):
            return False
        period = int(now // self.nonce_lifetime)
        given = nonce.encode("utf-8", "replace")  # compare_digest takes ASCII str only
        return any(
            hmac.compare_digest(given, self._nonce(p).encode("ascii")) for p in (period, period - 1)
        )

    def check(
        self,
        proof: str | None,
        *,
        method: str,
        url: str,
        access_token: str | None,
        jkt: str | None,
        now: float,
        remember: bool = True,
    ) -> str | None:
        """None when ``proof`` is good for this request, else why not (for the
        ``error_description`` of an ``invalid_dpop_proof`` answer).  At a token
        endpoint ``access_token`` and ``jkt`` are None: no ``ath``, no binding yet.
        ``remember=False``: the ``jti`` is neither checked nor kept here, as a replay
        cache shared by replicas has judged it (see :meth:`replay_key`)."""
        if not proof:
            return "a DPoP proof is required with a DPoP-bound token"
        if "," in proof:
            return "exactly one DPoP proof is allowed"
        jwt = _jwt()
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.InvalidTokenError:
            return "the DPoP proof is not a JWT"
        if header.get("typ") != "dpop+jwt":
            return "the DPoP proof's typ is not dpop+jwt"
        alg = header.get("alg")
        if alg not in self.algorithms:
            return f"the DPoP proof's algorithm {alg!r} is not accepted"
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or _PRIVATE_MEMBERS & jwk.keys():
            return "the DPoP proof's jwk header is missing or holds a private key"
        try:
            key = jwt.PyJWK(jwk, alg)
            claims: dict[str, Any] = jwt.decode(
                proof,
                key.key,
                algorithms=[alg],
                # Time is checked below against the ``now`` passed in.
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False},
            )
            thumbprint = jwk_thumbprint(jwk)
        except Exception:  # PyJWT and cryptography raise many kinds for a bad key
            return "the DPoP proof's signature or key is not valid"
        jti = claims.get("jti")
        iat = claims.get("iat")
        if not isinstance(jti, str) or not jti:
            return "the DPoP proof has no jti"
        if claims.get("htm") != method.upper():
            return "the DPoP proof's htm is not this request's method"
        if not _same_htu(claims.get("htu"), url):
            return "the DPoP proof's htu is not this request's URL"
        if isinstance(iat, bool) or not isinstance(iat, (int, float)):
            return "the DPoP proof has no iat"
        if abs(now - iat) > self.iat_window:
            return "the DPoP proof's iat is outside the accepted window"
        if access_token is not None:
            expected_ath = b64url(hashlib.sha256(access_token.encode("utf-8")).digest())
            if claims.get("ath") != expected_ath:
                return "the DPoP proof's ath does not match the access token"
        if jkt is not None and thumbprint != jkt:
            return "the DPoP proof's key is not the key the token is bound to"
        if not self._nonce_ok(claims.get("nonce"), now):
            return NONCE_REQUIRED
        return self._remember(jti, now) if remember else None

    def replay_key(self, proof: str | None, jkt: str) -> str | None:
        """The key under which a replay cache shared by replicas remembers ``proof``
        (sent with a token bound to ``jkt``) for :attr:`replay_window` seconds: its
        ``jti`` (read without checking the proof, which :meth:`check` does after),
        hashed with ``jkt`` so that a caller fills only its own key's space, in bounded
        keys.  None when the proof has no ``jti`` to read (:meth:`check` refuses it)."""
        if not proof or "," in proof:
            return None
        jwt = _jwt()
        try:
            claims = jwt.decode(proof, options={"verify_signature": False})
        except jwt.InvalidTokenError:
            return None
        jti = claims.get("jti") if isinstance(claims, dict) else None
        if not isinstance(jti, str) or not jti:
            return None
        digest = hashlib.sha256(f"{jkt}\n{jti}".encode("utf-8", "surrogatepass")).digest()
        return "dpop-jti:" + b64url(digest)

    def _remember(self, jti: str, now: float) -> str | None:
        seen = self._seen
        if seen.get(jti, -1.0) > now:
            return REPLAYED
        if len(seen) >= self.max_remembered:
            for old in [j for j, until in seen.items() if until <= now]:
                del seen[old]
            if len(seen) >= self.max_remembered:
                # Full of live entries: refuse rather than forget one (no replay window).
                return "too many recent DPoP proofs; try again later"
        seen[jti] = now + self.replay_window
        return None
