"""The ``sansio-mcp`` command line: example-server, inspect, call, demo."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from sansio_mcp import (
    ALL_REVISIONS,
    STATELESS_REVISIONS,
    ConnectionClosedError,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    does_not_speak,
)
from sansio_mcp.runtime import TimedOut

from ._args import port_number
from ._explain import explain
from ._parsers import add_a2a_bridge_parser, add_bridge_parser, add_gateway_parser
from ._progress import ProgressDisplay
from ._replicas import add_replica_arguments, guarded, replica_options, serve_with_stores
from ._traffic import Traffic

if TYPE_CHECKING:
    from sansio_mcp.auth import ResourceServer
    from sansio_mcp.runtime import ClientAPI, Server, Stores, TransportBackend

__all__ = ["main"]

logger = logging.getLogger("sansio_mcp_cli")

SERVER_TRANSPORTS = ("stdio", "http", "sse", "ws")
_T = TypeVar("_T")
BACKEND_NAMES = ("asyncio", "trio")
TRANSPORT_PATHS = {"http": "/mcp", "sse": "/sse", "ws": "/mcp"}


def backend_named(name: str) -> TransportBackend:
    """The adapter's backend that ``--backend name`` picks (imported on demand)."""
    if name == "asyncio":
        from asyncio_adapters import BACKEND as asyncio_backend

        return asyncio_backend
    from trio_adapters import BACKEND as trio_backend

    return trio_backend


def _announcer(transport: str, host: str) -> Callable[[int], None]:
    """Tells stderr where a network example server listens, once it is bound."""

    def announce(port: int) -> None:
        scheme = "ws" if transport == "ws" else "http"
        shown = f"[{host}]" if ":" in host else host
        print(
            f"sansio-mcp example server: {scheme}://{shown}:{port}{TRANSPORT_PATHS[transport]}",
            file=sys.stderr,
            flush=True,
        )

    return announce


def _split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Options before ``--``, the server command after it."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sansio-mcp")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``, looked up only when asked (``importlib.metadata`` is slow to load)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sansio-mcp",
        description="A sans-IO Model Context Protocol library: example server and client tools.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log protocol details to stderr, and each JSON-RPC message of inspect and call "
        "(one line each, long ones shortened)",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show program's version number and exit"
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--backend",
        choices=BACKEND_NAMES,
        default="trio",
        help="event loop to run on (default: trio)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    server = sub.add_parser(
        "example-server", parents=[common], help="run the bundled example server"
    )
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
        "--port", type=port_number, default=8000, help="port to listen on (0: any free port)"
    )
    server.add_argument(
        "--auth-token",
        action="append",
        default=[],
        metavar="TOKEN",
        help="protect the http/sse server: accept this bearer token (repeatable); "
        "others get 401 with the protected resource metadata's URL",
    )
    server.add_argument(
        "--auth-issuer",
        action="append",
        default=[],
        metavar="URL",
        help="an authorization server to name in the protected resource metadata",
    )
    server.add_argument(
        "--auth-jwks-uri",
        metavar="URL",
        help="protect the http/sse server with JWT access tokens of the (one) --auth-issuer, "
        "checked against the keys at this URL; needs --auth-resource",
    )
    server.add_argument(
        "--auth-resource",
        metavar="URL",
        help="the server's public URL (e.g. https://mcp.example.com/mcp): the resource in "
        "its metadata and the audience JWTs must name (default: from each request's Host)",
    )
    add_replica_arguments(server)

    inspect = sub.add_parser(
        "inspect",
        parents=[common],
        help="connect to a stdio server and print what it offers, as JSON",
        usage="sansio-mcp inspect [--protocol-version REV] -- COMMAND [ARG...]",
    )
    _add_client_arguments(inspect, timeout=30.0, timeout_help="seconds per request")

    call = sub.add_parser(
        "call",
        parents=[common],
        help="call one tool on a stdio server and print the result as JSON",
        usage="sansio-mcp call [--protocol-version REV] [--args JSON] TOOL -- COMMAND [ARG...]",
    )
    call.add_argument("tool", help="the tool's name")
    _add_client_arguments(call, timeout=60.0, timeout_help="seconds to wait for the result")
    call.add_argument("--args", default="{}", help="the tool's arguments as a JSON object")
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

    demo = sub.add_parser(
        "demo",
        parents=[common],
        help="a guided tour: a scripted A2E agent drives the bundled example server "
        "through the bridge (--mcp: our MCP client tours it directly)",
    )
    demo.add_argument("--mcp", action="store_true", help="the MCP client tour (no bridge) instead")
    add_bridge_parser(sub, common)
    add_a2a_bridge_parser(sub, common)
    add_gateway_parser(sub, common)
    from .check import add_parser as add_check_parser

    add_check_parser(sub, common)
    from .schemas import add_parser as add_schemas_parser

    add_schemas_parser(sub)
    return parser


def _add_client_arguments(
    parser: argparse.ArgumentParser, *, timeout: float, timeout_help: str
) -> None:
    """The options of a command that connects to a server as a client (``inspect``,
    ``call``): where the server is, how to speak to it, and how to sign in."""
    from .oauth import add_oauth_arguments

    parser.add_argument(
        "url", nargs="?", help="a server URL (http(s)://, ws://) instead of a command"
    )
    parser.add_argument(
        "--transport",
        choices=("sse",),
        help="use the legacy HTTP+SSE transport for an http URL (default: Streamable HTTP, "
        "falling back to HTTP+SSE when the URL answers POST with 404 or 405)",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="write every JSON-RPC message, each way, to FILE as JSON lines "
        "(direction, time, message); `sansio-mcp check --replay FILE` sends them again",
    )
    parser.add_argument(
        "--protocol-version",
        choices=["auto", *ALL_REVISIONS],
        default="auto",
        help="protocol revision: 'auto' (default: probe server/discover, fall back to the "
        f"handshake), or one of {', '.join(ALL_REVISIONS)}",
    )
    parser.add_argument("--timeout", type=float, default=timeout, help=timeout_help)
    parser.add_argument(
        "--max-message-size",
        type=int,
        metavar="BYTES",
        help="the largest message to accept from the server (default 8 MiB); "
        "an answer over it fails at once, naming its size",
    )
    add_oauth_arguments(parser)


async def _inspect(client: ClientAPI, backend: TransportBackend, timeout: float) -> dict[str, Any]:
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
    async with backend.fail_after(timeout * 4):
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


def _parse(options: list[str]) -> argparse.Namespace:
    """Options anywhere, as users type them: ``call TOOL --args '{}' URL`` included.

    argparse gives an optional positional (the URL) its empty value as soon as the first
    positional is read, so a URL after the options comes back unrecognised: it is taken here.
    """
    parser = _parser()
    args, rest = parser.parse_known_args(options)
    if len(rest) == 1 and getattr(args, "url", "") is None and _is_url(rest[0]):
        args.url = rest[0]
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


#: Modules that only the ``testing`` extra installs.
_TESTING_EXTRA = frozenset({"jsonschema", "referencing", "hypothesis"})


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sansio-mcp`` script."""
    options, command = _split_command(sys.argv[1:] if argv is None else argv)
    args = _parse(options)
    if getattr(args, "bearer", None) and getattr(args, "oauth", False):
        print(
            f"sansio-mcp {args.command}: give --bearer (a token sent as it is) or --oauth "
            "(authorize in a browser), not both",
            file=sys.stderr,
        )
        return 2
    try:
        return _run(args, command)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _TESTING_EXTRA:
            raise
        print(
            f"sansio-mcp {args.command}: this command needs the 'testing' extra "
            f"({exc.name} is not installed): pip install 'sansio-mcp[testing]'",
            file=sys.stderr,
        )
        return 2


def _resource_server(args: argparse.Namespace) -> ResourceServer | None:
    """The example server's protection: ``--auth-token`` and ``--auth-jwks-uri``."""
    if not (args.auth_jwks_uri or args.auth_token):
        return None
    from sansio_mcp.auth import JWTVerifier, ResourceServer, StaticTokenVerifier

    resource = args.auth_resource or ""
    if args.auth_jwks_uri:
        if len(args.auth_issuer) != 1 or not resource:
            raise SystemExit(
                "sansio-mcp: --auth-jwks-uri needs exactly one --auth-issuer and --auth-resource"
            )
        if args.auth_token:
            raise SystemExit("sansio-mcp: give --auth-token or --auth-jwks-uri, not both")
        verifier = JWTVerifier(args.auth_issuer[0], resource, jwks_uri=args.auth_jwks_uri)
        return ResourceServer(resource, args.auth_issuer, verifier)
    if args.auth_token:
        tokens = StaticTokenVerifier(dict.fromkeys(args.auth_token, ()))
        return ResourceServer(resource, args.auth_issuer, tokens)
    return None


def build_server(**options: Any) -> Server:
    """The server ``example-server`` serves (a wrapper, so that starting the command
    loads the example only when it runs; a test's script replaces it)."""
    from sansio_mcp_apps.example_server import build_server as build_example

    return build_example(**options)


def _run_example_server(args: argparse.Namespace, backend: TransportBackend) -> int:
    options = replica_options(args)
    auth = _resource_server(args)

    async def serve(stores: Stores) -> None:
        # Built with its stores, so that its tasks live in them (shared between replicas
        # on a Redis store), not in this process alone.
        server = build_server(
            page_size=args.page_size, state_keys=options.state_keys, stores=stores
        )
        server.auth = auth
        on_bound = _announcer(args.transport, args.host)
        await stores.events.settled()  # other replicas' hints and task messages reach it
        await backend.serve(server, args.transport, args.host, args.port, on_bound=on_bound)

    backend.run(backend.until_stopped, serve_with_stores, backend, options, serve)
    return 0


def _run(args: argparse.Namespace, command: list[str]) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command == "schemas":
        from .schemas import run as run_schemas

        return run_schemas(args)
    backend = backend_named(args.backend)
    try:
        if args.command == "example-server":
            return guarded("example-server", partial(_run_example_server, args, backend))
        if args.command == "demo" and args.mcp:
            from .demo import run_demo

            return backend.run(run_demo, backend)
        if args.command in ("demo", "bridge"):
            from .bridge import run_command

            return run_command(args, backend)
        if args.command == "a2a-bridge":
            from .a2a_bridge import run as run_a2a_bridge

            return run_a2a_bridge(args, backend)
        if args.command == "gateway":
            from .gateway import run as run_gateway

            return run_gateway(args, backend)
        if args.command in ("check", "fuzz"):
            from .check import run as run_check

            return run_check(args, command)
        if command and len(command) == 1 and _is_url(command[0]) and not args.url:
            args.url, command = command[0], []
        if not command and not args.url:
            print(
                f"sansio-mcp {args.command}: give a server URL, or the server command after --",
                file=sys.stderr,
            )
            return 2
        if args.command in ("inspect", "call"):
            try:
                args.traffic = Traffic(args.trace) if args.trace or args.verbose else None
            except OSError as exc:
                print(f"sansio-mcp {args.command}: --trace: {explain(exc)}", file=sys.stderr)
                return 2
            run = _run_inspect if args.command == "inspect" else _run_call
            try:
                return backend.run(run, backend, command, args)
            finally:
                if args.traffic is not None:
                    args.traffic.close()
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:
        # Ctrl-C inside a nursery (a network server) arrives wrapped in a group.
        if group.split(KeyboardInterrupt)[1] is None:
            return 130
        failure = _only_os_error(group)
        if failure is None:
            raise
        # A server that cannot listen (the port taken, the host unknown): say so plainly.
        port = getattr(args, "port", None)
        where = f"cannot listen on {args.host}:{port}: " if port is not None else ""
        print(f"sansio-mcp {args.command}: {where}{explain(failure)}", file=sys.stderr)
        return 1
    except (MCPError, ProtocolError, OSError, TimedOut, RevisionRefused) as exc:
        said = explain(exc, bearer=bool(getattr(args, "bearer", None)), verbose=args.verbose)
        print(f"sansio-mcp {args.command}: {said}", file=sys.stderr)
        return 1
    return 2  # pragma: no cover - argparse rejects unknown commands


def _only_os_error(group: BaseExceptionGroup[BaseException]) -> OSError | None:
    """The first OSError of a group holding nothing else (None: it holds more)."""
    matched, rest = group.split(OSError)
    if matched is None or rest is not None:
        return None
    leaf: BaseException = matched
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf if isinstance(leaf, OSError) else None


def _version_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.protocol_version == "auto":
        return {"mode": "auto"}
    return {"protocol_version": args.protocol_version}


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://", "ws://", "wss://"))


def _connect(
    backend: TransportBackend, command: list[str], args: argparse.Namespace, **options: Any
) -> AbstractAsyncContextManager[ClientAPI]:
    """A client for a command (stdio) or a URL (HTTP, legacy SSE, WebSocket)."""
    options.update(_version_options(args))
    options["initialize_timeout"] = args.timeout
    if getattr(args, "traffic", None) is not None:
        options["trace"] = args.traffic
    if args.max_message_size is not None:
        options["max_message_size"] = args.max_message_size
    if args.url and not args.url.startswith(("ws://", "wss://")):
        from .oauth import oauth_provider

        options["auth"] = args.auth = getattr(args, "auth", None) or oauth_provider(args, backend)
    return backend.connect(command, args.url, getattr(args, "transport", None), **options)


class RevisionRefused(Exception):
    """The server answered the handshake at the revision asked for with an error."""


async def _explain_refusal(
    backend: TransportBackend, command: list[str], args: argparse.Namespace, error: MCPError
) -> RevisionRefused:
    """Say that the server does not speak ``--protocol-version``, and what it speaks
    (asked again with ``auto``), instead of a bare -32601 or HTTP 400 body."""
    revision = args.protocol_version
    method = "server/discover" if revision in STATELESS_REVISIONS else "initialize"
    auto = argparse.Namespace(**{**vars(args), "protocol_version": "auto"})
    spoken: list[str] = []
    try:
        async with _connect(backend, command, auto) as client:
            spoken.append(client.protocol_version)
    except (MCPError, ProtocolError, OSError, TimedOut):
        pass
    return RevisionRefused(does_not_speak(revision, method, error, spoken))


async def _connected(
    backend: TransportBackend,
    command: list[str],
    args: argparse.Namespace,
    use: Callable[[ClientAPI], Awaitable[_T]],
    **options: Any,
) -> _T:
    """``use`` a client; a handshake refused at a fixed revision is explained, and a
    URL that answers POST with 404 or 405 is tried again with the 2024-11-05 HTTP+SSE
    transport (GET, then its ``endpoint`` event), as the transport spec's backwards
    compatibility section recommends, unless ``--transport`` chose one."""
    connected = False
    try:
        async with _connect(backend, command, args, **options) as client:
            connected = True
            return await use(client)
    except HTTPStatusError as error:
        status = error.data.get("status") if isinstance(error.data, dict) else None
        if connected or not _may_fall_back(args) or status not in (404, 405):
            raise
        logger.info(
            "%s answered POST with HTTP %s: trying the 2024-11-05 HTTP+SSE transport",
            args.url,
            status,
        )
        args.transport = "sse"
        return await _connected(backend, command, args, use, **options)
    except MCPError as error:
        if connected or args.protocol_version == "auto" or isinstance(error, ConnectionClosedError):
            raise
        raise await _explain_refusal(backend, command, args, error) from error


def _may_fall_back(args: argparse.Namespace) -> bool:
    """Whether an HTTP URL may be tried on the legacy HTTP+SSE transport."""
    if not args.url or not args.url.startswith(("http://", "https://")):
        return False
    return getattr(args, "transport", None) is None


async def _run_inspect(
    backend: TransportBackend, command: list[str], args: argparse.Namespace
) -> int:
    async def inspect(client: ClientAPI) -> dict[str, Any]:
        return await _inspect(client, backend, args.timeout)

    # Declared as ``call`` declares them: servers that list some tools only to
    # clients able to answer their questions show the same tools to both.
    from .answers import Answers

    answers = Answers.from_options([], None, [], backend=backend, command="inspect")
    _dump(await _connected(backend, command, args, inspect, handlers=answers.handlers(tasks=True)))
    return 0


def _show_task_status(progress: ProgressDisplay, task_id: str, task: dict[str, Any]) -> None:
    """One stderr line per status change of a task ``sansio-mcp call`` follows."""
    if not task_id:
        return  # answered at once: there was no task
    progress.done()
    line = f"sansio-mcp call: task {task_id}: {task['status']}"
    if task.get("statusMessage"):
        line += f" ({task['statusMessage']})"
    if task.get("inputRequests"):
        line += f"; asks {', '.join(sorted(task['inputRequests']))}"
    print(line, file=sys.stderr, flush=True)


async def _run_call(backend: TransportBackend, command: list[str], args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        print(f"sansio-mcp call: --args is not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("sansio-mcp call: --args must be a JSON object", file=sys.stderr)
        return 2
    try:
        from .answers import Answers

        answers = Answers.from_options(args.elicit, args.sample, args.root, backend=backend)
    except ValueError as exc:
        print(f"sansio-mcp call: {exc}", file=sys.stderr)
        return 2

    progress = ProgressDisplay("call")

    async def call(client: ClientAPI) -> dict[str, Any]:
        # A tool the server runs as a task is followed to its end, its status on stderr.
        handle = await client.call_tool(
            args.tool, arguments, timeout=args.timeout, task=True, on_progress=progress
        )
        return await handle.result(on_status=partial(_show_task_status, progress, handle.task_id))

    try:
        result = await _connected(
            backend, command, args, call, handlers=answers.handlers(tasks=True)
        )
    finally:
        progress.done()
    _dump(result)
    return 1 if result.get("isError") else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
