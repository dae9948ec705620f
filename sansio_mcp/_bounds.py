"""What a configurable bound may be: the checks the setters and constructors of the
transports' limits share (each raises its own ``ValueError`` naming the keyword)."""

from __future__ import annotations

import math

__all__ = ["seconds", "whole"]


def whole(value: object, least: int) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def seconds(value: object, *, positive: bool = False) -> bool:
    """Whether ``value`` is a finite number (not a bool) of seconds, at least 0
    (above 0 when ``positive``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return (0 < value if positive else 0 <= value) and value < math.inf
