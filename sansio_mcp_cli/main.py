"""The ``sansio-mcp`` command line: example-server, inspect, call, demo."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import trio

from sansio_mcp import MCPError, ProtocolError
from sansio_mcp._versions import ALL_REVISIONS
from trio_adapters import Client, open_stdio_client, serve_stdio

from .answers import Answers
from .example_server import build_server

__all__ = ["main"]

SERVER_TRANSPORTS = ("stdio", "http", "sse", "ws")


def _split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Options before ``--``, the server command after it."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sansio-mcp",
        description="A sans-IO Model Context Protocol library: example server and client tools.",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log protocol details to stderr"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    server = sub.add_parser("example-server", help="run the bundled example server")
    server.add_argument("--page-size", type=int, default=100, help="items per list page")
    server.add_argument(
        "--transport",
        choices=SERVER_TRANSPORTS,
        default="stdio",
        help="stdio (default), http (Streamable HTTP at /mcp), sse (legacy HTTP+SSE at /sse), "
        "ws (WebSocket at /mcp)",
    )
    server.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (network transports)"
    )
    server.add_argument(
        "--port", type=int, default=8000, help="port to listen on (0: any free port)"
    )

    version_help = (
        "protocol revision: 'auto' (default: probe server/discover, fall back to the "
        f"handshake), or one of {', '.join(ALL_REVISIONS)}"
    )
    versions = ["auto", *ALL_REVISIONS]
    inspect = sub.add_parser(
        "inspect",
        help="connect to a stdio server and print what it offers, as JSON",
        usage="sansio-mcp inspect [--protocol-version REV] -- COMMAND [ARG...]",
    )
    inspect.add_argument("--protocol-version", choices=versions, default="auto", help=version_help)
    inspect.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    inspect.add_argument(
        "url", nargs="?", help="a server URL (http(s)://, ws://) instead of a command"
    )
    inspect.add_argument(
        "--transport", choices=("sse",), help="use the legacy HTTP+SSE transport for an http URL"
    )

    call = sub.add_parser(
        "call",
        help="call one tool on a stdio server and print the result as JSON",
        usage="sansio-mcp call [--protocol-version REV] [--args JSON] TOOL -- COMMAND [ARG...]",
    )
    call.add_argument("tool", help="the tool's name")
    call.add_argument(
        "url", nargs="?", help="a server URL (http(s)://, ws://) instead of a command"
    )
    call.add_argument(
        "--transport", choices=("sse",), help="use the legacy HTTP+SSE transport for an http URL"
    )
    call.add_argument("--args", default="{}", help="the tool's arguments as a JSON object")
    call.add_argument("--protocol-version", choices=versions, default="auto", help=version_help)
    call.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the result")
    call.add_argument(
        "--elicit",
        action="append",
        default=[],
        metavar="JSON",
        help="content to accept an elicitation with (repeatable, used in order)",
    )
    call.add_argument("--sample", metavar="TEXT", help="the assistant reply to sampling requests")
    call.add_argument(
        "--root", action="append", default=[], metavar="URI", help="a root to offer (repeatable)"
    )

    sub.add_parser("demo", help="a guided tour: our client against the bundled example server")
    return parser


async def _inspect(client: Client, timeout: float) -> dict[str, Any]:
    caps = client.server_capabilities
    report: dict[str, Any] = {
        "protocolVersion": client.protocol_version,
        "serverInfo": client.server_info,
        "capabilities": caps,
        "tools": [],
        "resources": [],
        "resourceTemplates": [],
        "prompts": [],
    }
    with trio.fail_after(timeout * 4):
        if "tools" in caps:
            report["tools"] = await client.list_tools()
        if "resources" in caps:
            report["resources"] = await client.list_resources()
            report["resourceTemplates"] = await client.list_resource_templates()
        if "prompts" in caps:
            report["prompts"] = await client.list_prompts()
    if client.instructions:
        report["instructions"] = client.instructions
    return report


def _dump(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sansio-mcp`` script."""
    options, command = _split_command(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(options)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "example-server":
            trio.run(serve_example, args)
            return 0
        if args.command == "demo":
            from .demo import run_demo

            return trio.run(run_demo)
        if command and len(command) == 1 and _is_url(command[0]) and not args.url:
            args.url, command = command[0], []
        if not command and not args.url:
            print(
                f"sansio-mcp {args.command}: give a server URL, or the server command after --",
                file=sys.stderr,
            )
            return 2
        if args.command == "inspect":
            return trio.run(_run_inspect, command, args)
        if args.command == "call":
            return trio.run(_run_call, command, args)
    except KeyboardInterrupt:
        return 130
    except (MCPError, ProtocolError, OSError, trio.TooSlowError) as exc:
        print(f"sansio-mcp {args.command}: {_describe(exc)}", file=sys.stderr)
        return 1
    return 2  # pragma: no cover - argparse rejects unknown commands


def _describe(exc: BaseException) -> str:
    if isinstance(exc, trio.TooSlowError):
        return "timed out"
    return str(exc) or type(exc).__name__


def _version_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.protocol_version == "auto":
        return {"mode": "auto"}
    return {"protocol_version": args.protocol_version}


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://", "ws://", "wss://"))


def _connect(
    command: list[str], args: argparse.Namespace, **options: Any
) -> AbstractAsyncContextManager[Client]:
    """A client for a command (stdio) or a URL (HTTP, legacy SSE, WebSocket)."""
    options.update(_version_options(args))
    options["initialize_timeout"] = args.timeout
    if not args.url:
        return open_stdio_client(command, **options)
    url: str = args.url
    if url.startswith(("ws://", "wss://")):
        from trio_adapters.websocket import open_ws_client

        return open_ws_client(url, **options)
    if getattr(args, "transport", None) == "sse":
        from trio_adapters.sse import open_sse_client

        return open_sse_client(url, **options)
    from trio_adapters.http_client import open_http_client

    return open_http_client(url, **options)


async def serve_example(args: argparse.Namespace) -> None:
    """Run the example server on the chosen transport."""
    server = build_server(page_size=args.page_size)
    if args.transport == "stdio":
        await serve_stdio(server)
        return
    async with trio.open_nursery() as nursery:
        if args.transport == "http":
            from trio_adapters.http_server import serve_http

            port = await nursery.start(partial(serve_http, server, host=args.host, port=args.port))
            path = "/mcp"
        elif args.transport == "sse":
            from trio_adapters.sse import serve_sse

            port = await nursery.start(partial(serve_sse, server, host=args.host, port=args.port))
            path = "/sse"
        else:
            from trio_adapters.websocket import serve_ws

            port = await nursery.start(partial(serve_ws, server, host=args.host, port=args.port))
            path = "/mcp"
        scheme = "ws" if args.transport == "ws" else "http"
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"sansio-mcp example server: {scheme}://{host}:{port}{path}",
            file=sys.stderr,
            flush=True,
        )


async def _run_inspect(command: list[str], args: argparse.Namespace) -> int:
    async with _connect(command, args) as client:
        _dump(await _inspect(client, args.timeout))
    return 0


async def _run_call(command: list[str], args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        print(f"sansio-mcp call: --args is not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("sansio-mcp call: --args must be a JSON object", file=sys.stderr)
        return 2
    try:
        answers = Answers.from_options(args.elicit, args.sample, args.root)
    except ValueError as exc:
        print(f"sansio-mcp call: {exc}", file=sys.stderr)
        return 2
    async with _connect(command, args, handlers=answers.handlers()) as client:
        result = await client.call_tool(args.tool, arguments, timeout=args.timeout)
    _dump(result)
    return 1 if result.get("isError") else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
