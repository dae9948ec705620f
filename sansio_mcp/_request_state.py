"""Sealed ``requestState`` for MRTR: the server's state rides with the client,
so it must come back untampered, fresh, and from the one it was sealed for.

The token is ``kid "." base64url(payload) "." base64url(HMAC-SHA256(key, kid "." payload))``.
``kid`` names the key that sealed it (a digest of the key: it tells which key of
the ring to check with, and nothing of the key itself).  The payload binds an
expiry, the principal it was sealed for and, optionally, the request it belongs
to (method plus a digest of its params), so a token cannot be replayed by another
principal or against another request.  Time is passed in.

A key ring makes rotation safe across replicas: the first key seals, every key
unseals; put the new key first everywhere, and drop the old one once the states
it sealed have expired.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable
from typing import Any

from ._errors import InvalidParams

__all__ = ["MIN_STATE_KEY_BYTES", "RequestStateSealer", "parse_state_keys", "request_binding"]

# Params that change between MRTR rounds and so are not part of a request's identity.
_ROUND_FIELDS = ("_meta", "inputResponses", "requestState")
#: The shortest key a key file may hold (the Python API accepts 16 bytes, as it did).
MIN_STATE_KEY_BYTES = 32
_KID = re.compile(r"[A-Za-z0-9_-]{11}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def request_binding(method: str, params: dict[str, Any]) -> str:
    """A digest naming one logical request: its method and its stable params."""
    stable = {k: v for k, v in params.items() if k not in _ROUND_FIELDS}
    text = json.dumps([method, stable], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(key: bytes) -> str:
    """A key's public name: 64 bits of a domain-separated digest of it."""
    return _b64(hashlib.sha256(b"sansio-mcp requestState key id\0" + key).digest()[:8])


def parse_state_keys(text: str, *, source: str) -> list[bytes]:
    """The keys of a key file's ``text``: one per line, hex or base64 (standard or
    URL-safe, padding optional), each at least :data:`MIN_STATE_KEY_BYTES` long once
    decoded; blank lines and ``#`` comments are skipped.  ValueError naming ``source``
    and the line for anything else (never quoting the line: it may be a key)."""
    keys: list[bytes] = []
    first_line: dict[bytes, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source} line {number}"
        key = _decode_key(line)
        if key is None:
            raise ValueError(f"{where}: not a key in hex or base64")
        if len(key) < MIN_STATE_KEY_BYTES:
            raise ValueError(
                f"{where}: the key is {len(key)} byte{'' if len(key) == 1 else 's'}; at least "
                f"{MIN_STATE_KEY_BYTES} are needed (make one with `openssl rand -hex 32`)"
            )
        if key in first_line:
            raise ValueError(f"{where}: the same key as line {first_line[key]}")
        first_line[key] = number
        keys.append(key)
    if not keys:
        raise ValueError(f"{source}: no key (one key a line, hex or base64, the first seals)")
    return keys


def _decode_key(line: str) -> bytes | None:
    """``line`` as hex (tried first), else as base64 or base64url; None if neither."""
    if _HEX.fullmatch(line):
        return bytes.fromhex(line)
    mixed = any(c in line for c in "-_") and any(c in line for c in "+/")
    if mixed or not _BASE64.fullmatch(line):
        return None
    body = line.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        return None
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except binascii.Error:
        return None


class RequestStateSealer:
    """Seal and open ``requestState`` tokens with a key ring.

    ``keys``: one key, or several (the first seals, every one unseals, so keys
    rotate without breaking calls in flight); each at least 16 bytes.  A token
    lives ``ttl`` seconds.
    """

    def __init__(self, keys: bytes | Iterable[bytes], *, ttl: float = 600.0) -> None:
        ring = [keys] if isinstance(keys, (bytes, bytearray)) else list(keys)
        if not ring:
            raise ValueError("the requestState key ring is empty: give at least one key")
        self._keys: dict[str, bytes] = {}
        for position, key in enumerate(ring, start=1):
            if not isinstance(key, (bytes, bytearray)):
                raise TypeError(f"requestState key {position} is not bytes")
            if len(key) < 16:
                raise ValueError("the requestState key must be at least 16 bytes")
            kid = key_id(bytes(key))
            if kid in self._keys:
                raise ValueError(f"requestState key {position} repeats an earlier key of the ring")
            self._keys[kid] = bytes(key)
        self._sealing = next(iter(self._keys))
        self.ttl = ttl

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The ring's key ids, the sealing key's first (safe to log: no key material)."""
        return tuple(self._keys)

    def seal(
        self, data: Any, *, now: float, binding: str | None = None, principal: str | None = None
    ) -> str:
        """A token carrying ``data`` (any JSON value) until ``now + ttl``, for ``principal``
        alone (None: whoever presents it, as before principals)."""
        payload = json.dumps(
            {"d": data, "exp": now + self.ttl, "b": binding, "p": principal},
            separators=(",", ":"),
        ).encode("utf-8")
        kid = self._sealing
        signed = f"{kid}.{_b64(payload)}"
        mac = hmac.new(self._keys[kid], signed.encode("ascii"), hashlib.sha256).digest()
        return f"{signed}.{_b64(mac)}"

    def unseal(
        self,
        token: Any,
        *,
        now: float,
        binding: str | None = None,
        principal: str | None = None,
    ) -> Any:
        """The data sealed in ``token``; :class:`InvalidParams` (-32602) if it was
        tampered with, sealed by a key not in the ring, sealed for another principal,
        belongs to another request, or has expired."""
        if not isinstance(token, str) or token.count(".") != 2:
            raise InvalidParams(message="requestState is malformed")
        kid, encoded, signature = token.split(".")
        try:
            payload = _unb64(encoded)
            mac = _unb64(signature)
        except (ValueError, TypeError):
            raise InvalidParams(message="requestState is malformed") from None
        key = self._keys.get(kid)
        if key is None:
            known = "" if _KID.fullmatch(kid) is None else f" (key id {kid})"
            raise InvalidParams(
                message="requestState failed its integrity check: it was sealed with a key "
                f"this server does not hold{known}; replicas must share their state key ring"
            )
        expected = hmac.new(key, f"{kid}.{encoded}".encode("ascii"), hashlib.sha256).digest()
        if not hmac.compare_digest(mac, expected):
            raise InvalidParams(message="requestState failed its integrity check")
        body = json.loads(payload)
        if body.get("p") != principal:
            raise InvalidParams(
                message="requestState was sealed for another principal: only the one "
                "whose request made it may continue it"
            )
        if body.get("b") != binding:
            raise InvalidParams(message="requestState belongs to a different request")
        if not isinstance(body.get("exp"), (int, float)) or now > body["exp"]:
            raise InvalidParams(message="requestState has expired; start the request again")
        return body.get("d")
