"""``sansio-mcp schemas fetch|where``: the official MCP schemas in the user's cache."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``schemas`` subcommand's options (called by the main parser)."""
    schemas = sub.add_parser(
        "schemas",
        help="fetch the official MCP schemas (pinned, checked) or show where they are found",
    )
    actions = schemas.add_subparsers(dest="schemas_action", required=True)
    fetch = actions.add_parser(
        "fetch",
        help="download each revision's schema.json (and the tasks extension's) at pinned "
        "commits, check its SHA-256, store it in the cache",
    )
    fetch.add_argument("names", nargs="*", metavar="NAME", help="only these (default: all)")
    fetch.add_argument("--dest", metavar="DIR", help="store here instead of the user's cache")
    fetch.add_argument(
        "--source",
        metavar="URL",
        help="a mirror laid out as OWNER/REPO/COMMIT/PATH (default: raw.githubusercontent.com)",
    )
    fetch.add_argument("--timeout", type=float, default=30.0, help="seconds per download")
    fetch.add_argument("--force", action="store_true", help="download even what is present")
    where = actions.add_parser("where", help="print where each revision's schema is found")
    where.add_argument("--schema-dir", metavar="DIR", help="look here first (as check does)")


def run(args: argparse.Namespace) -> int:
    if args.schemas_action == "fetch":
        return _fetch(args)
    return _where(args)


def _fetch(args: argparse.Namespace) -> int:
    from sansio_mcp_testing.schema_fetch import DEFAULT_SOURCE, fetch_schemas

    results = fetch_schemas(
        Path(args.dest) if args.dest else None,
        names=args.names or None,
        source=args.source or DEFAULT_SOURCE,
        timeout=args.timeout,
        force=args.force,
    )
    for result in results:
        line = f"{result.status:8} {result.name:16} {result.path}"
        if result.status == "failed":
            print(f"{line}\n         {result.detail}", file=sys.stderr)
        else:
            print(line)
    return 1 if any(r.status == "failed" for r in results) else 0


def _where(args: argparse.Namespace) -> int:
    from sansio_mcp_testing.schemas import (
        FETCH_COMMAND,
        SCHEMA_NAMES,
        find_schema,
        schema_search_path,
    )

    places = schema_search_path(args.schema_dir)
    missing = 0
    for name in SCHEMA_NAMES:
        path = find_schema(name, args.schema_dir)
        if path is None:
            missing += 1
            print(f"{name:16} missing")
            continue
        label = next(
            (label for label, d in places if (d / name / "schema.json").resolve() == path), "?"
        )
        print(f"{name:16} {path}  ({label})")
    print("searched: " + ", ".join(f"{label} {d}" for label, d in places), file=sys.stderr)
    if missing:
        print(f"{missing} missing: run `{FETCH_COMMAND}`", file=sys.stderr)
    return 1 if missing else 0
