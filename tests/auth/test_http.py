"""Authorization over real HTTP on loopback, on both backends: a protected server's
401/403 answers and metadata, and our client's whole code flow against the test
authorization server and the protected example server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
import trio

from sansio_mcp import _json
from sansio_mcp.auth import (
    AuthorizationError,
    Grant,
    HTTPCall,
    OAuthConfig,
    ResourceServer,
    StaticTokenVerifier,
    parse_challenges,
)
from sansio_mcp.runtime import FileTokenStore, OAuthProvider, Server
from sansio_mcp.runtime._oauth import fetch
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_cli.oauth import LoopbackRedirect
from sansio_mcp_testing.oauth_server import TestAuthorizationServer
from tests.transports.helpers import POST_HEADERS, initialize, serving_in_thread

INITIALIZE = _json.dumps(initialize()).encode()


# Serving on either backend ---------------------------------------------------------------


@asynccontextmanager
async def _trio_serving(serve: Callable[..., Any], *args: Any) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: serve(*args, task_status=task_status))
        try:
            yield port
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def _asyncio_serving(serve: Callable[..., Any], *args: Any) -> AsyncIterator[int]:
    started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(*args, started=started))
    try:
        yield await asyncio.wait_for(started, 10)
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass


class Backend:
    """What a test needs of one backend: serve a router or a server, open clients."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "trio":
            from trio_adapters import BACKEND, http_server, sse
            from trio_adapters.http_client import open_http_client

            self.serving = _trio_serving
        else:
            from asyncio_adapters import BACKEND, http_server, sse  # type: ignore[no-redef]
            from asyncio_adapters.http_client import open_http_client  # type: ignore[no-redef]

            self.serving = _asyncio_serving
        self.backend = BACKEND
        self.http_server = http_server
        self.sse = sse
        self.open_http_client = open_http_client

    def run(self, fn: Callable[..., Any]) -> None:
        self.backend.run(fn)

    def serve_router(self, router: Any) -> AbstractAsyncContextManager[int]:
        return self.serving(
            lambda **kw: self.http_server.serve_router(Server("as"), router, port=0, **kw)
        )

    def serve_http(self, server: Server) -> AbstractAsyncContextManager[int]:
        return self.serving(lambda **kw: self.http_server.serve_http(server, port=0, **kw))

    def serve_sse(self, server: Server) -> AbstractAsyncContextManager[int]:
        return self.serving(lambda **kw: self.sse.serve_sse(server, port=0, **kw))


@asynccontextmanager
async def _protected_world(
    backend: Backend, *, sse: bool = False, scopes: tuple[str, ...] = ("mcp",)
) -> AsyncIterator[tuple[TestAuthorizationServer, str]]:
    """The test authorization server and the example server behind its tokens; yields
    the authorization server and the MCP URL."""
    authority = TestAuthorizationServer(scopes_supported=list(scopes))
    async with backend.serve_router(authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        server = build_server()
        server.auth = ResourceServer(
            "", [authority.issuer], authority.verifier, required_scopes=scopes
        )
        serve = backend.serve_sse if sse else backend.serve_http
        async with serve(server) as port:
            yield authority, f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"


# The resource server ---------------------------------------------------------------------


def test_protected_server_answers_401_403_and_serves_its_metadata(backend: Backend) -> None:
    server = build_server()
    verifier = StaticTokenVerifier({"good": {"mcp"}, "weak": set()})
    server.auth = ResourceServer(
        "", ["http://as.example"], verifier, required_scopes=["mcp"], scopes_supported=["mcp"]
    )

    async def main() -> None:
        async with backend.serve_http(server) as port:
            base = f"http://127.0.0.1:{port}"

            async def post(token: str | None) -> Any:
                headers = dict(POST_HEADERS)
                if token:
                    headers["authorization"] = f"Bearer {token}"
                return await fetch(
                    backend.backend, HTTPCall("POST", f"{base}/mcp", headers, INITIALIZE)
                )

            metadata = await fetch(
                backend.backend,
                HTTPCall("GET", f"{base}/.well-known/oauth-protected-resource/mcp", {}),
            )
            assert metadata.status == 200
            assert json.loads(metadata.body) == {
                "resource": f"{base}/mcp",
                "authorization_servers": ["http://as.example"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp"],
            }
            missing = await post(None)
            assert missing.status == 401
            (challenge,) = parse_challenges(missing.headers["www-authenticate"])
            assert challenge.scheme == "bearer" and challenge.error is None
            assert challenge.resource_metadata == f"{base}/.well-known/oauth-protected-resource/mcp"
            assert challenge.scope == ["mcp"]
            bogus = await post("bogus")
            assert bogus.status == 401
            assert parse_challenges(bogus.headers["www-authenticate"])[0].error == "invalid_token"
            weak = await post("weak")
            assert weak.status == 403
            assert parse_challenges(weak.headers["www-authenticate"])[0].error == (
                "insufficient_scope"
            )
            good = await post("good")
            assert good.status == 200 and b'"protocolVersion"' in good.body

    backend.run(main)


# Our client, end to end -------------------------------------------------------------------


def test_code_flow_end_to_end_and_tokens_kept_in_a_file(backend: Backend, tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")

    async def main() -> None:
        async with _protected_world(backend) as (authority, url):
            for _ in range(2):
                provider = OAuthProvider(store=store)
                async with backend.open_http_client(url, auth=provider) as client:
                    result = await client.call_tool("echo", {"message": "hi"})
                    assert result["content"][0]["text"] == "hi"
            steps = [name for name, _ in authority.log]
            # One flow; the second client found its tokens in the file.
            assert steps == ["metadata", "register", "authorize", "token"]
            authorize = dict(authority.log[2][1])
            assert authorize["resource"] == url and authorize["scope"] == "mcp"

    backend.run(main)
    saved = json.loads((tmp_path / "tokens.json").read_text())
    assert saved[next(iter(saved))]["tokens"]["access_token"].startswith("access-")
    assert (tmp_path / "tokens.json").stat().st_mode & 0o077 == 0


def test_an_expired_token_is_refreshed_before_the_request(backend: Backend) -> None:
    skew = [0.0]
    provider = OAuthProvider(clock=lambda: time.time() + skew[0])

    async def main() -> None:
        async with _protected_world(backend) as (authority, url):
            async with backend.open_http_client(url, auth=provider) as client:
                await client.call_tool("echo", {"message": "1"})
                skew[0] = 7200.0  # the token (one hour) has expired
                await client.call_tool("echo", {"message": "2"})
            grants = [form["grant_type"] for name, form in authority.log if name == "token"]
            assert grants == ["authorization_code", "refresh_token"]

    backend.run(main)


def test_legacy_sse_client_authorizes_too(backend: Backend) -> None:
    async def main() -> None:
        async with _protected_world(backend, sse=True) as (authority, url):
            async with backend.sse.open_sse_client(url, auth=OAuthProvider()) as client:
                assert (await client.call_tool("add", {"a": 2, "b": 3}))["content"][0][
                    "text"
                ] == "5"
            assert [name for name, _ in authority.log].count("authorize") == 1

    backend.run(main)


@pytest.mark.parametrize("sse", [False, True], ids=["http", "sse"])
def test_a_server_that_cannot_authorize_fails_the_client_precisely(
    backend: Backend, sse: bool
) -> None:
    server = build_server()
    server.auth = ResourceServer("", [], StaticTokenVerifier({}))

    async def main() -> None:
        serve = backend.serve_sse if sse else backend.serve_http
        opener = backend.sse.open_sse_client if sse else backend.open_http_client
        async with serve(server) as port:
            url = f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"
            with pytest.raises(AuthorizationError, match="names no authorization server"):
                async with opener(url, auth=OAuthProvider(OAuthConfig()), initialize_timeout=10):
                    pass

    backend.run(main)


def test_an_authorization_server_in_the_clear_fails_the_client_precisely(
    backend: Backend,
) -> None:
    # The MCP server (on loopback) names a plain-http authorization server elsewhere:
    # no credential is sent there; the client fails at once saying why.
    server = build_server()
    server.auth = ResourceServer("", ["http://as.example"], StaticTokenVerifier({}))

    async def main() -> None:
        async with backend.serve_http(server) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            with pytest.raises(AuthorizationError) as failed:
                async with backend.open_http_client(
                    url, auth=OAuthProvider(OAuthConfig()), initialize_timeout=10
                ):
                    pass
        assert failed.value.message == (
            "the authorization server http://as.example is plain http, which only a "
            "loopback address may use (else https)"
        )

    backend.run(main)


# The command line ------------------------------------------------------------------------


def test_loopback_redirect_listener_returns_the_callback_url() -> None:
    listener = LoopbackRedirect()
    got: list[str] = []
    thread = threading.Thread(target=lambda: got.append(listener.wait(10)))
    thread.start()
    base = f"http://127.0.0.1:{listener.port}"
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{base}/favicon.ico", timeout=10)
    with urllib.request.urlopen(f"{base}/callback?code=c&state=s", timeout=10) as answer:
        assert b"authorized" in answer.read()
    thread.join(10)
    listener.close()
    assert got == [f"{base}/callback?code=c&state=s"]
    assert dict(parse_qsl(got[0].split("?", 1)[1])) == {"code": "c", "state": "s"}


def test_cli_example_server_with_a_static_token() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "sansio_mcp_cli"]
    server = subprocess.Popen(
        [*command, "example-server", "--transport", "http", "--port", "0", "--auth-token", "T0K"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        url = line.split()[-1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), line
        call = [*command, "call", "echo", "--args", '{"message": "hi"}', "--timeout", "10", url]
        ok = subprocess.run(
            [*call, "--bearer", "T0K"], capture_output=True, text=True, env=env, timeout=60
        )
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout)["content"][0]["text"] == "hi"
        refused = subprocess.run(call, capture_output=True, text=True, env=env, timeout=60)
        assert refused.returncode == 1
        assert "HTTP 401" in refused.stderr
        check = [*command, "check", "--property", "initialize", "--examples", "1", "-q", url]
        checked = subprocess.run(
            [*check, "--bearer", "T0K"], capture_output=True, text=True, env=env, timeout=120
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "OK: 0 errors" in checked.stdout + checked.stderr
    finally:
        server.terminate()
        server.wait(10)


def test_cli_runs_the_code_flow_with_a_loopback_listener(tmp_path: Path) -> None:
    from trio_adapters.http_server import serve_http, serve_router

    authority = TestAuthorizationServer(scopes_supported=["mcp"])
    with serving_in_thread(serve_router, Server("as"), router=authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        server = build_server()
        server.auth = ResourceServer("", [authority.issuer], authority.verifier, ["mcp"])
        with serving_in_thread(serve_http, server) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            tokens = tmp_path / "tokens.json"
            command = [
                sys.executable, "-m", "sansio_mcp_cli", "call", "echo", "--args",
                '{"message": "hello"}', "--timeout", "20", "--oauth",
                "--oauth-token-file", str(tokens), url,
            ]  # fmt: skip
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            cli = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
            try:
                assert cli.stderr is not None
                lines = [cli.stderr.readline() for _ in range(2)]
                assert "open this URL" in lines[0], lines
                authorization_url = lines[1].strip()
                # The "browser": the server approves at once and redirects to the listener.
                with urllib.request.urlopen(authorization_url, timeout=20) as page:
                    assert b"authorized" in page.read()
                out, err = cli.communicate(timeout=60)
            finally:
                if cli.poll() is None:
                    cli.kill()
                    cli.wait(10)
            assert cli.returncode == 0, err
            assert json.loads(out)["content"][0]["text"] == "hello"
            # The token file lets the next run through without a browser.
            again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
            assert again.returncode == 0, again.stderr
            assert "open this URL" not in again.stderr
    assert [name for name, _ in authority.log].count("authorize") == 1


def test_a_flow_the_configuration_cannot_run_fails_with_the_reason(backend: Backend) -> None:
    config = OAuthConfig(grant=Grant.JWT_BEARER)  # and no assertion

    async def main() -> None:
        async with _protected_world(backend) as (_, url):
            with pytest.raises(AuthorizationError, match="needs an assertion"):
                async with backend.open_http_client(
                    url, auth=OAuthProvider(config), initialize_timeout=10
                ):
                    pass

    backend.run(main)
