"""Hypothesis fuzzing of the session machines, with a large example budget.

    python -m fuzz.sessions --examples 20000 [--seed N] [--revision REV]

Feeds generated MCP messages (valid, invalid variants, and raw byte noise) to
a :class:`ServerSession` and a :class:`ClientSession` at every revision and
checks the invariants: receiving never raises, everything emitted is valid
JSON, and no request id is answered more often than requests carried it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from sansio_mcp import ALL_REVISIONS, NEED_DATA, ClientSession, ServerSession
from sansio_mcp_testing import strategies

_INVALID = (None, None, "wrong_type", "missing_field", "out_of_range", "oversized")


def _inputs(revision: str, sender: str) -> st.SearchStrategy[Any]:
    message = st.sampled_from(_INVALID).flatmap(
        lambda how: strategies.messages(revision, sender=sender, invalid=how, oversize=70_000)
    )
    return st.lists(
        st.one_of(
            message.map(lambda m: ("message", m)),
            message.map(lambda m: ("bytes", (json.dumps(m) + "\n").encode())),
            st.binary(min_size=1, max_size=64).map(lambda b: ("bytes", b)),  # b"" is EOF
            st.lists(message, min_size=1, max_size=3).map(lambda b: ("message", b)),
        ),
        min_size=1,
        max_size=12,
    )


def _drain(session: Any) -> None:
    while session.next_event() is not NEED_DATA:
        pass


def _ids(value: Any) -> list[str]:
    """Keys of the request ids in something fed (a message, a batch, or bytes)."""
    if isinstance(value, bytes):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    found = []
    for message in value if isinstance(value, list) else [value]:
        if (
            isinstance(message, dict)
            and "id" in message
            and not ("result" in message or "error" in message)
        ):
            found.append(json.dumps(message["id"]))
    return found


def _check_output(data: bytes, budget: dict[str, int]) -> None:
    """Everything emitted is JSON; no id gets more answers than requests carried it."""
    for line in data.splitlines():
        obj = json.loads(line)
        for message in obj if isinstance(obj, list) else [obj]:
            if "method" not in message and message.get("id") is not None:
                key = json.dumps(message["id"])
                budget[key] = budget.get(key, 0) - 1
                assert budget[key] >= 0, f"more answers than requests: {message}"


def _feed(session: Any, items: list[tuple[str, Any]]) -> None:
    budget: dict[str, int] = {}
    for kind, value in items:
        for key in _ids(value):
            budget[key] = budget.get(key, 0) + 1
        if kind == "message":
            session.receive_message(value)
        else:
            session.receive_data(value)
        _drain(session)
        _check_output(session.data_to_send(), budget)


def build(revision: str, examples: int, seed: int | None) -> list[Any]:
    common = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )

    @common
    @given(_inputs(revision, "client"))
    def server_side(items: list[tuple[str, Any]]) -> None:
        _feed(ServerSession(capabilities={"tools": {}, "resources": {}, "prompts": {}}), items)

    @common
    @given(_inputs(revision, "server"))
    def client_side(items: list[tuple[str, Any]]) -> None:
        session = ClientSession(protocol_version=revision)
        session.start()
        session.data_to_send()
        _feed(session, items)

    tests = [server_side, client_side]
    if seed is not None:
        tests = [hypothesis_seed(seed)(t) for t in tests]
    return tests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--revision", action="append", choices=ALL_REVISIONS)
    args = parser.parse_args(argv)
    for revision in args.revision or ALL_REVISIONS:
        for test in build(revision, args.examples, args.seed):
            started = time.monotonic()
            test()
            print(
                f"{revision} {test.__name__}: {args.examples} examples ok "
                f"({time.monotonic() - started:.1f}s)",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
