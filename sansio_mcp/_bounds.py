"""What a configurable bound may be: the checks the setters and constructors of the
transports' limits share (each raises its own ``ValueError`` naming the keyword)."""

from __future__ import annotations

import math
import sys

__all__ = ["seconds", "whole"]


def whole(value: object, least: int) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``least`` and at most
    ``sys.maxsize`` (a larger one fits no container's size)."""
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= sys.maxsize


def seconds(value: object, *, positive: bool = False) -> bool:
    """Whether ``value`` is a finite number (not a bool) of seconds, at least 0
    (above 0 when ``positive``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        number = float(value)  # an int past a float's range is no number of seconds
    except OverflowError:
        return False
    return (0 < number if positive else 0 <= number) and number < math.inf
