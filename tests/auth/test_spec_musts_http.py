"""Issue 35 over real HTTP on loopback, on both backends: a stored refresh token used
by a client of a new process, and a tool whose scopes go beyond the server's, stepped
up to by our client against the test authorization server."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from sansio_mcp import _json
from sansio_mcp.auth import HTTPCall, ResourceServer, parse_challenges
from sansio_mcp.runtime import FileTokenStore, OAuthProvider, Server
from sansio_mcp.runtime._oauth import fetch
from sansio_mcp_testing.oauth_server import TestAuthorizationServer
from tests.auth.test_http import Backend
from tests.transports.helpers import POST_HEADERS


def _scoped_server() -> Server:
    server = Server("scoped")

    @server.tool()
    def echo(message: str) -> str:
        return message

    @server.tool(scopes=["admin"])
    def deploy(target: str) -> str:
        return f"deployed {target}"

    return server


@asynccontextmanager
async def _world(
    backend: Backend, server: Server, *, sse: bool = False
) -> AsyncIterator[tuple[TestAuthorizationServer, str]]:
    authority = TestAuthorizationServer(scopes_supported=["mcp", "admin"])
    async with backend.serve_router(authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        server.auth = ResourceServer("", [authority.issuer], authority.verifier, ["mcp"])
        serve = backend.serve_sse if sse else backend.serve_http
        async with serve(server) as port:
            yield authority, f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"


def test_a_new_process_refreshes_a_stored_token_without_a_browser(
    backend: Backend, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    skew = [0.0]

    async def main() -> None:
        async with _world(backend, _scoped_server()) as (authority, url):
            for message in ("before", "after"):
                # A provider of its own each time: nothing but the file survives.
                provider = OAuthProvider(store=store, clock=lambda: time.time() + skew[0])
                async with backend.open_http_client(url, auth=provider) as client:
                    result = await client.call_tool("echo", {"message": message})
                    assert result["content"][0]["text"] == message
                skew[0] = 7200.0  # the one-hour token has expired by the restart
            steps = [(name, form.get("grant_type")) for name, form in authority.log]
            assert steps == [
                ("metadata", None),
                ("register", None),
                ("authorize", None),
                ("token", "authorization_code"),
                ("token", "refresh_token"),
            ]

    backend.run(main)
    saved = json.loads((tmp_path / "tokens.json").read_text())
    (entry,) = saved.values()
    assert entry["authorization_server"]["metadata"]["token_endpoint"].endswith("/token")


@pytest.mark.parametrize("sse", [False, True], ids=["http", "sse"])
def test_a_scoped_tool_is_refused_403_and_our_client_steps_up(backend: Backend, sse: bool) -> None:
    async def main() -> None:
        async with _world(backend, _scoped_server(), sse=sse) as (authority, url):
            provider = OAuthProvider()
            opener = backend.sse.open_sse_client if sse else backend.open_http_client
            async with opener(url, auth=provider) as client:
                assert {t["name"] for t in await client.list_tools()} == {"echo", "deploy"}
                assert provider.tokens is not None and provider.tokens.scope == "mcp"
                if not sse:
                    # What the server answers the global-scope token for the scoped tool.
                    call = {
                        "jsonrpc": "2.0",
                        "id": 9,
                        "method": "tools/call",
                        "params": {"name": "deploy", "arguments": {"target": "x"}},
                    }
                    headers = {
                        **POST_HEADERS,
                        "authorization": f"Bearer {provider.tokens.access_token}",
                    }
                    refused = await fetch(
                        backend.backend, HTTPCall("POST", url, headers, _json.dumps(call).encode())
                    )
                    assert refused.status == 403
                    header = refused.headers["www-authenticate"]
                    assert header.startswith('Bearer error="insufficient_scope"')
                    (challenge,) = parse_challenges(header)
                    assert challenge.scope == ["mcp", "admin"]
                result = await client.call_tool("deploy", {"target": "prod"})
                assert result["content"][0]["text"] == "deployed prod"
                assert provider.tokens.scope == "mcp admin"
            scopes = [query.get("scope") for name, query in authority.log if name == "authorize"]
            assert scopes == ["mcp", "mcp admin"]

    backend.run(main)
