"""Small Trio helpers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["unwrap_single_exception"]


@contextmanager
def unwrap_single_exception() -> Iterator[None]:
    """Re-raise a lone exception out of a nursery's ExceptionGroup.

    Callers of ``async with open_client(...)`` should be able to write
    ``except MCPError``; a group of one says nothing more.
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
