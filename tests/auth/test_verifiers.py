"""The resource server's pure parts: the JWT verifier (signature, issuer, audience,
time passed in, scopes, key set fetching as calls to make), the DPoP proof checker
(RFC 9449 §4.3) and the protected router's DPoP rules."""

from __future__ import annotations

import hashlib
from typing import Any

import attrs
import jwt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sansio_mcp import _json
from sansio_mcp._http_messages import HTTPRequest
from sansio_mcp._streamable_http import Exchange
from sansio_mcp.auth import (
    AccessToken,
    Credentials,
    DPoPChecker,
    DPoPKey,
    HTTPReply,
    JWTVerifier,
    ProtectedRouter,
    ResourceServer,
    StaticTokenVerifier,
    dpop_proof,
    parse_challenges,
)
from sansio_mcp.auth._dpop_check import NONCE_REQUIRED, normalize_htu
from sansio_mcp.auth._pkce import b64url

ISSUER = "https://as.example"
AUDIENCE = "https://mcp.example/mcp"
NOW = 1_800_000_000.0
KEY = DPoPKey()  # an ES256 key pair, standing in for the authorization server's
OTHER_KEY = DPoPKey()


def jwks(*keys: tuple[DPoPKey, str]) -> dict[str, Any]:
    return {"keys": [{**key.public_jwk, "kid": kid, "use": "sig"} for key, kid in keys]}


def sign(claims: dict[str, Any], key: DPoPKey = KEY, kid: str | None = "k1", **kw: Any) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims, key.private_key, algorithm="ES256", headers=headers, **kw)


def claims(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "client_id": "agent",
        "scope": "mcp read",
        "iat": int(NOW),
        "exp": int(NOW) + 600,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


# JWTVerifier ----------------------------------------------------------------------------


def test_a_valid_jwt_gives_its_subject_scopes_client_claims_and_expiry() -> None:
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")))
    token = sign(claims(cnf={"jkt": "thumb"}))
    access = verifier.verify(token, NOW)
    assert access is not None
    assert access.subject == "alice" and access.client_id == "agent"
    assert access.scopes == {"mcp", "read"}
    assert access.expires_at == NOW + 600
    assert access.claims["iss"] == ISSUER and access.jkt == "thumb"


def test_scopes_come_from_scp_as_a_list_and_the_client_from_azp() -> None:
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")))
    token = sign(claims(scope=None, client_id=None, scp=["a", "b"], azp="web"))
    access = verifier.verify(token, NOW)
    assert access is not None and access.scopes == {"a", "b"} and access.client_id == "web"


@pytest.mark.parametrize(
    "bad",
    [
        claims(iss="https://evil.example"),
        claims(aud="https://other.example/mcp"),
        claims(exp=None),
        claims(aud=None),
        claims(nbf=int(NOW) + 3600),
        claims(iat=int(NOW) + 3600),
    ],
    ids=["issuer", "audience", "no-exp", "no-aud", "not-yet-valid", "issued-in-the-future"],
)
def test_a_jwt_for_another_issuer_audience_or_time_is_refused(bad: dict[str, Any]) -> None:
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")))
    assert verifier.verify(sign(bad), NOW) is None


def test_forged_unsigned_hmac_and_foreign_key_tokens_are_refused() -> None:
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")))
    unsigned = jwt.encode(claims(), None, algorithm="none", headers={"kid": "k1"})
    public_text = KEY.public_jwk["x"]  # HMAC keyed with public text
    hmac = jwt.encode(claims(), public_text, algorithm="HS256", headers={"kid": "k1"})
    assert verifier.verify(unsigned, NOW) is None
    assert verifier.verify(hmac, NOW) is None
    assert verifier.verify(sign(claims(), key=OTHER_KEY), NOW) is None
    assert verifier.verify(sign(claims(), kid="unknown"), NOW) is None
    assert verifier.verify("not a jwt", NOW) is None


@settings(max_examples=60, deadline=None)
@given(offset=st.integers(-100_000, 100_000), leeway=st.integers(0, 120))
def test_expiry_is_judged_by_the_time_passed_in(offset: int, leeway: int) -> None:
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")), leeway=leeway)
    token = sign(claims(iat=int(NOW) - 200_000, exp=int(NOW)))
    accepted = verifier.verify(token, NOW + offset) is not None
    assert accepted == (offset < leeway)


def test_the_key_set_is_fetched_cached_for_its_ttl_and_refetched_for_a_new_kid() -> None:
    verifier = JWTVerifier(
        ISSUER, AUDIENCE, jwks_uri=f"{ISSUER}/jwks", jwks_ttl=300, refetch_interval=30
    )
    token = sign(claims())
    call = verifier.next_call(token, NOW)
    assert call is not None and (call.method, call.url) == ("GET", f"{ISSUER}/jwks")
    assert verifier.verify(token, NOW) is None  # no keys yet
    verifier.receive_reply(HTTPReply(200, {}, _json.dumps(jwks((KEY, "k1"))).encode()), NOW)
    assert verifier.next_call(token, NOW + 10) is None
    assert verifier.verify(token, NOW + 10) is not None
    assert verifier.next_call(token, NOW + 301) is not None  # stale: fetched again
    # A rotated key: an unknown kid fetches again, but not more than every 30 s.
    rotated = sign(claims(), key=OTHER_KEY, kid="k2")
    assert verifier.next_call(rotated, NOW + 20) is None
    assert verifier.next_call(rotated, NOW + 40) is not None
    verifier.receive_reply(
        HTTPReply(200, {}, _json.dumps(jwks((OTHER_KEY, "k2"))).encode()), NOW + 40
    )
    assert verifier.verify(rotated, NOW + 40) is not None
    assert verifier.verify(token, NOW + 40) is None  # k1 was retired


@pytest.mark.parametrize(
    "reply",
    [None, HTTPReply(500, {}, b"oops"), HTTPReply(200, {}, b"not json"), HTTPReply(200, {}, b"{}")],
)
def test_a_failed_key_set_fetch_keeps_the_keys_and_waits_before_retrying(
    reply: HTTPReply | None,
) -> None:
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks_uri=f"{ISSUER}/jwks", refetch_interval=30)
    token = sign(claims())
    verifier.receive_reply(HTTPReply(200, {}, _json.dumps(jwks((KEY, "k1"))).encode()), NOW)
    verifier.receive_reply(reply, NOW + 400)
    assert verifier.verify(token, NOW + 400) is not None
    assert verifier.next_call(token, NOW + 410) is None


def test_a_verifier_needs_exactly_one_key_source() -> None:
    with pytest.raises(ValueError):
        JWTVerifier(ISSUER, AUDIENCE)
    with pytest.raises(ValueError):
        JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")), jwks_uri="https://x/jwks")
    with pytest.raises(ValueError):
        JWTVerifier(ISSUER, AUDIENCE, jwks={"no": "keys"})


# DPoPChecker ------------------------------------------------------------------------------


URL = "https://mcp.example/mcp"


def check(checker: DPoPChecker, proof: str | None, **kw: Any) -> str | None:
    args: dict[str, Any] = {
        "method": "POST",
        "url": URL,
        "access_token": "tok",
        "jkt": KEY.thumbprint,
        "now": NOW,
    }
    args.update(kw)
    return checker.check(proof, **args)


def proof(jti: str = "j1", *, key: DPoPKey = KEY, **kw: Any) -> str:
    args: dict[str, Any] = {"now": NOW, "jti": jti, "access_token": "tok"}
    args.update(kw)
    return dpop_proof(key, args.pop("method", "POST"), args.pop("url", URL), **args)


def test_a_good_proof_passes_once_and_is_then_a_replay() -> None:
    checker = DPoPChecker()
    assert check(checker, proof("once")) is None
    assert check(checker, proof("once")) == "the DPoP proof was used before"
    assert check(checker, proof("twice")) is None


@pytest.mark.parametrize(
    ("made", "needle"),
    [
        (lambda: proof(method="GET"), "htm"),
        (lambda: proof(url="https://mcp.example/other"), "htu"),
        (lambda: proof(url="https://mcp.example:port/mcp"), "htu"),
        (lambda: proof(access_token="other"), "ath"),
        (lambda: proof(key=OTHER_KEY), "bound to"),
        (lambda: proof(now=NOW - 3600), "iat"),
        (lambda: None, "required"),
        (lambda: "garbage", "not a JWT"),
        (lambda: proof() + "," + proof("j2"), "exactly one"),
    ],
    ids=["htm", "htu", "htu-port", "ath", "jkt", "iat", "missing", "garbage", "two"],
)
def test_a_proof_for_another_request_token_key_or_time_is_refused(made: Any, needle: str) -> None:
    error = check(DPoPChecker(), made())
    assert error is not None and needle in error


def _raw_proof(header: dict[str, Any], key: DPoPKey = KEY, alg: str = "ES256") -> str:
    ath = b64url(hashlib.sha256(b"tok").digest())
    body = {"jti": "x", "htm": "POST", "htu": URL, "iat": int(NOW), "ath": ath}
    signing = key.private_key if alg != "none" else None
    return jwt.encode(body, signing, algorithm=alg, headers=header)


def test_a_proof_with_a_wrong_typ_a_private_jwk_or_no_signature_is_refused() -> None:
    checker = DPoPChecker()
    assert "typ" in (check(checker, _raw_proof({"typ": "JWT", "jwk": KEY.public_jwk})) or "")
    private = jwt.algorithms.ECAlgorithm.to_jwk(KEY.private_key, as_dict=True)
    assert "private" in (check(checker, _raw_proof({"typ": "dpop+jwt", "jwk": private})) or "")
    unsigned = _raw_proof({"typ": "dpop+jwt", "jwk": KEY.public_jwk}, alg="none")
    assert "algorithm" in (check(checker, unsigned) or "")
    assert check(checker, _raw_proof({"typ": "dpop+jwt", "jwk": KEY.public_jwk})) is None


@settings(max_examples=50, deadline=None)
@given(offset=st.integers(-500, 500), window=st.integers(1, 300))
def test_iat_is_accepted_within_the_window_either_way(offset: int, window: int) -> None:
    checker = DPoPChecker(iat_window=window)
    accepted = check(checker, proof(now=NOW + offset)) is None
    assert accepted == (abs(offset) <= window)


@given(st.sampled_from(["", "?a=1", "#frag", "?q#f"]))
def test_htu_ignores_query_fragment_case_and_default_port(tail: str) -> None:
    assert normalize_htu("HTTPS://MCP.Example:443/mcp" + tail) == normalize_htu(URL)
    assert normalize_htu("https://mcp.example:8443/mcp") != normalize_htu(URL)


def test_the_replay_cache_is_bounded() -> None:
    checker = DPoPChecker(max_remembered=2)
    assert check(checker, proof("a")) is None
    assert check(checker, proof("b")) is None
    assert "too many" in (check(checker, proof("c")) or "")
    # Once the first ones are past their window they make room.
    later = NOW + checker.replay_window + 1
    fresh = proof("d", now=later)
    assert check(checker, fresh, now=later) is None


def test_server_nonces_are_required_when_configured_and_good_for_two_periods() -> None:
    checker = DPoPChecker(nonce_secret=b"n" * 32, nonce_lifetime=100)
    assert check(checker, proof("a")) == NONCE_REQUIRED
    nonce = checker.current_nonce(NOW)
    assert nonce is not None and check(checker, proof("b", nonce=nonce)) is None
    assert check(checker, proof("c", nonce="1.forged")) == NONCE_REQUIRED
    assert check(checker, proof("c2", nonce="ñ\udcff")) == NONCE_REQUIRED
    later = NOW + 100
    assert check(checker, proof("d", nonce=nonce, now=later), now=later) is None
    much_later = NOW + 200
    stale = proof("e", nonce=nonce, now=much_later)
    assert check(checker, stale, now=much_later) == NONCE_REQUIRED
    other = DPoPChecker(nonce_secret=b"o" * 32, nonce_lifetime=100)
    assert other.current_nonce(NOW) != nonce
    assert DPoPChecker().current_nonce(NOW) is None
    with pytest.raises(ValueError):
        DPoPChecker(nonce_secret=b"short")


# The protected router's DPoP rules --------------------------------------------------------


class _Inner:
    def handle(self, request: HTTPRequest) -> Exchange:
        return Exchange(200, {}, b"through")

    def flush(self, session: Any) -> None:
        return None

    def owns(self, session: Any) -> bool:
        return False


def _router(token: AccessToken) -> ProtectedRouter:
    verifier = StaticTokenVerifier({})
    verifier.verify = lambda presented, now: token if presented == token.token else None  # type: ignore[method-assign]
    rs = ResourceServer(URL, [ISSUER], verifier, required_scopes=["mcp"])
    router = ProtectedRouter(_Inner(), rs)
    router.set_time(NOW)
    return router


def _request(authorization: str, dpop: str | None = None) -> HTTPRequest:
    headers = {"host": "mcp.example", "authorization": authorization}
    if dpop is not None:
        headers["dpop"] = dpop
    return HTTPRequest("POST", "/mcp", headers, b"{}")


def test_a_bound_token_passes_only_as_dpop_with_a_good_proof() -> None:
    router = _router(AccessToken("tok", frozenset({"mcp"}), jkt=KEY.thumbprint))
    assert router.handle(_request("DPoP tok", proof("p1"))).status == 200
    for request in (
        _request("Bearer tok"),  # downgraded to a bearer token (RFC 9449 §7.2)
        _request("DPoP tok"),  # no proof
        _request("DPoP tok", proof("p1")),  # replayed
        _request("DPoP tok", proof("p2", key=OTHER_KEY)),  # the wrong key
    ):
        refused = router.handle(request)
        assert refused.status == 401
        (challenge,) = parse_challenges(refused.headers["www-authenticate"])
        assert challenge.scheme == "dpop" and challenge.error == "invalid_dpop_proof"
        assert challenge.params["algs"].split()[0] == "ES256"


def test_proofs_are_for_the_url_the_client_used_under_a_mount_prefix() -> None:
    mounted = "https://mcp.example/tools/mcp"
    router = _router(AccessToken("tok", frozenset({"mcp"}), jkt=KEY.thumbprint))
    router.resource_server = attrs.evolve(router.resource_server, resource=mounted)
    # An ASGI app mounted at /tools sees the target without its root_path.
    assert router.handle(_request("DPoP tok", proof("m1", url=mounted))).status == 200
    assert router.handle(_request("DPoP tok", proof("m2", url=URL))).status == 401


def test_a_nonce_requiring_router_answers_use_dpop_nonce_with_the_nonce() -> None:
    router = _router(AccessToken("tok", frozenset({"mcp"}), jkt=KEY.thumbprint))
    rs = attrs.evolve(router.resource_server, dpop=DPoPChecker(nonce_secret=b"s" * 32))
    router.resource_server = rs
    refused = router.handle(_request("DPoP tok", proof("n1")))
    assert refused.status == 401
    (challenge,) = parse_challenges(refused.headers["www-authenticate"])
    assert challenge.scheme == "dpop" and challenge.error == "use_dpop_nonce"
    nonce = refused.headers["dpop-nonce"]
    passed = router.handle(_request("DPoP tok", proof("n2", nonce=nonce)))
    assert passed.status == 200 and passed.headers["dpop-nonce"] == nonce


def test_an_unbound_token_sent_as_dpop_is_refused_and_as_bearer_passes() -> None:
    router = _router(AccessToken("tok", frozenset({"mcp"})))
    assert router.handle(_request("Bearer tok")).status == 200
    assert router.handle(_request("DPoP tok", proof("p3"))).status == 401


def test_a_sync_router_refuses_an_async_verifier_precisely() -> None:
    class Introspecting:
        async def verify(self, token: str, now: float) -> AccessToken | None:
            return AccessToken(token)

    router = ProtectedRouter(_Inner(), ResourceServer(URL, [ISSUER], Introspecting()))
    with pytest.raises(TypeError, match="async"):
        router.handle(_request("Bearer tok"))
    verified = router.handle_verified(
        _request("Bearer tok"), Credentials("bearer", "tok"), AccessToken("tok")
    )
    assert verified.status == 200


# Bad input: a precise refusal, never an exception ------------------------------------------

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _segment(value: Any) -> str:
    return b64url(_json.dumps(value).encode())


@settings(max_examples=150, deadline=None)
@given(
    header=st.dictionaries(st.sampled_from(["typ", "alg", "jwk", "kid"]), _json_values),
    payload=_json_values,
    signature=st.text(max_size=10),
    garbage=st.text(max_size=30),
)
def test_malformed_tokens_and_proofs_are_refused_without_raising(
    header: dict[str, Any], payload: Any, signature: str, garbage: str
) -> None:
    forged = f"{_segment(header)}.{_segment(payload)}.{signature}"
    verifier = JWTVerifier(ISSUER, AUDIENCE, jwks=jwks((KEY, "k1")))
    checker = DPoPChecker(nonce_secret=b"x" * 16)
    for token in (forged, garbage):
        assert verifier.verify(token, NOW) is None
        assert isinstance(check(checker, token), str)
    # A well-signed proof whose header and claims are arbitrary is refused too.
    real_header = {"typ": "dpop+jwt", "jwk": header.get("jwk", KEY.public_jwk)}
    claims_ = payload if isinstance(payload, dict) else {"x": payload}
    signed = jwt.encode(claims_, KEY.private_key, algorithm="ES256", headers=real_header)
    assert isinstance(check(checker, signed), str)
