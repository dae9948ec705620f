"""Argument types shared by the commands."""

from __future__ import annotations

import argparse

__all__ = ["port_number"]


def port_number(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535: a larger one must not wrap around."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0: any free one)")
    return port
