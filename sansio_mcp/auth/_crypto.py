"""The JWTs a client signs: ``private_key_jwt`` client assertions (RFC 7523 §2.2) and
DPoP proofs (RFC 9449 §4), on PyJWT (``pip install sansio-mcp[auth]``).

PyJWT is imported only here and only when a JWT is needed, so the rest of the
core imports without it.  Times and ``jti`` values come in from the caller.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .._errors import LocalProtocolError
from ._pkce import b64url

__all__ = ["DPoPKey", "client_assertion", "dpop_proof", "jwk_thumbprint"]


def _jwt() -> Any:
    try:
        import jwt
    except ImportError as exc:
        raise LocalProtocolError(
            "signing JWTs needs PyJWT with cryptography: pip install 'sansio-mcp[auth]'"
        ) from exc
    return jwt


class DPoPKey:
    """The key pair a client proves possession of (ES256 on P-256 by default).

    ``private_key`` is a ``cryptography`` private key or PEM text; None makes a new key.
    """

    def __init__(self, private_key: Any = None, algorithm: str = "ES256") -> None:
        jwt = _jwt()
        from cryptography.hazmat.primitives.asymmetric import ec

        if private_key is None:
            private_key = ec.generate_private_key(ec.SECP256R1())
        elif isinstance(private_key, (str, bytes)):
            from cryptography.hazmat.primitives.serialization import load_pem_private_key

            pem = private_key.encode() if isinstance(private_key, str) else private_key
            private_key = load_pem_private_key(pem, password=None)
        self.private_key = private_key
        self.algorithm = algorithm
        algorithms = jwt.algorithms.get_default_algorithms()
        public = algorithms[algorithm].to_jwk(private_key.public_key(), as_dict=True)
        #: The public JWK (no private members), as the proof's ``jwk`` header carries it.
        self.public_jwk: dict[str, Any] = {
            k: v for k, v in public.items() if k in ("kty", "crv", "x", "y", "n", "e")
        }

    @property
    def thumbprint(self) -> str:
        return jwk_thumbprint(self.public_jwk)

    def private_pem(self) -> str:
        """The private key as unencrypted PKCS#8 PEM (what a token store keeps; the
        constructor takes it back)."""
        from cryptography.hazmat.primitives import serialization

        pem: bytes = self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return pem.decode("ascii")


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK."""
    jwt = _jwt()
    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    required = members.get(jwk.get("kty", ""))
    if required is None:
        raise LocalProtocolError(f"unsupported JWK key type {jwk.get('kty')!r}")
    canonical = jwt.utils.force_bytes(
        "{" + ",".join(f'"{name}":"{jwk[name]}"' for name in required) + "}"
    )
    return b64url(hashlib.sha256(canonical).digest())


def dpop_proof(
    key: DPoPKey,
    method: str,
    url: str,
    *,
    now: float,
    jti: str,
    nonce: str | None = None,
    access_token: str | None = None,
) -> str:
    """A DPoP proof for one request: ``htu`` is ``url`` without query or fragment, and
    ``ath`` binds it to ``access_token`` when one is presented (RFC 9449 §4.2)."""
    htu = url.split("#", 1)[0].split("?", 1)[0]
    claims: dict[str, Any] = {"jti": jti, "htm": method.upper(), "htu": htu, "iat": int(now)}
    if nonce is not None:
        claims["nonce"] = nonce
    if access_token is not None:
        claims["ath"] = b64url(hashlib.sha256(access_token.encode("ascii")).digest())
    headers = {"typ": "dpop+jwt", "jwk": key.public_jwk}
    return str(_jwt().encode(claims, key.private_key, algorithm=key.algorithm, headers=headers))


def client_assertion(
    private_key: Any,
    algorithm: str,
    *,
    client_id: str,
    audience: str,
    now: float,
    jti: str,
    lifetime: float = 300.0,
) -> str:
    """A ``private_key_jwt`` assertion (RFC 7523 §3): ``iss`` and ``sub`` are the client,
    ``aud`` the authorization server's issuer; ``private_key`` is PEM text or a key."""
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": int(now),
        "exp": int(now + lifetime),
        "jti": jti,
    }
    return str(_jwt().encode(claims, private_key, algorithm=algorithm))
