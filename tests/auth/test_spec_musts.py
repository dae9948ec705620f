"""The 2025-11-25 authorization MUSTs an audit found missing (issue 35), sans I/O: PKCE
checked before anything else, a refresh after a restart, Client ID Metadata Document
URLs, RFC 9728 §3.3 resource identity, and per-operation scopes on the resource server."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sansio_mcp import _json
from sansio_mcp._http_messages import HTTPRequest
from sansio_mcp.auth import (
    AuthorizationFailed,
    Authorized,
    ClientInfo,
    Decision,
    Grant,
    HTTPCall,
    OAuthClient,
    OAuthConfig,
    OpenBrowser,
    ProtectedRouter,
    ResourceServer,
    StaticTokenVerifier,
    TokenSet,
    parse_challenges,
)
from sansio_mcp.auth._router import operations
from sansio_mcp.http import Exchange
from sansio_mcp_testing.oauth_server import TestAuthorizationServer
from tests.auth.test_machine import (
    AS,
    RS,
    SERVER_URL,
    _challenge,
    _drive,
    _entropy,
    _Nothing,
    _world,
)

# 1. PKCE before anything else -------------------------------------------------------------


class _Documents:
    """A router answering GETs of fixed paths with JSON documents, 404 otherwise."""

    def __init__(self, documents: dict[str, Any]) -> None:
        self.documents = documents
        self.seen: list[str] = []

    def handle(self, request: HTTPRequest) -> Exchange:
        self.seen.append(request.path)
        document = self.documents.get(request.path)
        if document is None:
            return Exchange(404, {}, b"")
        return Exchange(200, {"content-type": "application/json"}, _json.dumps(document).encode())


@pytest.mark.parametrize("methods", [None, ["plain"], [], "S256", ["s256"]])
def test_no_s256_in_the_metadata_stops_the_flow_before_registration(methods: Any) -> None:
    authority, _, routes = _world()
    authority.code_challenge_methods = methods
    machine = OAuthClient(SERVER_URL, entropy=_entropy(1))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed)
    message = outcome.error.message
    assert AS in message and "code_challenge_methods_supported" in message and "PKCE" in message
    assert [name for name, _ in authority.log] == ["metadata"]  # nothing registered
    assert not any(isinstance(step, OpenBrowser) for step in steps)


@pytest.mark.parametrize("methods", [None, ["plain"]])
def test_openid_discovery_metadata_needs_s256_too(methods: list[str] | None) -> None:
    authority, _, routes = _world()
    document = authority.metadata()
    document.pop("code_challenge_methods_supported")
    if methods is not None:
        document["code_challenge_methods_supported"] = methods
    openid = _Documents({"/.well-known/openid-configuration": document})
    routes[AS] = openid
    machine = OAuthClient(SERVER_URL, entropy=_entropy(2))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed)
    assert "code_challenge_methods_supported" in outcome.error.message
    assert openid.seen == [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ]
    assert not any(isinstance(step, OpenBrowser) for step in steps)


def test_grants_without_pkce_do_not_need_it_advertised() -> None:
    authority, _, routes = _world()
    authority.code_challenge_methods = None
    authority.register_confidential("robot", "pw")
    config = OAuthConfig(grant=Grant.CLIENT_CREDENTIALS, client=ClientInfo("robot", "pw"))
    machine = OAuthClient(SERVER_URL, config, entropy=_entropy(3))
    _challenge(machine, routes)
    assert isinstance(_drive(machine, routes)[0], Authorized)


# 2. A refresh after a restart ---------------------------------------------------------------


def _restarted(machine: OAuthClient, **kw: Any) -> OAuthClient:
    """A machine of a new process, from what the first one left in a JSON store."""
    stored = json.loads(json.dumps({"as": machine.authorization_server}))
    assert machine.tokens is not None
    return OAuthClient(
        SERVER_URL,
        entropy=_entropy(9),
        tokens=machine.tokens,
        clients=machine.clients,
        authorization_server=stored["as"],
        **kw,
    )


def test_a_restarted_client_refreshes_without_a_new_flow() -> None:
    authority, _, routes = _world(["mcp"], required=("mcp",))
    first = OAuthClient(SERVER_URL, entropy=_entropy(4))
    _challenge(first, routes)
    assert isinstance(_drive(first, routes, now=0.0)[0], Authorized)
    assert first.authorization_server == {
        "issuer": AS,
        "resource": SERVER_URL,
        "metadata": authority.metadata(),
    }
    # Expired by the time the new process sends: refreshed before the request.
    second = _restarted(first)
    assert second.needs_refresh(4000.0)
    second.start_refresh()
    outcome, steps = _drive(second, routes, now=4000.0)
    assert isinstance(outcome, Authorized)
    forms = [dict(parse_qsl(s.body.decode())) for s in steps if isinstance(s, HTTPCall)]
    assert [f["grant_type"] for f in forms] == ["refresh_token"]
    assert forms[0]["resource"] == SERVER_URL and forms[0]["client_id"] == "client-1"
    # Refused as invalid by the resource (revoked): refreshed, no browser.
    third = _restarted(second)
    authority.tokens.clear()
    assert _challenge_with_token(third, routes) is Decision.AUTHORIZE
    outcome, steps = _drive(third, routes, now=4100.0)
    assert isinstance(outcome, Authorized)
    assert [urlsplit(s.url).path for s in steps] == ["/token"]  # type: ignore[union-attr]


def _challenge_with_token(machine: OAuthClient, routes: dict[str, Any]) -> Decision:
    headers = machine.request_headers("POST", SERVER_URL, 0)
    reply = routes[RS].handle(HTTPRequest("POST", "/mcp", headers, b"{}"))
    return machine.on_response(reply.status, reply.headers, authorized=True)


def test_a_store_without_the_server_rediscovers_it_and_refreshes() -> None:
    """Tokens from a store that kept no authorization server (written before it did):
    a 401 invalid_token finds the server again, then refreshes; no browser."""
    authority, _, routes = _world(["mcp"], required=("mcp",))
    first = OAuthClient(SERVER_URL, entropy=_entropy(7))
    _challenge(first, routes)
    assert isinstance(_drive(first, routes)[0], Authorized)
    assert first.tokens is not None
    second = OAuthClient(SERVER_URL, tokens=first.tokens, clients=first.clients)
    assert not second.needs_refresh(10**6)  # nothing to refresh at, yet
    authority.tokens.clear()
    assert _challenge_with_token(second, routes) is Decision.AUTHORIZE
    outcome, steps = _drive(second, routes)
    assert isinstance(outcome, Authorized)
    assert [urlsplit(s.url).path for s in steps] == [  # type: ignore[union-attr]
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/token",
    ]
    assert dict(parse_qsl(steps[-1].body.decode()))["grant_type"] == "refresh_token"  # type: ignore[union-attr]
    # A refused refresh still ends in a whole flow.
    authority.tokens.clear()
    authority._refresh.clear()
    third = OAuthClient(SERVER_URL, tokens=second.tokens, clients=second.clients)
    _challenge_with_token(third, routes)
    outcome, steps = _drive(third, routes)
    assert isinstance(outcome, Authorized)
    assert any(isinstance(step, OpenBrowser) for step in steps)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=10,
)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "issuer": _json_values | st.just(AS),
            "resource": _json_values | st.just(SERVER_URL),
            "metadata": _json_values | st.just({"token_endpoint": f"{AS}/token"}),
        },
    )
)
def test_a_stored_authorization_server_is_taken_only_when_well_formed(saved: Any) -> None:
    machine = OAuthClient(SERVER_URL, authorization_server=saved)
    restored = machine.authorization_server
    if restored is not None:
        assert restored == saved
        assert isinstance(restored["metadata"]["token_endpoint"], str)


def test_a_stored_authorization_server_of_another_issuer_is_ignored() -> None:
    saved = {
        "issuer": "http://evil.test",
        "resource": SERVER_URL,
        "metadata": {"token_endpoint": "x"},
    }
    tokens = TokenSet("t", expires_at=0.0, refresh_token="r", issuer=AS)
    machine = OAuthClient(SERVER_URL, tokens=tokens, authorization_server=saved)
    assert machine.authorization_server is None and not machine.needs_refresh(100.0)


# 3. Client ID Metadata Document URLs --------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://app.example/client.json", "not https"),
        ("https://app.example", "no path"),
        ("https://app.example/", "no path"),
        ("https:///client.json", "no host"),
        ("https://app.example/a/../client.json", ".. path segment"),
        ("https://app.example/./client.json", ". or .."),
        ("https://app.example/client.json#x", "fragment"),
        ("https://me:pw@app.example/client.json", "user name or password"),
        ("client.json", "not https"),
        ("https://[::1/client.json", "not a URL"),
    ],
)
def test_a_client_id_metadata_url_must_be_https_with_a_path(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match="cannot be a client_id") as raised:
        OAuthConfig(client_metadata_url=url)
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    "url", ["https://app.example/client.json", "https://app.example:8443/c?v=1", "https://a.b/x/"]
)
def test_good_client_id_metadata_urls_are_taken(url: str) -> None:
    assert OAuthConfig(client_metadata_url=url).client_metadata_url == url


# 4. RFC 9728 §3.3: the resource is the identifier the metadata URL was built from ----------

PATH_AWARE = "/.well-known/oauth-protected-resource/mcp"
ROOT = "/.well-known/oauth-protected-resource"


@pytest.mark.parametrize(
    ("where", "resource", "challenge", "accepted"),
    [
        (PATH_AWARE, SERVER_URL, None, True),
        (PATH_AWARE, "HTTPS://RS.test/mcp", None, True),  # RFC 3986 §6.2.2 case
        (PATH_AWARE, RS, None, False),  # a parent: not the identifier of this URL
        (PATH_AWARE, f"{RS}/", None, False),
        (PATH_AWARE, f"{RS}/mcp/more", None, False),
        (ROOT, RS, None, True),
        (ROOT, f"{RS}/", None, True),  # an empty path is "/" (RFC 3986 §6.2.3)
        (ROOT, SERVER_URL, None, False),  # the root document speaks for the origin
        ("/custom.json", SERVER_URL, f"{RS}/custom.json", True),  # the URL requested
        ("/custom.json", RS, f"{RS}/custom.json", False),
        (ROOT, RS, f"{RS}{ROOT}", True),  # the relaxation (docs/authorization.md)
        (ROOT, SERVER_URL, f"{RS}{ROOT}", True),  # the URL requested
        ("/.well-known/oauth-protected-resource/other", f"{RS}/other", "named", False),
        (PATH_AWARE, "http://evil.test/mcp", "named", False),
    ],
)
def test_protected_resource_metadata_must_name_its_own_identifier(
    where: str, resource: str, challenge: str | None, accepted: bool
) -> None:
    authority, _, routes = _world()
    routes[RS] = _Documents({where: {"resource": resource, "authorization_servers": [AS]}})
    machine = OAuthClient(SERVER_URL, entropy=_entropy(5))
    named = f"{RS}{where}" if challenge == "named" else challenge
    header = f'Bearer resource_metadata="{named}"' if named else "Bearer"
    assert machine.on_response(401, {"www-authenticate": header}, authorized=False) is (
        Decision.AUTHORIZE
    )
    outcome, _ = _drive(machine, routes)
    if accepted:
        assert isinstance(outcome, Authorized), outcome
        authorize = next(dict(q) for n, q in authority.log if n == "authorize")
        assert authorize["resource"] == resource  # exactly as published
    else:
        assert isinstance(outcome, AuthorizationFailed)
        assert "RFC 9728" in outcome.error.message and repr(resource) in outcome.error.message
        assert authority.log == []


# 5. Per-operation scopes on the resource server ---------------------------------------------


def _call(name: str, id_: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name}}


def _post(router: ProtectedRouter, token: str | None, body: Any) -> Exchange:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    raw = body if isinstance(body, bytes) else _json.dumps(body).encode()
    return router.handle(HTTPRequest("POST", "/mcp", headers, raw))


def test_operation_scopes_refuse_with_every_scope_the_request_needs() -> None:
    verifier = StaticTokenVerifier(
        {"base": {"mcp"}, "admin": {"mcp", "admin"}, "all": {"mcp", "admin", "files"}}
    )
    rs = ResourceServer(
        SERVER_URL,
        [AS],
        verifier,
        required_scopes=["mcp"],
        operation_scopes={"tools/call deploy": ["admin"], "resources/read": ["files"]},
    )
    router = ProtectedRouter(_Nothing(), rs, scopes_for=lambda m, n: ["extra"] if n == "x" else [])

    def refused(token: str | None, body: Any) -> tuple[int, str | None, list[str]]:
        exchange = _post(router, token, body)
        if exchange.status == 200:
            return 200, None, []
        (challenge,) = parse_challenges(exchange.headers["www-authenticate"])
        return exchange.status, challenge.error, challenge.scope

    list_tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "file:///a"}}
    assert refused("base", list_tools) == (200, None, [])
    assert refused("base", _call("echo")) == (200, None, [])
    assert refused("base", _call("deploy")) == (403, "insufficient_scope", ["mcp", "admin"])
    assert refused("admin", _call("deploy")) == (200, None, [])
    assert refused("admin", read) == (403, "insufficient_scope", ["mcp", "files"])
    assert refused(None, _call("deploy")) == (401, None, ["mcp", "admin"])
    assert refused("all", _call("x")) == (403, "insufficient_scope", ["mcp", "extra"])
    # A batch (2025-03-26) needs what each of its requests needs.
    assert refused("admin", [_call("deploy"), read]) == (
        403,
        "insufficient_scope",
        ["mcp", "admin", "files"],
    )
    # What is no JSON-RPC reaches the MCP machine, which answers it.
    assert refused("base", b"{not json") == (200, None, [])
    assert refused("base", {"method": 7, "params": "x"}) == (200, None, [])


def test_step_up_obtains_the_operation_scope_in_memory() -> None:
    authority = TestAuthorizationServer(AS, scopes_supported=["mcp", "admin"])
    rs = ResourceServer(
        SERVER_URL,
        [AS],
        authority.verifier,
        required_scopes=["mcp"],
        operation_scopes={"tools/call deploy": ["admin"]},
    )
    routes: dict[str, Any] = {AS: authority, RS: ProtectedRouter(_Nothing(), rs)}
    machine = OAuthClient(SERVER_URL, entropy=_entropy(6))
    _challenge(machine, routes)
    first, _ = _drive(machine, routes)
    assert isinstance(first, Authorized) and first.tokens.scope == "mcp"

    def call_deploy() -> Exchange:
        headers = machine.request_headers("POST", SERVER_URL, 0)
        return routes[RS].handle(
            HTTPRequest("POST", "/mcp", headers, _json.dumps(_call("deploy")).encode())
        )

    refused = call_deploy()
    assert refused.status == 403
    assert machine.on_response(403, refused.headers) is Decision.AUTHORIZE
    second, _ = _drive(machine, routes)
    assert isinstance(second, Authorized) and second.tokens.scope == "mcp admin"
    assert call_deploy().status == 200


@given(st.binary(max_size=200) | _json_values.map(lambda v: _json.dumps(v).encode()))
def test_operations_of_any_body_never_raise(body: bytes) -> None:
    found = operations(body)
    assert all(isinstance(m, str) and (t is None or isinstance(t, str)) for m, t in found)
