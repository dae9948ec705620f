"""Sealed ``requestState`` for MRTR: the server's state rides with the client,
so it must come back untampered and fresh.

The token is ``base64url(payload) "." base64url(HMAC-SHA256(key, payload))``.
The payload binds an expiry and, optionally, the request it belongs to
(method plus a digest of its params), so a token cannot be replayed against
another request.  Time is passed in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from ._errors import InvalidParams

__all__ = ["RequestStateSealer", "request_binding"]

# Params that change between MRTR rounds and so are not part of a request's identity.
_ROUND_FIELDS = ("_meta", "inputResponses", "requestState")


def request_binding(method: str, params: dict[str, Any]) -> str:
    """A digest naming one logical request: its method and its stable params."""
    stable = {k: v for k, v in params.items() if k not in _ROUND_FIELDS}
    text = json.dumps([method, stable], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RequestStateSealer:
    """Seal and open ``requestState`` tokens with an application key."""

    def __init__(self, key: bytes, *, ttl: float = 600.0) -> None:
        if len(key) < 16:
            raise ValueError("the requestState key must be at least 16 bytes")
        self._key = key
        self.ttl = ttl

    def seal(self, data: Any, *, now: float, binding: str | None = None) -> str:
        """A token carrying ``data`` (any JSON value) until ``now + ttl``."""
        payload = json.dumps(
            {"d": data, "exp": now + self.ttl, "b": binding}, separators=(",", ":")
        ).encode("utf-8")
        mac = hmac.new(self._key, payload, hashlib.sha256).digest()
        return f"{_b64(payload)}.{_b64(mac)}"

    def unseal(self, token: Any, *, now: float, binding: str | None = None) -> Any:
        """The data sealed in ``token``; :class:`InvalidParams` (-32602) if it was
        tampered with, belongs to another request, or has expired."""
        if not isinstance(token, str) or token.count(".") != 1:
            raise InvalidParams(message="requestState is malformed")
        encoded, _, signature = token.partition(".")
        try:
            payload = _unb64(encoded)
            mac = _unb64(signature)
        except (ValueError, TypeError):
            raise InvalidParams(message="requestState is malformed") from None
        expected = hmac.new(self._key, payload, hashlib.sha256).digest()
        if not hmac.compare_digest(mac, expected):
            raise InvalidParams(message="requestState failed its integrity check")
        body = json.loads(payload)
        if body.get("b") != binding:
            raise InvalidParams(message="requestState belongs to a different request")
        if not isinstance(body.get("exp"), (int, float)) or now > body["exp"]:
            raise InvalidParams(message="requestState has expired; start the request again")
        return body.get("d")
