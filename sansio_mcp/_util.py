"""Small shared pieces: the sentinel type."""

from __future__ import annotations

from typing import Any

__all__ = ["Sentinel"]


class Sentinel(type):
    """A class that is its own type, so ``type(x) is x`` and ``match`` both work."""

    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Sentinel:
        assert bases == (Sentinel,)
        v = super().__new__(cls, name, bases, namespace)
        v.__class__ = v  # type: ignore[assignment]
        return v

    def __repr__(self) -> str:
        return self.__name__
