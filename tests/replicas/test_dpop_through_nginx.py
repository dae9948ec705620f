"""DPoP proofs replayed through nginx (plain round-robin): 2 and 3 example-server
processes protected by one DPoP-bound token (``dpop_server.py``) on one Redis store.  A
proof used once is refused (401 ``invalid_dpop_proof``) when replayed, through nginx (the
replay lands on the next replica) and at every replica directly; with the memory store
each replica remembers only its own proofs, so the replay at another passes, which is
why replicas need the shared store."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from nginx_service import nginx_in_front
from redis_service import RedisService
from replica_service import example_replicas, write_key_file

from sansio_mcp.auth import DPoPKey, dpop_proof, parse_challenges
from tests.auth.test_http import INITIALIZE
from tests.transports.helpers import POST_HEADERS

from .dpop_server import JKT_VARIABLE, RESOURCE

pytestmark = pytest.mark.interop

DPOP_SERVER = [sys.executable, str(Path(__file__).with_name("dpop_server.py"))]


def proof_of(key: DPoPKey) -> str:
    return dpop_proof(
        key, "POST", RESOURCE, now=time.time(), jti=uuid.uuid4().hex, access_token="tok"
    )


def post(url: str, proof: str) -> httpx.Response:
    headers = {**POST_HEADERS, "authorization": "DPoP tok", "dpop": proof}
    return httpx.post(url, content=INITIALIZE, headers=headers, timeout=30)


def refused_as_replayed(response: httpx.Response) -> bool:
    if response.status_code != 401:
        return False
    [challenge] = parse_challenges(response.headers["www-authenticate"])
    return challenge.error == "invalid_dpop_proof" and response.json() == {
        "error": "invalid_dpop_proof",
        "error_description": "the DPoP proof was used before",
    }


@pytest.mark.parametrize(("store", "count"), [("redis", 2), ("redis", 3), ("memory", 2)])
def test_a_dpop_proof_replayed_at_another_replica_is_refused(
    store: str,
    count: int,
    tmp_path: Path,
    redis_service: RedisService,
    keys: tuple[bytes, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = DPoPKey()
    monkeypatch.setenv(JKT_VARIABLE, key.thumbprint)  # the replicas inherit it
    ring = write_key_file(tmp_path / "ring", keys[0])
    extra = ["--store", redis_service.url if store == "redis" else "memory"]
    with (
        example_replicas(tmp_path, [ring] * count, extra=extra, program=DPOP_SERVER) as replicas,
        nginx_in_front([r.port for r in replicas], tmp_path / "nginx") as nginx,
    ):
        url = f"{nginx.base}/mcp"
        proof = proof_of(key)
        first = post(url, proof)
        assert first.status_code == 200, first.text
        used_at = first.headers["x-upstream"]
        replayed = post(url, proof)
        assert replayed.headers["x-upstream"] != used_at  # the next replica
        others = [r for r in replicas if r.upstream != used_at]
        if store == "redis":
            assert refused_as_replayed(replayed), (replayed.status_code, replayed.headers)
            for other in others:
                assert refused_as_replayed(post(other.url, proof))
        else:
            assert replayed.status_code == 200
        # A fresh proof still works everywhere.
        for replica in replicas:
            fresh = proof_of(key)
            assert post(replica.url, fresh).status_code == 200
