"""Authorization interop with the official Python SDK (``mcp`` 2.3): its OAuth client
(``mcp.client.auth.OAuthClientProvider`` on httpx2) through its Streamable HTTP client,
against our protected example server and our test authorization server, on loopback.

The SDK discovers our protected resource metadata from the 401, our authorization
server's metadata, registers, runs the code flow with PKCE (its redirect and callback
handlers stand in for the browser: the test server approves at once) and calls a tool
with the token.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from sansio_mcp.auth import JWTVerifier, ResourceServer
from sansio_mcp.runtime import Server
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_testing.oauth_server import TestAuthorizationServer
from tests.transports.helpers import serving_in_thread
from trio_adapters.http_server import serve_http, serve_router

pytestmark = pytest.mark.interop


class _Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def _sdk_session(url: str) -> tuple[str, str]:
    """The SDK client authorizes, calls ``echo``; the text and the token it used."""
    pending: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        pending.append(authorization_url)

    async def callback_handler() -> AuthorizationCodeResult:
        # The "browser": the test server approves at once; read the redirect's query.
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(pending.pop())
        assert answer.status_code == 302, answer.text
        query = dict(parse_qsl(urlsplit(answer.headers["location"]).query))
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    storage = _Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="sdk-interop",
            redirect_uris=["http://127.0.0.1:3030/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                result: Any = await session.call_tool("echo", {"message": "from the SDK"})
    assert storage.tokens is not None
    return result.content[0].text, storage.tokens.access_token


@pytest.mark.parametrize("jwt", [False, True], ids=["opaque", "jwt"])
def test_sdk_oauth_client_against_our_protected_server(jwt: bool) -> None:
    """With ``jwt``, our server checks the SDK's JWT access tokens with ``JWTVerifier``
    (keys fetched from the authorization server's ``jwks_uri``, ``aud`` the resource)."""
    authority = TestAuthorizationServer(scopes_supported=["mcp"], jwt=jwt)
    with serving_in_thread(serve_router, Server("as"), router=authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        server = build_server()
        jwts = JWTVerifier(authority.issuer, "", jwks_uri=f"{authority.issuer}/jwks")
        server.auth = ResourceServer(
            "", [authority.issuer], jwts if jwt else authority.verifier,
            required_scopes=["mcp"], scopes_supported=["mcp"],
        )  # fmt: skip
        with serving_in_thread(serve_http, server) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            jwts.audience = url
            text, token = anyio.run(_sdk_session, url, backend="asyncio")
    assert text == "from the SDK"
    assert token in authority.tokens
    steps = [name for name, _ in authority.log]
    assert steps.count("jwks") == (1 if jwt else 0)
    flow = [step for step in steps if step != "jwks"]
    assert flow[-3:] == ["register", "authorize", "token"]
    authorize = dict(authority.log[steps.index("authorize")][1])
    assert authorize["resource"] == url and authorize["code_challenge_method"] == "S256"
    assert authorize["scope"] == "mcp"


def test_our_client_against_an_sdk_protected_server() -> None:
    """Our Trio client against an SDK ``MCPServer`` that protects itself with
    ``AuthSettings`` and a token verifier backed by our test authorization server."""
    import threading
    import time
    import warnings

    import trio
    import uvicorn
    from mcp.server.auth.provider import AccessToken as SDKAccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    from sansio_mcp.runtime import OAuthProvider
    from tests.transports.helpers import free_port
    from trio_adapters.http_client import open_http_client

    authority = TestAuthorizationServer(scopes_supported=["mcp"])

    class Verifier:
        async def verify_token(self, token: str) -> SDKAccessToken | None:
            found = authority.verify(token, 0)
            if found is None:
                return None
            return SDKAccessToken(
                token=token, client_id=found.client_id or "", scopes=sorted(found.scopes)
            )

    with serving_in_thread(serve_router, Server("as"), router=authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sdk = MCPServer(
                "sdk-protected",
                token_verifier=Verifier(),
                auth=AuthSettings(
                    issuer_url=authority.issuer, resource_server_url=url,
                    required_scopes=["mcp"], validate_token_resource=False,
                ),
            )  # fmt: skip

        @sdk.tool()
        def echo(message: str) -> str:
            return f"echo: {message}"

        config = uvicorn.Config(
            sdk.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning"
        )
        web = uvicorn.Server(config)
        thread = threading.Thread(target=web.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not web.started:
                assert time.monotonic() < deadline, "the SDK server did not start"
                time.sleep(0.05)

            async def main() -> str:
                with trio.fail_after(30):
                    async with open_http_client(url, auth=OAuthProvider()) as client:
                        result = await client.call_tool("echo", {"message": "hi"})
                        return str(result["content"][0]["text"])

            assert trio.run(main) == "echo: hi"
        finally:
            web.should_exit = True
            thread.join(10)
        assert not thread.is_alive()
    steps = [name for name, _ in authority.log]
    assert steps == ["metadata", "register", "authorize", "token"]
    assert dict(authority.log[2][1])["resource"] == url
