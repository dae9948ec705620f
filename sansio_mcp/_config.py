"""What the JSON config files of the gateway and the bridges share: one error
type, reading the file's JSON, the check that a config object holds only the keys
it may, and the check of an upstream's URL."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ConfigError", "check_url", "load_json", "reject_unknown_keys"]


class ConfigError(ValueError):
    """The configuration is malformed; the message names the key at fault."""


def reject_unknown_keys(
    value: Mapping[str, Any], known: Iterable[str], where: str = "", *, context: str = ""
) -> None:
    """Raise :class:`ConfigError` naming every key of ``value`` not in ``known``
    (``where``: the object's path in the config; ``context``: what the keys
    depend on, as a connector's transport), sorted, each quoted."""
    unknown = sorted(set(value) - set(known))
    if unknown:
        at = f"{where} has" if where else "the config has"
        of = f" for {context}" if context else ""
        raise ConfigError(f"{at} unknown key(s){of}: {', '.join(map(repr, unknown))}")


def load_json(text: str | bytes) -> Any:
    """The JSON value of a config file's text; :class:`ConfigError` when it is not
    JSON, or when an object gives a key twice (JSON would keep the last one, and a
    second connector or agent of one name would vanish without a word)."""
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"the config is not JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the config is not UTF-8 text: {exc}") from None


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ConfigError(f"{key!r} is given twice in one object")
        seen[key] = value
    return seen


def check_url(url: str, where: str) -> None:
    """Raise :class:`ConfigError` unless ``url`` names a host, and a port in range if
    any (else every connection to it would fail at run time, the same way)."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises for a port that is not one
    except ValueError:
        raise ConfigError(f"{where} has an invalid port: {url!r}") from None
    if not parts.hostname:
        raise ConfigError(f"{where} has no host: {url!r}")
