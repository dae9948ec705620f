"""Small shared pieces: the sentinel type, and unwrapping a task group's lone error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Sentinel", "unwrap_single_exception"]


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
