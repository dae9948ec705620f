"""The authorization machine, sans I/O: driven against the test authorization server and
a protected resource's router in memory (no sockets), with injected randomness."""

from __future__ import annotations

import base64
import hashlib
import random
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jwt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp._http_messages import HTTPRequest
from sansio_mcp._streamable_http import Exchange
from sansio_mcp.auth import (
    TRANSITIONS,
    AuthorizationFailed,
    Authorized,
    Challenge,
    ClientInfo,
    Decision,
    DPoPKey,
    FlowState,
    Grant,
    HTTPCall,
    HTTPReply,
    OAuthClient,
    OAuthConfig,
    OpenBrowser,
    ProtectedRouter,
    ResourceServer,
    TokenSet,
    as_metadata_urls,
    code_challenge,
    dpop_proof,
    format_challenge,
    jwk_thumbprint,
    parse_challenges,
    prm_urls,
    random_string,
)
from sansio_mcp.auth._discovery import insecure_endpoint
from sansio_mcp_testing.oauth_server import TestAuthorizationServer

AS = "https://as.test"
RS = "https://rs.test"
SERVER_URL = f"{RS}/mcp"


class _Nothing:
    """The MCP machine behind the protected router: never reached in these tests."""

    def handle(self, request: HTTPRequest) -> Exchange:
        return Exchange(200, {}, b"{}")

    def flush(self, session: Any) -> None: ...

    def owns(self, session: Any) -> bool:
        return False


def _world(
    scopes: list[str] | None = None, required: tuple[str, ...] = ()
) -> tuple[TestAuthorizationServer, ProtectedRouter, dict[str, Any]]:
    authority = TestAuthorizationServer(AS, scopes_supported=scopes)
    resource = ResourceServer(
        SERVER_URL, [AS], authority.verifier, required_scopes=required, scopes_supported=scopes
    )
    protected = ProtectedRouter(_Nothing(), resource)
    return authority, protected, {AS: authority, RS: protected}


def _send(routes: dict[str, Any], call: HTTPCall) -> HTTPReply:
    parts = urlsplit(call.url)
    router = routes[f"{parts.scheme}://{parts.netloc}"]
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    exchange = router.handle(HTTPRequest(call.method, target, dict(call.headers), call.body or b""))
    return HTTPReply(exchange.status, exchange.headers, exchange.take())


def _entropy(seed: int) -> Callable[[int], bytes]:
    rng = random.Random(seed)
    return lambda n: bytes(rng.getrandbits(8) for _ in range(n))


def _drive(
    machine: OAuthClient,
    routes: dict[str, Any],
    *,
    redirect: Callable[[str], str] | None = None,
    now: float = 1000.0,
) -> tuple[Authorized | AuthorizationFailed, list[HTTPCall | OpenBrowser]]:
    """Run a flow to its end; the browser step follows the test server's redirect
    (``redirect`` may tamper with it)."""
    seen: list[HTTPCall | OpenBrowser] = []
    for _ in range(30):
        step = machine.next_step(now)
        if isinstance(step, (Authorized, AuthorizationFailed)):
            return step, seen
        seen.append(step)
        if isinstance(step, OpenBrowser):
            reply = _send(routes, HTTPCall("GET", step.url, {}))
            location = reply.headers["location"]
            machine.receive_redirect(redirect(location) if redirect else location)
        else:
            machine.receive_reply(_send(routes, step), now)
    raise AssertionError("the flow did not end")


def _challenge(machine: OAuthClient, routes: dict[str, Any]) -> Decision:
    """What the protected resource answers a request without a token, told to the machine."""
    reply = _send(
        routes, HTTPCall("POST", SERVER_URL, machine.request_headers("POST", SERVER_URL, 0))
    )
    return machine.on_response(reply.status, reply.headers, authorized=False)


# PKCE, challenges, discovery URLs -------------------------------------------------------


@given(st.binary(min_size=32, max_size=96))
def test_pkce_verifier_and_challenge(entropy: bytes) -> None:
    verifier = random_string(entropy)
    assert 43 <= len(verifier) <= 128
    assert re.fullmatch(r"[A-Za-z0-9\-._~]+", verifier)
    digest = hashlib.sha256(verifier.encode()).digest()
    assert code_challenge(verifier) == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


_token = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
_value = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)


@given(_token, st.dictionaries(_token, _value, max_size=4))
def test_challenge_round_trip(scheme: str, params: dict[str, str]) -> None:
    header = format_challenge(scheme, params)
    (parsed,) = parse_challenges(header)
    assert parsed == Challenge(scheme, params)


def test_challenges_of_two_schemes_and_garbage() -> None:
    header = 'DPoP error="use_dpop_nonce", Bearer resource_metadata="http://x/m", scope="a b"'
    dpop, bearer = parse_challenges(header)
    assert dpop.error == "use_dpop_nonce" and bearer.scope == ["a", "b"]
    assert bearer.resource_metadata == "http://x/m"
    assert parse_challenges('Bearer ="') == [Challenge("bearer")]
    assert parse_challenges(None) == []


def test_discovery_urls_follow_the_spec_order() -> None:
    assert prm_urls("http://h/a/mcp", None) == [
        "http://h/.well-known/oauth-protected-resource/a/mcp",
        "http://h/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("http://h/mcp", "http://h/custom.json") == ["http://h/custom.json"]
    assert as_metadata_urls("http://h/tenant") == [
        "http://h/.well-known/oauth-authorization-server/tenant",
        "http://h/.well-known/openid-configuration/tenant",
        "http://h/tenant/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("http://h") == [
        "http://h/.well-known/oauth-authorization-server",
        "http://h/.well-known/openid-configuration",
    ]


def test_transition_table() -> None:
    reachable, frontier = {FlowState.IDLE}, [FlowState.IDLE]
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    assert reachable | {FlowState.FAILED} == set(FlowState)
    assert TRANSITIONS[FlowState.DONE] == TRANSITIONS[FlowState.FAILED] == {FlowState.IDLE}


# The code flow ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([None, ["mcp:read"], ["mcp:read", "offline_access"]]))
def test_code_flow_against_the_test_server(seed: int, scopes: list[str] | None) -> None:
    authority, _protected, routes = _world(scopes)
    machine = OAuthClient(SERVER_URL, entropy=_entropy(seed))
    assert _challenge(machine, routes) is Decision.AUTHORIZE
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, Authorized), outcome
    token = outcome.tokens.access_token
    assert authority.verify(token, 0) is not None
    # The order: PRM, AS metadata, registration, browser, token; resource on both.
    kinds = [s.url.split("?")[0] if isinstance(s, HTTPCall) else "browser" for s in steps]
    assert kinds == [
        f"{RS}/.well-known/oauth-protected-resource/mcp",
        f"{AS}/.well-known/oauth-authorization-server",
        f"{AS}/register",
        "browser",
        f"{AS}/token",
    ]
    query = dict(parse_qsl(urlsplit(steps[3].url).query))  # type: ignore[union-attr]
    assert query["resource"] == SERVER_URL and query["code_challenge_method"] == "S256"
    expected_scope = " ".join(s for s in (scopes or []) if s != "offline_access") or None
    if scopes and "offline_access" in scopes:
        expected_scope = "mcp:read offline_access"
    assert query.get("scope") == expected_scope
    form = dict(parse_qsl(steps[4].body.decode()))  # type: ignore[union-attr]
    assert form["resource"] == SERVER_URL
    # The request now carries the token, and the resource lets it through.
    headers = machine.request_headers("POST", SERVER_URL, 0)
    assert headers == {"authorization": f"Bearer {token}"}
    assert _send(routes, HTTPCall("POST", SERVER_URL, headers)).status == 200


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda url: re.sub(r"state=[^&]+", "state=forged", url), "state"),
        (lambda url: re.sub(r"iss=[^&]+", "iss=http%3A%2F%2Fevil.test", url), "issuer"),
        (lambda url: re.sub(r"iss=[^&]+", "iss=http%3A%2F%2Fas.test%2F", url), "issuer"),
        (lambda url: re.sub(r"&?iss=[^&]+", "", url), "promised an iss"),
        (lambda url: url + "&code=again", "repeats"),
        (lambda url: url + "&error=access_denied", "access_denied"),
    ],
)
def test_a_tampered_redirect_never_reaches_the_token_endpoint(
    tamper: Callable[[str], str], reason: str
) -> None:
    authority, _, routes = _world()
    machine = OAuthClient(SERVER_URL, entropy=_entropy(1))
    _challenge(machine, routes)
    outcome, _ = _drive(machine, routes, redirect=tamper)
    assert isinstance(outcome, AuthorizationFailed)
    assert reason in outcome.error.message
    assert not [entry for entry in authority.log if entry[0] == "token"]


def test_resource_metadata_for_another_resource_is_refused() -> None:
    authority, _, routes = _world()
    evil = ResourceServer("https://evil.test/mcp", [AS], authority.verifier)
    routes[RS] = ProtectedRouter(_Nothing(), evil)
    machine = OAuthClient(SERVER_URL, entropy=_entropy(2))
    machine.on_response(
        401,
        {"www-authenticate": f'Bearer resource_metadata="{RS}{evil.metadata_path}"'},
        authorized=False,
    )
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed) and "evil.test" in outcome.error.message
    assert len(steps) == 1 and authority.log == []


def test_metadata_of_another_issuer_is_refused() -> None:
    authority, _, routes = _world()
    authority.issuer = "https://attacker.test"
    machine = OAuthClient(SERVER_URL, entropy=_entropy(3))
    _challenge(machine, routes)
    outcome, _ = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed) and "attacker" in outcome.error.message
    assert [entry[0] for entry in authority.log] == ["metadata"]


@pytest.mark.parametrize(
    "key", ["authorization_endpoint", "token_endpoint", "registration_endpoint"]
)
@pytest.mark.parametrize("url", ["http://as.test/x", "ftp://as.test/x", "http://10.0.0.1/x"])
def test_an_endpoint_in_the_clear_is_refused(key: str, url: str) -> None:
    # Codes, secrets and tokens never go to a plain-http (or other non-https) endpoint
    # of a non-loopback host: the flow fails naming it, before anything is sent there.
    authority, _, routes = _world()
    published = authority.metadata
    authority.metadata = lambda: {**published(), key: url}  # type: ignore[method-assign]
    machine = OAuthClient(SERVER_URL, entropy=_entropy(3))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed)
    assert outcome.error.message.startswith(f"the {key} {url} of {AS} is ")
    assert outcome.error.data == {key: url}
    assert [entry[0] for entry in authority.log] == ["metadata"]
    assert not any(url in getattr(step, "url", "") for step in steps)


@pytest.mark.parametrize("issuer", ["http://as.test", "http://192.168.1.2:8080/tenant"])
def test_an_issuer_in_the_clear_is_refused(issuer: str) -> None:
    authority, _, routes = _world()
    resource = ResourceServer(SERVER_URL, [issuer], authority.verifier)
    routes[RS] = ProtectedRouter(_Nothing(), resource)
    machine = OAuthClient(SERVER_URL, entropy=_entropy(3))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed)
    assert outcome.error.message == (
        f"the authorization server {issuer} is plain http, which only a loopback address "
        "may use (else https)"
    )
    assert len(steps) == 1  # the resource metadata; nothing asked of the issuer


def test_a_legacy_server_in_the_clear_is_no_authorization_server() -> None:
    # 2025-03-26 without metadata: the MCP server's origin would be the authorization
    # server, and over plain http to another host it may not be.
    machine = OAuthClient("http://rs.test/mcp", entropy=_entropy(3))
    machine.on_response(401, {"www-authenticate": "Bearer"}, authorized=False)
    not_found = HTTPReply(404, {}, b"")
    outcome = machine.next_step(0.0)
    while not isinstance(outcome, (Authorized, AuthorizationFailed)):
        machine.receive_reply(not_found, 0.0)
        outcome = machine.next_step(0.0)
    assert isinstance(outcome, AuthorizationFailed)
    assert "the authorization server http://rs.test is plain http" in outcome.error.message


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://as.test/token", True),
        ("HTTPS://AS.TEST", True),
        ("http://127.0.0.1:9000/token", True),
        ("http://127.5.6.7/token", True),
        ("http://localhost:8080", True),
        ("http://[::1]:8080/token", True),
        ("http://as.test/token", False),
        ("http://10.0.0.1/token", False),
        ("http://[::2]/token", False),
        ("http://localhost.evil.test/token", False),
        ("https:///no-host", False),
        ("file:///etc/passwd", False),
        ("token", False),
    ],
)
def test_which_endpoints_may_carry_credentials(url: str, allowed: bool) -> None:
    assert (insecure_endpoint(url) is None) is allowed


def test_token_exchange_with_an_idp_in_the_clear_is_refused() -> None:
    _authority, _, routes = _world()
    config = OAuthConfig(
        grant=Grant.TOKEN_EXCHANGE,
        client=ClientInfo("app", "pw"),
        id_token="id-token",
        idp_token_endpoint="http://idp.test/token",
    )
    machine = OAuthClient(SERVER_URL, config, entropy=_entropy(3))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed)
    assert outcome.error.message.startswith("the idp_token_endpoint http://idp.test/token is ")
    assert not any("idp.test" in getattr(step, "url", "") for step in steps)


def test_step_up_unions_scopes_and_the_retry_limit_holds() -> None:
    _authority, _, routes = _world(["a", "b"])
    machine = OAuthClient(SERVER_URL, OAuthConfig(max_authorizations=3), entropy=_entropy(4))
    challenge = {"www-authenticate": 'Bearer scope="a"'}
    assert machine.on_response(401, challenge, authorized=False) is Decision.AUTHORIZE
    assert isinstance(_drive(machine, routes)[0], Authorized)
    refused = {"www-authenticate": 'Bearer error="insufficient_scope", scope="b"'}
    assert machine.on_response(403, refused) is Decision.AUTHORIZE
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, Authorized) and outcome.tokens.scope == "a b"
    # No second registration: the client is kept for its issuer.
    assert [s.url for s in steps if isinstance(s, HTTPCall) and "register" in s.url] == []
    assert machine.on_response(403, refused) is Decision.AUTHORIZE
    _drive(machine, routes)
    assert machine.on_response(403, refused) is Decision.GIVE_UP
    assert machine.last_error is not None and "3 authorizations" in machine.last_error.message
    # A request that gets through resets the count.
    assert machine.on_response(200, {}) is Decision.PROCEED
    assert machine.on_response(403, refused) is Decision.AUTHORIZE


def test_expired_token_is_refreshed_and_a_refused_refresh_starts_over() -> None:
    authority, _, routes = _world()
    machine = OAuthClient(SERVER_URL, entropy=_entropy(5))
    _challenge(machine, routes)
    first, _ = _drive(machine, routes, now=0.0)
    assert isinstance(first, Authorized) and first.tokens.refresh_token
    assert not machine.needs_refresh(100.0) and machine.needs_refresh(4000.0)
    machine.start_refresh()
    second, steps = _drive(machine, routes, now=4000.0)
    assert (
        isinstance(second, Authorized) and second.tokens.access_token != first.tokens.access_token
    )
    assert [dict(parse_qsl(s.body.decode()))["grant_type"] for s in steps] == ["refresh_token"]  # type: ignore[union-attr]
    authority._refresh.clear()  # the server forgot it
    machine.start_refresh()
    third, steps = _drive(machine, routes, now=9000.0)
    assert isinstance(third, Authorized)
    assert any(isinstance(s, OpenBrowser) for s in steps)


def test_pre_registered_client_uses_basic_auth_and_skips_registration() -> None:
    authority, _, routes = _world()
    authority.register_confidential("app", "s3cr:t")
    config = OAuthConfig(client=ClientInfo("app", "s3cr:t", issuer=AS))
    machine = OAuthClient(SERVER_URL, config, entropy=_entropy(6))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, Authorized)
    token_call = steps[-1]
    assert isinstance(token_call, HTTPCall)
    assert (
        token_call.headers["authorization"] == "Basic " + base64.b64encode(b"app:s3cr%3At").decode()
    )
    assert not [entry for entry in authority.log if entry[0] == "register"]


def test_client_credentials_need_no_browser() -> None:
    authority, _, routes = _world()
    authority.register_confidential("robot", "pw")
    config = OAuthConfig(grant=Grant.CLIENT_CREDENTIALS, client=ClientInfo("robot", "pw"))
    machine = OAuthClient(SERVER_URL, config, entropy=_entropy(7))
    _challenge(machine, routes)
    outcome, steps = _drive(machine, routes)
    assert isinstance(outcome, Authorized)
    assert not any(isinstance(s, OpenBrowser) for s in steps)


def test_dpop_nonce_retries_once_per_new_nonce() -> None:
    machine = OAuthClient(SERVER_URL)
    challenge = {"www-authenticate": 'DPoP error="use_dpop_nonce"', "dpop-nonce": "n1"}
    assert machine.on_response(401, challenge) is Decision.RETRY
    assert machine.on_response(401, challenge) is Decision.GIVE_UP
    assert machine.on_response(401, {**challenge, "dpop-nonce": "n2"}) is Decision.RETRY


@given(st.sampled_from(["GET", "POST"]), st.text("abc/", max_size=8), st.integers(0, 2**31))
@settings(max_examples=10, deadline=None)
def test_dpop_proofs_verify_and_bind_the_token(method: str, path: str, now: int) -> None:
    key = _KEY
    url = f"https://rs.test/{path}?q=1#f"
    proof = dpop_proof(key, method, url, now=now, jti="j", nonce="n", access_token="tok")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    public = jwt.PyJWK(header["jwk"]).key
    claims = jwt.decode(proof, public, algorithms=["ES256"], options={"verify_iat": False})
    assert claims["htm"] == method and claims["htu"] == f"https://rs.test/{path}"
    assert claims["iat"] == now and claims["nonce"] == "n"
    digest = hashlib.sha256(b"tok").digest()
    assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert jwk_thumbprint(header["jwk"]) == key.thumbprint


_KEY = DPoPKey()


def test_the_code_flow_needs_no_pyjwt() -> None:
    """PyJWT is imported only to sign a JWT: without it the core, the runtime and a
    plain code flow work, and asking for a JWT says what to install."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        sys.modules["jwt"] = None  # as if PyJWT were not installed
        import sansio_mcp, sansio_mcp.auth, sansio_mcp.runtime
        from sansio_mcp.auth import DPoPKey, OAuthClient, OpenBrowser
        machine = OAuthClient("https://rs.test/mcp")
        machine.on_response(401, {}, authorized=False)
        assert machine.next_step(0).url.endswith("/oauth-protected-resource/mcp")
        try:
            DPoPKey()
        except sansio_mcp.LocalProtocolError as exc:
            assert "pip install 'sansio-mcp[auth]'" in exc.message
        else:
            raise AssertionError("DPoPKey worked without PyJWT")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_client_credentials_without_a_client_fail_precisely() -> None:
    _, _, routes = _world()
    machine = OAuthClient(SERVER_URL, OAuthConfig(grant=Grant.CLIENT_CREDENTIALS))
    _challenge(machine, routes)
    outcome, _ = _drive(machine, routes)
    assert isinstance(outcome, AuthorizationFailed)
    assert "needs a pre-registered client" in outcome.error.message


_text = st.text(max_size=30)


@given(
    st.builds(
        TokenSet,
        access_token=_text.filter(bool),
        token_type=st.sampled_from(["Bearer", "DPoP"]),
        expires_at=st.none() | st.floats(0, 2e9),
        refresh_token=st.none() | _text,
        scope=st.none() | _text,
        issuer=st.none() | _text,
    ),
    st.builds(
        ClientInfo,
        client_id=_text.filter(bool),
        client_secret=st.none() | _text,
        auth_method=st.none() | st.sampled_from(["none", "client_secret_basic"]),
        issuer=st.none() | _text,
    ),
)
def test_tokens_and_registrations_survive_a_store(tokens: TokenSet, client: ClientInfo) -> None:
    """What a TokenStore keeps (JSON) comes back as it was."""
    import json

    assert TokenSet.from_json(json.loads(json.dumps(tokens.to_json()))) == tokens
    assert ClientInfo.from_json(json.loads(json.dumps(client.to_json()))) == client
