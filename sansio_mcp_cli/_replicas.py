"""The options every serving command shares for running as one of N replicas behind a
load balancer: ``--store``, ``--state-key-file``, ``--replica-id`` (docs/deployment.md)."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from sansio_mcp import parse_state_keys
from sansio_mcp.runtime import (
    Stores,
    StoreUnavailable,
    default_replica_id,
    open_stores,
)

__all__ = [
    "ReplicaOptions",
    "StartRefused",
    "add_replica_arguments",
    "guarded",
    "replica_options",
    "serve_with_stores",
    "store_url",
]

#: The largest ``--state-key-file`` read (a ring is a few lines; more is a wrong file).
MAX_KEY_FILE_BYTES = 64 * 1024
#: What ``--store`` accepts, said the same way wherever it is refused.
STORE_FORMS = "'memory' or 'redis://HOST:PORT/DB' (e.g. redis://127.0.0.1:6379/0)"


def store_url(text: str) -> str:
    """``--store``: ``memory`` or a ``redis://`` URL (:class:`RedisAddress`'s forms);
    anything else is refused (exit 2) saying what is accepted."""
    if text == "memory":
        return text
    if not text.startswith("redis://"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a store: give {STORE_FORMS}")
    from sansio_mcp.runtime import RedisAddress

    try:
        RedisAddress.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'memory')") from None
    return text


def store_name(url: str) -> str:
    """How messages name the store: its URL without a password."""
    if url == "memory":
        return url
    from sansio_mcp.runtime import RedisAddress

    return RedisAddress.parse(url).name


def add_replica_arguments(parser: argparse.ArgumentParser) -> None:
    """``--store``, ``--state-key-file`` and ``--replica-id`` on a serving command."""
    parser.add_argument(
        "--store",
        type=store_url,
        default="memory",
        metavar="memory|redis://HOST:PORT/DB",
        help="where state shared between replicas lives (default: memory, this process "
        "alone); a Redis store (redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], see "
        "docs/deployment.md) needs --state-key-file",
    )
    parser.add_argument(
        "--state-key-file",
        metavar="PATH",
        help="the requestState key ring: one key a line, hex or base64, at least 32 bytes "
        "each, the first seals and every one unseals (default: a random key, this process "
        "alone); give every replica the same file",
    )
    parser.add_argument(
        "--replica-id",
        metavar="NAME",
        help="this process's name among replicas (default: HOST:PID)",
    )


class StartRefused(Exception):
    """The command cannot start as configured; the message says why (exit 2)."""


@attrs.frozen
class ReplicaOptions:
    store: str = "memory"
    state_keys: tuple[bytes, ...] | None = None
    replica_id: str = attrs.field(factory=default_replica_id)


def read_state_key_file(path: str) -> tuple[bytes, ...]:
    """The key ring in ``path``; StartRefused naming the file (and line) when it cannot
    be used.  A file others may read is used, with a warning on stderr."""
    try:
        with open(path, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            data = file.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise StartRefused(f"--state-key-file: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_KEY_FILE_BYTES:
        raise StartRefused(
            f"--state-key-file: {path} is over {MAX_KEY_FILE_BYTES} bytes; a key file holds "
            "one key a line (a ring of a few)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise StartRefused(f"--state-key-file: {path} is not text (one key a line)") from None
    try:
        keys = parse_state_keys(text, source=path)
    except ValueError as exc:
        raise StartRefused(f"--state-key-file: {exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        print(
            f"warning: --state-key-file {path} may be read by others (mode "
            f"{stat.S_IMODE(mode):04o}): chmod 600 {path}",
            file=sys.stderr,
            flush=True,
        )
    return tuple(keys)


def replica_options(args: argparse.Namespace) -> ReplicaOptions:
    """The replica options of a parsed command line; StartRefused when a shared store
    comes without a key file (replicas could not open each other's requestState)."""
    keys = read_state_key_file(args.state_key_file) if args.state_key_file else None
    if args.store != "memory" and keys is None:
        raise StartRefused(
            f"--store {store_name(args.store)} is shared between replicas, so they must share the "
            "requestState key ring too: give --state-key-file PATH (the same file to every "
            "replica; see docs/deployment.md)"
        )
    if args.replica_id is not None and not args.replica_id.strip():
        raise StartRefused("--replica-id must not be empty")
    return ReplicaOptions(args.store, keys, args.replica_id or default_replica_id())


async def serve_with_stores(
    backend: Any, options: ReplicaOptions, serve: Callable[[Stores], Awaitable[None]]
) -> None:
    """Open the stores ``options`` name, then ``serve(stores)`` until cancelled."""
    async with open_stores(options.store, backend, replica_id=options.replica_id) as stores:
        await serve(stores)


def store_failure(failure: BaseException) -> StoreUnavailable | None:
    """The StoreUnavailable that ended a command, if that is what ended it."""
    if isinstance(failure, StoreUnavailable):
        return failure
    if isinstance(failure, BaseExceptionGroup):
        matched, rest = failure.split(StoreUnavailable)
        leaf: BaseException | None = matched
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        if rest is None and isinstance(leaf, StoreUnavailable):
            return leaf
    return None


def guarded(command: str, run: Callable[[], int]) -> int:
    """``run()``, with a start refused said plainly (exit 2) and a store that cannot be
    reached named (exit 1)."""
    try:
        return run()
    except StartRefused as exc:
        print(f"sansio-mcp {command}: {exc}", file=sys.stderr)
        return 2
    except (StoreUnavailable, BaseExceptionGroup) as exc:
        failure = store_failure(exc)
        if failure is None:
            raise
        print(f"sansio-mcp {command}: {failure}", file=sys.stderr)
        return 1
