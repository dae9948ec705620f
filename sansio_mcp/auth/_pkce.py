"""PKCE (RFC 7636) with S256, and the random strings a flow needs, from injected bytes."""

from __future__ import annotations

import base64
import hashlib

__all__ = ["b64url", "code_challenge", "random_string"]


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def random_string(entropy: bytes) -> str:
    """A verifier, ``state`` or ``jti`` from random bytes: 32 bytes give 43 characters,
    inside the 43..128 of RFC 7636 §4.1."""
    return b64url(entropy)


def code_challenge(verifier: str) -> str:
    """The S256 ``code_challenge`` of ``verifier``."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())
