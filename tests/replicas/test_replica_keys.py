"""The requestState key ring across replicas of ``sansio-mcp example-server``, each
round addressed to the replica the test picks (one on Trio, the next on asyncio): a
shared key file lets any replica continue any other's call, different keys do not
(the reason for the key file), a rotation in stages keeps calls in flight, and a
state is its principal's alone."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from replica_service import example_replicas, write_key_file

from .rounds import elicit_across

DONE = {"action": "accept", "answer": "teal"}


def test_a_shared_key_file_lets_the_second_round_cross_replicas(
    tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    ring = write_key_file(tmp_path / "ring", keys[0])
    with example_replicas(tmp_path, [ring, ring]) as (a, b):
        assert elicit_across(a.url, b.url)["result"]["structuredContent"] == DONE
        assert elicit_across(b.url, a.url)["result"]["structuredContent"] == DONE


@pytest.mark.parametrize("shared", ["no key file", "different key files"])
def test_replicas_without_a_shared_ring_fail_the_second_round(
    shared: str, tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    """Today's default (a random key per process), or two rings: the other replica
    cannot open the state, and says so precisely."""
    files = (
        [None, None]
        if shared == "no key file"
        else [write_key_file(tmp_path / "k1", keys[0]), write_key_file(tmp_path / "k2", keys[1])]
    )
    with example_replicas(tmp_path, files) as (a, b):
        for first, second in ((a, b), (b, a)):
            error = elicit_across(first.url, second.url)["error"]
            assert error["code"] == -32602
            assert error["message"].startswith("requestState failed its integrity check")
            assert "replicas must share their state key ring" in error["message"]


def test_a_rotation_in_stages_keeps_every_call_in_flight(
    tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    """The safe order: add the new key last everywhere, then first everywhere, then drop
    the old one.  Replicas one stage apart continue each other's calls, both ways; a
    state sealed with the old key opens wherever the old key is still in the ring."""
    old, new = keys
    stages = [
        write_key_file(tmp_path / "stage0", old),
        write_key_file(tmp_path / "stage1", old, new),
        write_key_file(tmp_path / "stage2", new, old),
        write_key_file(tmp_path / "stage3", new),
    ]
    with example_replicas(tmp_path, stages) as replicas:
        for here, there in pairwise(replicas):
            assert elicit_across(here.url, there.url)["result"]["structuredContent"] == DONE
            assert elicit_across(there.url, here.url)["result"]["structuredContent"] == DONE
        # Sealed with the old key (stage 0 or 1) and opened by [new, old]: still fine.
        stage0, stage1, stage2, stage3 = replicas
        assert elicit_across(stage0.url, stage2.url)["result"]["structuredContent"] == DONE
        # Skipping a stage breaks calls: [new, old] seals with new, [old] cannot open it,
        # and once old is dropped what it sealed is refused.
        for first, second in ((stage2, stage0), (stage0, stage3), (stage1, stage3)):
            error = elicit_across(first.url, second.url)["error"]
            assert error["code"] == -32602
            assert "sealed with a key this server does not hold" in error["message"]


def test_a_state_is_its_principals_alone_across_replicas(
    tmp_path: Path, keys: tuple[bytes, bytes]
) -> None:
    """With auth on, a state sealed for one token's subject is refused to another's,
    on any replica; the same subject goes on anywhere."""
    ring = write_key_file(tmp_path / "ring", keys[0])
    tokens = ["--auth-token", "alice-token", "--auth-token", "bob-token"]
    with example_replicas(tmp_path, [ring, ring], extra=tokens) as (a, b):
        same = elicit_across(a.url, b.url, token="alice-token")
        assert same["result"]["structuredContent"] == DONE
        other = elicit_across(a.url, b.url, token="alice-token", second_token="bob-token")
        assert other["error"]["code"] == -32602
        assert other["error"]["message"] == (
            "requestState was sealed for another principal: only the one whose request "
            "made it may continue it"
        )
