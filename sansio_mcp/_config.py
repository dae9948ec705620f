"""What the JSON config files of the gateway and the A2A bridge share: one error
type, and the check that a config object holds only the keys it may."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ConfigError", "reject_unknown_keys"]


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
