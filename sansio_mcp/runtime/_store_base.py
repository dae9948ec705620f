"""What the stores contract (:mod:`._stores`) and its Redis implementation
(:mod:`._redis`) both need: the error and the key names."""

from __future__ import annotations

__all__ = ["StoreUnavailable", "namespaced"]


class StoreUnavailable(Exception):
    """The shared store cannot be reached or refused a command.  ``store`` names it
    (``redis://HOST:PORT/DB``) and the message says what failed; callers turn it
    into a clear error for the request at hand and try again on the next one."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(f"the store {store} is unavailable: {message}")
        self.store = store


def namespaced(namespace: str, *parts: str) -> str:
    """A key or channel name of a deployment: ``namespace:part:part``."""
    return ":".join((namespace, *parts))
