"""Small shared pieces: the sentinel type, unwrapping a task group's lone error, and a
package's names imported on first use."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["Sentinel", "imported_when_called", "lazy_names", "unwrap_single_exception"]


def lazy_names(owner: str, homes: Mapping[str, tuple[str, ...]]) -> None:
    """Make the module named ``owner`` import each name of ``homes`` (module -> names,
    relative to ``owner``'s package) from its module when first used, then keep it.

    A program pays at import only for the modules it uses (import time, issue 37).  The
    module's ``__getattr__`` and ``__dir__`` are set here, out of the type checker's
    sight, so that it still reports a name the module does not have.
    """
    namespace = sys.modules[owner]
    home_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, namespace.__package__), name)
        setattr(namespace, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(namespace), *home_of})

    namespace.__getattr__ = __getattr__  # type: ignore[method-assign]
    namespace.__dir__ = __dir__  # type: ignore[method-assign]


def imported_when_called(module: str, name: str) -> Callable[..., Any]:
    """A stand-in for the function ``module.name`` that imports ``module`` when first
    called (an adapter's transports a program may never use: HTTP, SSE, WebSocket)."""

    def call(*args: Any, **options: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **options)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f":func:`{module}.{name}`, imported when first called."
    return call


class Sentinel(type):
    """A class that is its own type, so ``type(x) is x`` and ``match`` both work."""

    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Sentinel:
        assert bases == (Sentinel,)
        v = super().__new__(cls, name, bases, namespace)
        v.__class__ = v  # type: ignore[assignment]
        return v

    def __repr__(self) -> str:
        return self.__name__


@contextmanager
def unwrap_single_exception() -> Iterator[None]:
    """Re-raise a lone exception out of a task group's (nursery's) ExceptionGroup.

    Callers of ``async with open_client(...)`` should be able to write
    ``except MCPError`` on either backend; a group of one says nothing more.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from group
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found.extend(_leaves(exc))
        else:
            found.append(exc)
    return found
