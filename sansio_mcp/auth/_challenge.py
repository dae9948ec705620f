"""``WWW-Authenticate`` challenges (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1):
parsed for the client, written for the server."""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

__all__ = ["Challenge", "parse_challenges", "format_challenge"]

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_PARAM = re.compile(rf"\s*({_TOKEN})\s*=\s*({_QUOTED}|{_TOKEN})\s*(,|$)")
_SCHEME = re.compile(rf"\s*({_TOKEN})(?:\s+|\s*$|\s*,)")
_TOKEN68 = re.compile(r"\s*([A-Za-z0-9\-._~+/]+=*)\s*(,|$)")


@attrs.frozen
class Challenge:
    """One challenge: its scheme (lowercased) and its auth-params (names lowercased)."""

    scheme: str
    params: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def scope(self) -> list[str]:
        return self.params.get("scope", "").split()

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")


def _unquote(value: str) -> str:
    if value.startswith('"'):
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def parse_challenges(header: str | None) -> list[Challenge]:
    """Every challenge of a ``WWW-Authenticate`` value; what cannot be parsed ends the list
    (a malformed header yields what came before it, never an exception)."""
    found: list[Challenge] = []
    text = header or ""
    pos = 0
    while pos < len(text):
        if text[pos] in " ,\t":
            pos += 1
            continue
        scheme = _SCHEME.match(text, pos)
        if scheme is None:
            break
        pos = scheme.end()
        params: dict[str, str] = {}
        while pos < len(text):
            param = _PARAM.match(text, pos)
            if param is None:
                # A token68 credential (not used by the schemes we know) or the next scheme.
                token68 = _TOKEN68.match(text, pos)
                if token68 is not None and not params and not _PARAM.match(text, pos):
                    nxt = _SCHEME.match(text, pos)
                    if nxt is None or token68.group(1).endswith("="):
                        pos = token68.end()
                break
            params.setdefault(param.group(1).lower(), _unquote(param.group(2)))
            pos = param.end()
        found.append(Challenge(scheme.group(1).lower(), params))
    return found


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_challenge(scheme: str, params: Mapping[str, str | None]) -> str:
    """``scheme name="value", ...`` (params whose value is None are left out)."""
    parts = [f"{name}={_quote(value)}" for name, value in params.items() if value is not None]
    return scheme + (" " + ", ".join(parts) if parts else "")
