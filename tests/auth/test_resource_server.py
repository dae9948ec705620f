"""The resource server over real HTTP on loopback, on both backends and under the ASGI
app: JWT access tokens checked against keys fetched from the authorization server's
``jwks_uri``, an ``async`` verifier (token introspection, RFC 7662), handlers seeing the
verified token as ``ctx.auth``, and DPoP-bound tokens (RFC 9449) end to end with our
own DPoP client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl

from sansio_mcp import _json
from sansio_mcp._http_messages import HTTPRequest
from sansio_mcp._streamable_http import Exchange
from sansio_mcp.auth import (
    AccessToken,
    DPoPChecker,
    DPoPKey,
    HTTPCall,
    JWTVerifier,
    ResourceServer,
    StaticTokenVerifier,
    TokenVerifier,
    dpop_proof,
    parse_challenges,
)
from sansio_mcp.auth._dpop_check import NONCE_REQUIRED
from sansio_mcp.runtime import Context, FileTokenStore, OAuthProvider, Server
from sansio_mcp.runtime._oauth import fetch
from sansio_mcp_testing.oauth_server import TestAuthorizationServer
from tests.auth.test_http import INITIALIZE, Backend
from tests.transports.helpers import POST_HEADERS, free_port


def whoami_server(name: str = "protected") -> Server:
    """A server whose one tool reports what ``ctx.auth`` says."""
    server = Server(name, "1.0.0")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who is calling."""
        auth = ctx.auth
        if auth is None:
            return _json.dumps(None)
        return _json.dumps(
            {
                "subject": auth.subject,
                "client_id": auth.client_id,
                "scopes": sorted(auth.scopes),
                "expires_at": auth.expires_at,
                "iss": auth.claims.get("iss"),
                "jkt": auth.jkt,
            }
        )

    return server


async def whoami(client: Any) -> Any:
    result = await client.call_tool("whoami", {})
    return _json.loads(result["content"][0]["text"])


@asynccontextmanager
async def _jwt_world(
    backend: Backend, *, dpop: bool, sse: bool = False, checker: DPoPChecker | None = None
) -> AsyncIterator[tuple[TestAuthorizationServer, str]]:
    """The test authorization server issuing JWTs and the whoami server (Streamable HTTP,
    or legacy SSE) verifying them with keys from its ``jwks_uri``; yields the
    authorization server and the MCP URL."""
    authority = TestAuthorizationServer(scopes_supported=["mcp"], jwt=True, dpop=dpop)
    async with backend.serve_router(authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        verifier = JWTVerifier(authority.issuer, "", jwks_uri=f"{authority.issuer}/jwks")
        server = whoami_server()
        server.auth = ResourceServer(
            "",
            [authority.issuer],
            verifier,
            required_scopes=["mcp"],
            dpop=checker or DPoPChecker(),
        )
        serve = backend.serve_sse if sse else backend.serve_http
        async with serve(server) as port:
            url = f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"
            verifier.audience = url  # the resource, known once the port is
            yield authority, url


def test_jwt_tokens_are_verified_with_fetched_keys_and_handlers_see_them(
    backend: Backend,
) -> None:
    async def main() -> None:
        async with _jwt_world(backend, dpop=False) as (authority, url):
            async with backend.open_http_client(url, auth=OAuthProvider()) as client:
                me = await whoami(client)
                assert me["subject"].startswith("user-client-")
                assert me["client_id"] == me["subject"].removeprefix("user-")
                assert "mcp" in me["scopes"] and me["iss"] == authority.issuer
                assert me["expires_at"] > 0 and me["jkt"] is None
                await whoami(client)
            steps = [step for step, _ in authority.log]
            # The keys were fetched once, through our HTTP client, and then cached.
            assert steps.count("jwks") == 1, steps
            assert steps.count("token") == 1, steps

    backend.run(main)


def test_legacy_sse_handlers_see_the_token_too(backend: Backend) -> None:
    async def main() -> None:
        async with _jwt_world(backend, dpop=False, sse=True) as (authority, url):
            async with backend.sse.open_sse_client(url, auth=OAuthProvider()) as client:
                me = await whoami(client)
            assert me["iss"] == authority.issuer and "mcp" in me["scopes"]

    backend.run(main)


class RecordingChecker(DPoPChecker):
    """A DPoP checker that keeps what it said of each proof."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.said: list[str | None] = []

    def check(self, proof: str | None, **request: Any) -> str | None:
        said = super().check(proof, **request)
        self.said.append(said)
        return said


def test_our_client_follows_the_resource_servers_dpop_nonces(backend: Backend) -> None:
    async def main() -> None:
        checker = RecordingChecker(nonce_secret=b"resource-server-nonces")
        async with _jwt_world(backend, dpop=True, checker=checker) as (_, url):
            async with backend.open_http_client(url, auth=OAuthProvider()) as client:
                me = await whoami(client)
                assert me["jkt"] is not None
                await whoami(client)
        # The first proof had no nonce; the client took the one the 401 gave and every
        # proof after it passed.
        assert checker.said[0] == NONCE_REQUIRED
        assert len(checker.said) >= 3 and checker.said[1:] == [None] * (len(checker.said) - 1)

    backend.run(main)


def test_dpop_bound_jwts_pass_with_our_dpop_client_end_to_end(backend: Backend) -> None:
    async def main() -> None:
        async with _jwt_world(backend, dpop=True) as (_, url):
            provider = OAuthProvider()
            async with backend.open_http_client(url, auth=provider) as client:
                me = await whoami(client)
                await whoami(client)  # a fresh proof each time (no replay refusal)
            tokens = provider.tokens
            assert tokens is not None and tokens.token_type.lower() == "dpop"
            key = provider.machine._dpop_key if provider.machine else None
            assert key is not None and me["jkt"] == key.thumbprint

            async def post(headers: dict[str, str]) -> Any:
                call = HTTPCall("POST", url, {**POST_HEADERS, **headers}, INITIALIZE)
                return await fetch(backend.backend, call)

            token = tokens.access_token
            now = backend.backend.wall_clock()

            def proof(jti: str, access_token: str = token) -> str:
                return dpop_proof(key, "POST", url, now=now, jti=jti, access_token=access_token)

            good = proof("good-1")
            assert (await post({"authorization": f"DPoP {token}", "dpop": good})).status == 200
            for headers in (
                {"authorization": f"Bearer {token}"},
                {"authorization": f"DPoP {token}"},
                {"authorization": f"DPoP {token}", "dpop": good},  # replayed
                {"authorization": f"DPoP {token}", "dpop": proof("x", access_token="other")},
            ):
                refused = await post(headers)
                assert refused.status == 401, headers
                (challenge,) = parse_challenges(refused.headers["www-authenticate"])
                assert challenge.scheme == "dpop" and challenge.error == "invalid_dpop_proof"
                assert challenge.resource_metadata is not None
                assert _json.loads(refused.body)["error"] == "invalid_dpop_proof"

    backend.run(main)


# An async verifier: token introspection (RFC 7662) --------------------------------------


class Introspection:
    """An introspection endpoint, as a router: ``POST /introspect`` with ``token``."""

    def __init__(self) -> None:
        self.active = {"opaque-1": {"scope": "mcp", "sub": "bob", "client_id": "cli"}}
        self.calls = 0

    def handle(self, request: HTTPRequest) -> Exchange:
        self.calls += 1
        form = dict(parse_qsl(request.body.decode()))
        entry = self.active.get(form.get("token", ""))
        body = {"active": True, **entry} if entry else {"active": False}
        return Exchange(200, {"content-type": "application/json"}, _json.dumps(body).encode())

    def flush(self, session: Any) -> None:
        return None

    def owns(self, session: Any) -> bool:
        return False


class IntrospectingVerifier:
    """An ``async`` verifier asking the introspection endpoint about each token."""

    def __init__(self, on: Any, url: str) -> None:
        self.backend, self.url = on, url

    async def verify(self, token: str, now: float) -> AccessToken | None:
        body = f"token={token}".encode()
        headers = {"content-type": "application/x-www-form-urlencoded"}
        reply = await fetch(self.backend, HTTPCall("POST", self.url, headers, body))
        answer = _json.loads(reply.body)
        if not answer.get("active"):
            return None
        return AccessToken(
            token,
            frozenset(answer["scope"].split()),
            client_id=answer["client_id"],
            subject=answer["sub"],
            claims=answer,
        )


def test_an_async_verifier_is_awaited_and_its_token_reaches_the_handler(
    backend: Backend,
) -> None:
    async def main() -> None:
        endpoint = Introspection()
        async with backend.serve_router(endpoint) as as_port:
            verifier = IntrospectingVerifier(
                backend.backend, f"http://127.0.0.1:{as_port}/introspect"
            )
            server = whoami_server()
            server.auth = ResourceServer("", ["http://as.example"], verifier, ["mcp"])
            async with backend.serve_http(server) as port:
                url = f"http://127.0.0.1:{port}/mcp"
                headers = {"authorization": "Bearer opaque-1"}
                async with backend.open_http_client(url, headers=headers) as client:
                    me = await whoami(client)
                assert (me["subject"], me["client_id"], me["scopes"]) == ("bob", "cli", ["mcp"])
                assert endpoint.calls >= 2  # initialize, then the call (no cache here)
                call = HTTPCall(
                    "POST",
                    url,
                    {**POST_HEADERS, "authorization": "Bearer revoked"},
                    INITIALIZE,
                )
                refused = await fetch(backend.backend, call)
                assert refused.status == 401
                assert parse_challenges(refused.headers["www-authenticate"])[0].error == (
                    "invalid_token"
                )

    backend.run(main)


def test_an_unprotected_server_gives_handlers_no_token(backend: Backend) -> None:
    async def main() -> None:
        async with backend.serve_http(whoami_server()) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with backend.open_http_client(url) as client:
                assert await whoami(client) is None

    backend.run(main)


def test_the_asgi_app_awaits_verifiers_and_sets_ctx_auth() -> None:
    from asyncio_adapters import BACKEND
    from asyncio_adapters.asgi import MCPApp
    from asyncio_adapters.http_client import open_http_client
    from tests.transports.test_asgi import uvicorn_serving

    static = StaticTokenVerifier({"asgi-token": {"mcp"}})

    class Async:
        async def verify(self, token: str, now: float) -> AccessToken | None:
            await asyncio.sleep(0)  # as a lookup elsewhere would
            return static.verify(token, now)

    verifier: TokenVerifier = Async()
    server = whoami_server("asgi")
    server.auth = ResourceServer("", ["http://as.example"], verifier, required_scopes=["mcp"])
    app = MCPApp(server)
    with uvicorn_serving(app) as port:
        url = f"http://127.0.0.1:{port}/mcp"

        async def main() -> None:
            headers = {"authorization": "Bearer asgi-token"}
            async with open_http_client(url, headers=headers) as client:
                me = await whoami(client)
            assert me["scopes"] == ["mcp"] and me["subject"] == "static-token-1"
            call = HTTPCall("POST", url, {**POST_HEADERS, "authorization": "Bearer no"}, INITIALIZE)
            assert (await fetch(BACKEND, call)).status == 401

        asyncio.run(main())


# A session is bound to whoever opened it ----------------------------------------------------


class People:
    """Tokens of two people (two tokens for alice: a refreshed one)."""

    tokens: ClassVar[dict[str, AccessToken]] = {
        "alice-1": AccessToken("alice-1", frozenset({"mcp"}), "app", subject="alice"),
        "alice-2": AccessToken("alice-2", frozenset({"mcp"}), "app", subject="alice"),
        "bob-1": AccessToken("bob-1", frozenset({"mcp"}), "app", subject="bob"),
    }

    def verify(self, token: str, now: float) -> AccessToken | None:
        return self.tokens.get(token)


async def _post_as(
    backend: Backend, url: str, token: str, body: bytes, session: str | None = None
) -> Any:
    """POST ``body`` to ``url`` with ``token`` (and in ``session``)."""
    headers = {**POST_HEADERS, "authorization": f"Bearer {token}"}
    if session is not None:
        headers["mcp-session-id"] = session
    return await fetch(backend.backend, HTTPCall("POST", url, headers, body))


def test_a_session_answers_only_tokens_of_the_subject_that_opened_it(backend: Backend) -> None:
    server = whoami_server()
    server.auth = ResourceServer("", ["http://as.example"], People(), required_scopes=["mcp"])

    async def main() -> None:
        async with backend.serve_http(server) as port:
            post = partial(_post_as, backend, f"http://127.0.0.1:{port}/mcp")

            opened = await post("alice-1", INITIALIZE)
            assert opened.status == 200
            session = opened.headers["mcp-session-id"]
            ping = _json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
            stolen = await post("bob-1", ping, session)
            assert stolen.status == 404
            refreshed = await post("alice-2", ping, session)
            assert refreshed.status == 200 and b'"result"' in refreshed.body

    backend.run(main)


def test_each_static_token_is_a_principal_of_its_own(backend: Backend) -> None:
    # `--auth-token A --auth-token B`: B cannot drive a session A opened (before, both
    # had no subject, so they passed for one principal).
    server = whoami_server()
    tokens = StaticTokenVerifier({"token-a": {"mcp"}, "token-b": {"mcp"}})
    server.auth = ResourceServer("", [], tokens, required_scopes=["mcp"])
    ping = _json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()

    async def main() -> None:
        async with backend.serve_http(server) as port:
            post = partial(_post_as, backend, f"http://127.0.0.1:{port}/mcp")

            for owner, other in (("token-a", "token-b"), ("token-b", "token-a")):
                opened = await post(owner, INITIALIZE)
                assert opened.status == 200
                session = opened.headers["mcp-session-id"]
                assert (await post(other, ping, session)).status == 404
                own = await post(owner, ping, session)
                assert own.status == 200 and b'"result"' in own.body

    backend.run(main)
    subjects = [tokens.verify(t, 0.0) for t in ("token-a", "token-b")]
    assert [s.subject for s in subjects if s is not None] == ["static-token-1", "static-token-2"]


# The key set: fetched once for a burst, and a dead key server is not a crash ---------------


class KeyServer:
    """Serves a JWK set at ``/jwks`` (or garbage), counting the fetches."""

    def __init__(self, key: Any, *, garbage: bool = False) -> None:
        jwk = {**key.public_jwk, "kid": "k1", "use": "sig"}
        self.body = b"\x00not json" if garbage else _json.dumps({"keys": [jwk]}).encode()
        self.fetches = 0

    def handle(self, request: HTTPRequest) -> Exchange:
        self.fetches += 1
        return Exchange(200, {"content-type": "application/json"}, self.body)

    def flush(self, session: Any) -> None:
        return None

    def owns(self, session: Any) -> bool:
        return False


@asynccontextmanager
async def _keyed_server(backend: Backend, key: Any, issuer: str) -> AsyncIterator[HTTPCall]:
    """The whoami server checking JWTs against the keys at ``issuer``/jwks; yields an
    initialize POST carrying a token signed with ``key``."""
    import jwt

    verifier = JWTVerifier(issuer, "", jwks_uri=f"{issuer}/jwks")
    server = whoami_server()
    server.auth = ResourceServer("", [issuer], verifier, required_scopes=["mcp"])
    async with backend.serve_http(server) as port:
        url = verifier.audience = f"http://127.0.0.1:{port}/mcp"
        exp = backend.backend.wall_clock() + 600
        claims = {"iss": issuer, "aud": url, "sub": "carol", "scope": "mcp", "exp": exp}
        token = jwt.encode(claims, key.private_key, algorithm="ES256", headers={"kid": "k1"})
        headers = {**POST_HEADERS, "authorization": f"Bearer {token}"}
        yield HTTPCall("POST", url, headers, INITIALIZE)


def test_a_burst_of_requests_fetches_the_key_set_once(backend: Backend) -> None:
    async def main() -> None:
        key = DPoPKey()
        keys = KeyServer(key)
        statuses: list[int] = []
        async with backend.serve_router(keys) as key_port:
            async with _keyed_server(backend, key, f"http://127.0.0.1:{key_port}") as call:

                async def one() -> None:
                    statuses.append((await fetch(backend.backend, call)).status)

                async with backend.backend.open_task_group() as group:
                    for _ in range(8):
                        group.start_soon(one)
        assert statuses == [200] * 8
        assert keys.fetches == 1

    backend.run(main)


def test_an_unreachable_or_broken_key_server_refuses_the_token_cleanly(backend: Backend) -> None:
    async def main() -> None:
        key = DPoPKey()
        broken = KeyServer(key, garbage=True)
        async with backend.serve_router(broken) as broken_port:
            for issuer in (f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{broken_port}"):
                async with _keyed_server(backend, key, issuer) as call:
                    for _ in range(2):  # and the server still answers afterwards
                        refused = await fetch(backend.backend, call)
                        assert refused.status == 401
                        challenge = parse_challenges(refused.headers["www-authenticate"])[0]
                        assert challenge.error == "invalid_token"
        assert broken.fetches == 1  # not again within refetch_interval

    backend.run(main)


# The example server from the command line, checking JWTs ----------------------------------


def test_cli_example_server_checks_jwts_against_a_jwks_uri() -> None:
    import os
    import subprocess
    import sys

    import trio

    from tests.transports.helpers import serving_in_thread
    from trio_adapters.http_client import open_http_client
    from trio_adapters.http_server import serve_router

    authority = TestAuthorizationServer(scopes_supported=["mcp"], jwt=True)
    with serving_in_thread(serve_router, Server("as"), router=authority) as as_port:
        authority.issuer = f"http://127.0.0.1:{as_port}"
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        command = [sys.executable, "-m", "sansio_mcp_cli", "example-server"]
        options = ["--transport", "http", "--port", str(port), "--auth-issuer", authority.issuer]
        jwt_options = ["--auth-jwks-uri", f"{authority.issuer}/jwks", "--auth-resource", url]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        bad = subprocess.run(
            [*command, *options, "--auth-jwks-uri", "http://x/jwks"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert bad.returncode == 1 and "--auth-resource" in bad.stderr
        server = subprocess.Popen(
            [*command, *options, *jwt_options], stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            assert server.stderr is not None
            assert url in server.stderr.readline()

            async def main() -> str:
                with trio.fail_after(30):
                    async with open_http_client(url, auth=OAuthProvider()) as client:
                        result = await client.call_tool("echo", {"message": "jwt"})
                        return str(result["content"][0]["text"])

            assert trio.run(main) == "jwt"
        finally:
            server.terminate()
            server.wait(10)
    steps = [step for step, _ in authority.log]
    assert steps.count("jwks") == 1 and steps.count("token") == 1


async def _restarted(
    backend: Backend, path: Path, damage: Any
) -> tuple[list[str], list[str], str | None, str | None, str | None, OAuthProvider]:
    """A DPoP client authorizes into the file at ``path``; its access token expires and
    ``damage(entry)`` happens to its stored entry while no process runs; a second
    provider over the same file calls again.  The authorization server's steps and
    grants, the two ``jkt`` the calls were bound to, the first key's thumbprint, and
    the second provider."""
    async with _jwt_world(backend, dpop=True) as (authority, url):
        first = OAuthProvider(store=FileTokenStore(path))
        async with backend.open_http_client(url, auth=first) as client:
            before = (await whoami(client))["jkt"]
        key = first.machine.dpop_key if first.machine else None
        everything = json.loads(path.read_text())
        everything[url]["tokens"]["expires_at"] = 1.0  # long past
        damage(everything[url])
        path.write_text(json.dumps(everything))
        second = OAuthProvider(store=FileTokenStore(path))
        async with backend.open_http_client(url, auth=second) as client:
            after = (await whoami(client))["jkt"]
        steps = [step for step, _ in authority.log]
        grants = [form["grant_type"] for step, form in authority.log if step == "token"]
        return steps, grants, before, after, key.thumbprint if key else None, second


def test_a_dpop_bound_refresh_token_is_used_after_a_restart(
    backend: Backend, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    got: list[Any] = []

    async def main() -> None:
        got.extend(await _restarted(backend, path, lambda entry: None))

    backend.run(main)
    steps, grants, before, after, thumbprint, second = got
    # One authorization: the second process refreshed with the first's refresh token,
    # proving the stored key, and its new token is bound to that key too.
    assert steps.count("authorize") == 1 and steps.count("register") == 1, steps
    assert grants == ["authorization_code", "refresh_token"]
    assert before == after == thumbprint is not None
    assert second.store_problem is None
    stored = next(iter(json.loads(path.read_text()).values()))["dpop_key"]
    assert stored["alg"] == "ES256" and stored["pem"].startswith("-----BEGIN PRIVATE KEY-----")
    assert path.stat().st_mode & 0o077 == 0


def test_a_stored_dpop_key_that_does_not_parse_starts_the_flow_afresh(
    backend: Backend, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    got: list[Any] = []

    def damage(entry: dict[str, Any]) -> None:
        entry["dpop_key"] = {"alg": "ES256", "pem": "-----BEGIN PRIVATE KEY-----\nnope\n"}

    async def main() -> None:
        got.extend(await _restarted(backend, path, damage))

    backend.run(main)
    steps, grants, before, after, thumbprint, second = got
    assert second.store_problem is not None
    problem = second.store_problem
    assert problem.startswith("the stored DPoP key for http://127.0.0.1:"), problem
    assert " does not parse (Unable to load PEM file." in problem
    assert problem.endswith("): DPoP-bound tokens are dropped and authorization starts afresh")
    # The tokens bound to the lost key were dropped: a new authorization, a new key.
    assert steps.count("authorize") == 2, steps
    assert grants == ["authorization_code", "authorization_code"]
    assert after is not None and after != before == thumbprint
