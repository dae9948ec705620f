"""OAuth for the client commands (``inspect``, ``call``, ``check`` against a URL): the
code flow with a loopback redirect listener (RFC 8252 §7.3), the URL to open printed
on stderr, tokens kept in a file if asked."""

from __future__ import annotations

import argparse
import socket
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from sansio_mcp.runtime import OAuthProvider, TokenStore, TransportBackend

__all__ = ["LoopbackRedirect", "add_oauth_arguments", "oauth_provider"]

_TEXT = b"sansio-mcp: authorized. You can close this page now.\n"
_PAGE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_TEXT), _TEXT)
)


def add_oauth_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("authorization (HTTP servers)")
    group.add_argument(
        "--oauth",
        action="store_true",
        help="authorize with OAuth 2.1 when the server asks (prints the URL to open)",
    )
    group.add_argument("--oauth-client-id", help="a pre-registered client id")
    group.add_argument("--oauth-client-secret", help="the pre-registered client's secret")
    group.add_argument("--oauth-scope", help="the scope to ask for (default: the server's)")
    group.add_argument(
        "--oauth-token-file",
        metavar="PATH",
        help="keep tokens and registrations in this JSON file (default: memory only)",
    )
    group.add_argument(
        "--oauth-redirect-port",
        type=int,
        default=0,
        metavar="PORT",
        help="loopback port of the redirect listener (default: any free port)",
    )
    group.add_argument(
        "--bearer",
        metavar="TOKEN",
        help="send this access token as it is; never starts an OAuth flow (a refused token "
        "is an error; not with --oauth)",
    )


class LoopbackRedirect:
    """Listens on 127.0.0.1 for the one redirect that ends the browser step."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.create_server(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    def wait(self, timeout: float) -> str:
        """Accept requests until one comes to ``/callback``; its full URL."""
        self.sock.settimeout(timeout)
        while True:
            conn, _ = self.sock.accept()
            with conn:
                conn.settimeout(10)
                data = b""
                while b"\r\n" not in data and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                line = data.split(b"\r\n", 1)[0].decode("latin-1").split()
                target = line[1] if len(line) >= 2 else "/"
                if urlsplit(target).path != "/callback":
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    continue
                conn.sendall(_PAGE)
                return f"http://127.0.0.1:{self.port}{target}"

    def close(self) -> None:
        self.sock.close()


def oauth_provider(
    args: argparse.Namespace, backend: TransportBackend, timeout: float = 300.0
) -> OAuthProvider | None:
    """The provider the options ask for, or None (no ``--oauth``, no ``--bearer``)."""
    url = getattr(args, "url", None)
    if not (getattr(args, "oauth", False) or getattr(args, "bearer", None)) or not url:
        return None
    # The OAuth client and HTTP machinery load only for a command that authorizes.
    from sansio_mcp.auth import ClientInfo, OAuthConfig, TokenSet
    from sansio_mcp.http import Endpoint
    from sansio_mcp.runtime import FileTokenStore, MemoryTokenStore, OAuthProvider

    store: TokenStore = (
        FileTokenStore(args.oauth_token_file) if args.oauth_token_file else MemoryTokenStore()
    )
    if args.bearer:
        store = MemoryTokenStore()
        # Under the key the client looks it up by (its endpoint's normal form).
        key = Endpoint.parse(url).url
        store.save(key, {"tokens": TokenSet(args.bearer).to_json(), "clients": {}})
    listener = LoopbackRedirect(args.oauth_redirect_port) if args.oauth else None
    client = (
        ClientInfo(args.oauth_client_id, args.oauth_client_secret) if args.oauth_client_id else None
    )
    config = OAuthConfig(
        client_name="sansio-mcp",
        redirect_uri=listener.redirect_uri if listener else OAuthConfig().redirect_uri,
        client=client,
        scope=args.oauth_scope,
    )

    async def open_browser(authorization_url: str) -> str:
        if listener is None:
            raise ValueError("the server asks for authorization: use --oauth")
        print(
            "sansio-mcp: open this URL in a browser to authorize:\n"
            f"  {authorization_url}\n"
            f"(waiting for the redirect to {listener.redirect_uri})",
            file=sys.stderr,
            flush=True,
        )
        answer: Any = await backend.to_thread(listener.wait, timeout)
        return str(answer)

    return OAuthProvider(config, store=store, open_browser=open_browser, flows=not args.bearer)
