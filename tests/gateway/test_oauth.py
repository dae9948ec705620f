"""The gateway as an OAuth 2.1 resource server (the config's ``oauth``): JWTs of
our test authorization server, each endpoint its own resource (metadata, audience),
401/403 with their challenges, API keys beside tokens, the call log's principal,
and the client's token never sent upstream; in process, on each backend."""

from __future__ import annotations

import base64
import importlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from sansio_mcp._http import HTTPRequest
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp.auth import parse_challenges
from sansio_mcp.http import Exchange
from sansio_mcp_apps.example_server import build_server
from sansio_mcp_apps.gateway import ConfigError, parse_config
from sansio_mcp_testing.oauth_server import TestAuthorizationServer

from .conftest import serve_gateway, serve_router_on
from .test_virtual import ADAPTERS, HEADERS, LIST

CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "a.echo", "arguments": {"message": "hi"}},
}
UPSTREAM_SECRET = "Bearer upstream-secret"


class Recording:
    """A Streamable HTTP router that notes the Authorization of every request."""

    def __init__(self, router: StreamableHTTPServer) -> None:
        self.router = router
        self.seen: list[str | None] = []

    def handle(self, request: HTTPRequest) -> Exchange:
        self.seen.append(request.headers.get("authorization"))
        return self.router.handle(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.router, name)


async def _token(http: httpx.AsyncClient, issuer: str, scope: str, resource: str) -> str:
    basic = base64.b64encode(b"c1:s1").decode()
    answer = await http.post(
        f"{issuer}/token",
        data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
        headers={"authorization": f"Basic {basic}"},
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


async def _scenario(backend: Any, adapters: str, tmp: Path, discover: bool) -> dict[str, Any]:
    got: dict[str, Any] = {}
    async with backend.open_task_group() as group:
        authority = TestAuthorizationServer(jwt=True)
        authority.register_confidential("c1", "s1")
        as_port = await serve_router_on(backend, group, adapters, build_server(), authority)
        issuer = authority.issuer = f"http://127.0.0.1:{as_port}"
        example = build_server()
        recording = Recording(StreamableHTTPServer(example.create_session))
        up_port = await serve_router_on(backend, group, adapters, example, recording)
        oauth: dict[str, Any] = {"issuer": issuer, "scopes": ["mcp"]}
        if not discover:
            oauth["jwks_uri"] = f"{issuer}/jwks"
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        config = parse_config(
            {
                "connectors": {
                    "a": {
                        "transport": "http",
                        "url": upstream,
                        "headers": {"authorization": UPSTREAM_SECRET},
                    }
                },
                "api_keys": ["root"],
                "virtual_mcps": {"va": {"connectors": ["a"]}},
                "call_log": str(tmp / "calls.jsonl"),
                "oauth": oauth,
            }
        )
        _, url = await serve_gateway(backend, group, adapters, config)
        base = url.removesuffix("/mcp")
        async with backend.fail_after(30):
            async with httpx.AsyncClient(timeout=10) as http:
                good = await _token(http, issuer, "mcp", url)
                virtual = await _token(http, issuer, "mcp", url + "/va")
                unscoped = await _token(http, issuer, "other", url)
                elsewhere = await _token(http, issuer, "mcp", "https://elsewhere.example/mcp")
                authority.issuer = "http://127.0.0.1:1"  # the same key, another issuer
                foreign = await _token(http, issuer, "mcp", url)
                authority.issuer = issuer

                async def post(path: str, token: str | None, body: Any = LIST) -> httpx.Response:
                    auth = {"authorization": f"Bearer {token}"} if token else {}
                    return await http.post(url + path, json=body, headers={**HEADERS, **auth})

                for name, path, token in [
                    ("good", "", good),
                    ("virtual", "/va", virtual),
                    ("virtual-token-on-main", "", virtual),
                    ("main-token-on-virtual", "/va", good),
                    ("none", "", None),
                    ("none-virtual", "/va", None),
                    ("unscoped", "", unscoped),
                    ("elsewhere", "", elsewhere),
                    ("garbage", "", "not.a.jwt"),
                    ("foreign", "", foreign),
                    ("api-key", "", "root"),
                ]:
                    answer = await post(path, token)
                    challenge = answer.headers.get("www-authenticate")
                    parsed = parse_challenges(challenge)[0] if challenge else None
                    tools = None
                    if answer.status_code == 200:
                        tools = sorted(t["name"] for t in answer.json()["result"]["tools"])
                    got[name] = (answer.status_code, parsed, tools)
                http_client = importlib.import_module(f"{adapters}.http_client")
                for mode in ("modern", "legacy"):
                    async with http_client.open_http_client(
                        url + "/va", headers={"authorization": f"Bearer {virtual}"}, mode=mode
                    ) as client:
                        listed = sorted(t["name"] for t in await client.list_tools())
                        echoed = await client.call_tool("a.echo", {"message": mode})
                        got["client", mode] = (listed, echoed["content"][0]["text"])
                called = await post("", good, CALL)
                got["call"] = called.json()["result"]["content"][0]["text"]
                for path in ("", "/va"):
                    prm = await http.get(f"{base}/.well-known/oauth-protected-resource/mcp{path}")
                    got["prm", path] = (prm.status_code, prm.json())
        got["upstream saw"] = set(recording.seen)
        got["tokens"] = {good, virtual, unscoped, elsewhere, foreign}
        got["fetched"] = [entry for entry, _ in authority.log if entry != "token"]
        got["url"] = url
        group.cancel()
    got["log"] = [json.loads(line) for line in (tmp / "calls.jsonl").read_text().splitlines()]
    return got


@pytest.mark.parametrize("discover", [False, True], ids=["jwks_uri", "discovered"])
@pytest.mark.parametrize("adapters", ADAPTERS)
def test_oauth_tokens_open_the_gateway_and_never_go_upstream(
    adapters: str, discover: bool, tmp_path: Path
) -> None:
    backend = importlib.import_module(adapters).BACKEND
    got = backend.run(_scenario, backend, adapters, tmp_path, discover)
    url = got["url"]
    tools = sorted(f"a.{t}" for t in build_server().tools)
    assert got["good"] == (200, None, tools)
    assert got["virtual"] == (200, None, tools)
    assert got["api-key"] == (200, None, tools)  # API keys still work beside tokens
    assert got["call"] == "hi"
    for mode in ("modern", "legacy"):  # our client, in either era, with a token
        assert got["client", mode] == (tools, mode)
    for name, path in [("none", ""), ("none-virtual", "/va")]:
        status, challenge, _ = got[name]
        assert status == 401 and challenge.scheme.lower() == "bearer"
        assert challenge.error is None
        assert challenge.params["resource_metadata"] == (
            url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp" + path
        )
    # A token for another endpoint or resource, or no JWT at all: invalid here.
    for name in (
        "virtual-token-on-main",
        "main-token-on-virtual",
        "elsewhere",
        "garbage",
        "foreign",
    ):
        status, challenge, _ = got[name]
        assert (status, challenge.error) == (401, "invalid_token"), name
    status, challenge, _ = got["unscoped"]
    assert (status, challenge.error, challenge.params.get("scope")) == (
        403,
        "insufficient_scope",
        "mcp",
    )
    for path in ("", "/va"):
        status, document = got["prm", path]
        assert status == 200
        assert document["resource"] == url + path
        assert document["authorization_servers"] == [document["authorization_servers"][0]]
        assert document["scopes_supported"] == ["mcp"]
    # Upstream saw the connector's own credential, never a client's token.
    assert got["upstream saw"] == {UPSTREAM_SECRET}
    assert not got["tokens"] & {s.removeprefix("Bearer ") for s in got["upstream saw"]}
    assert ("metadata" in got["fetched"]) is discover and "jwks" in got["fetched"]
    # The call log's principal is the token's subject.
    assert {entry["principal"] for entry in got["log"]} == {"user-c1"}
    assert [entry["endpoint"] for entry in got["log"]] == ["va", "va", None]


@pytest.mark.parametrize(
    ("oauth", "message"),
    [
        ("https://as.example", "oauth must be an object with an issuer"),
        ({}, "oauth.issuer must be an http or https URL"),
        ({"issuer": "as.example"}, "oauth.issuer must be an http or https URL"),
        ({"issuer": "https://as.example", "jwks": {}}, "oauth"),
        ({"issuer": "https://as.example", "jwks_uri": 3}, "oauth.jwks_uri must be an http"),
        ({"issuer": "https://as.example", "audience": "ftp://x"}, "oauth.audience must be an http"),
        ({"issuer": "https://as.example#x"}, "oauth.issuer must have no query or fragment"),
        ({"issuer": "https://as.example", "scopes": "mcp"}, "oauth.scopes must be a list"),
        ({"issuer": "https://as.example", "scopes": ["a b"]}, "oauth.scopes must be scope names"),
    ],
)
def test_a_bad_oauth_block_is_refused_precisely(oauth: Any, message: str) -> None:
    config = {"connectors": {"a": {"transport": "http", "url": "http://x/mcp"}}, "oauth": oauth}
    with pytest.raises(ConfigError) as refused:
        parse_config(config)
    assert message in str(refused.value)
    assert str(refused.value).startswith("oauth")


def test_a_good_oauth_block_is_read() -> None:
    config = parse_config(
        {
            "connectors": {"a": {"transport": "http", "url": "http://x/mcp"}},
            "oauth": {
                "issuer": "https://as.example",
                "audience": "https://gw.example/mcp/",
                "scopes": ["mcp", "mcp"],
            },
        }
    )
    assert config.oauth is not None
    assert config.oauth.audience == "https://gw.example/mcp"
    assert config.oauth.scopes == ("mcp",) and config.oauth.jwks_uri is None


def test_the_command_refuses_a_bad_oauth_block_at_start(tmp_path: Path) -> None:
    import subprocess

    from .conftest import CLI, REPO

    path = tmp_path / "gateway.json"
    config = {
        "connectors": {"a": {"transport": "http", "url": "http://127.0.0.1:1/mcp"}},
        "oauth": {"issuer": "https://as.example", "audience": "mcp"},
    }
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [*CLI, "gateway", "--config", str(path), "--port", "0"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{path}: oauth.audience must be an http or https URL" in done.stderr


def test_the_issuers_keys_are_found_from_its_metadata_in_each_place_in_turn() -> None:
    from sansio_mcp.auth import HTTPReply
    from sansio_mcp_apps.gateway import GatewayOAuth, GatewayTokenVerifier
    from sansio_mcp_apps.gateway._oauth import DISCOVERY_RETRY

    issuer = "https://as.example/tenant"
    verifier = GatewayTokenVerifier(GatewayOAuth(issuer))

    def asked(now: float) -> str | None:
        call = verifier.next_call("token", now)
        return None if call is None else call.url

    def reply(status: int, body: Any) -> HTTPReply:
        return HTTPReply(status, {}, json.dumps(body).encode())

    seen = []
    for answer in (
        reply(404, {}),
        reply(200, {"issuer": "https://evil.example", "jwks_uri": "https://evil.example/k"}),
        None,
    ):
        seen.append(asked(0.0))
        verifier.receive_reply(answer, 0.0)
    assert seen == [
        "https://as.example/.well-known/oauth-authorization-server/tenant",
        "https://as.example/.well-known/openid-configuration/tenant",
        "https://as.example/tenant/.well-known/openid-configuration",
    ]
    assert verifier.jwt is None and verifier.verify("token", 0.0) is None
    assert asked(DISCOVERY_RETRY - 1) is None  # not asked again at once
    assert asked(DISCOVERY_RETRY) == seen[0]
    verifier.receive_reply(reply(200, {"issuer": issuer, "jwks_uri": f"{issuer}/jwks"}), 31.0)
    assert verifier.jwt is not None and asked(31.0) == f"{issuer}/jwks"
