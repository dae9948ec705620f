"""Names kept for one release after they moved: a class lists each old name with
its new place (``old = Moved("new.path")``), and using the old one warns."""

from __future__ import annotations

import warnings
from operator import attrgetter
from typing import Any

__all__ = ["Moved"]


class Moved:
    """A deprecated attribute or method that now lives at ``path`` (dotted, from
    the instance: ``"sessions.end"``).  Reading it (a method is read to be called)
    or setting it emits :class:`DeprecationWarning` naming the new spelling, then
    reads or sets ``path``; ``super().old`` works too, as it is a descriptor."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.old = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = f"{owner.__name__}.{name}"

    def _warn(self) -> None:
        # stacklevel 3: the warning names the line that used the old name.
        message = f"{self.old} is deprecated; use .{self.path} instead"
        warnings.warn(message, DeprecationWarning, stacklevel=3)

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        self._warn()
        return attrgetter(self.path)(instance)

    def __set__(self, instance: object, value: Any) -> None:
        self._warn()
        parent, _, name = self.path.rpartition(".")
        setattr(attrgetter(parent)(instance) if parent else instance, name, value)
