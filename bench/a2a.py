"""Row 12: the A2A bridge (``sansio-mcp a2a-bridge``) in front of a streaming a2a-sdk
agent, against the a2a-sdk client's own call to the same agent (issue 37: at
most 1.0x the time per call).

The agent is the fixture agent (``sansio_mcp_testing.a2a_agent``, on the
a2a-sdk server; its card declares streaming).  Two kinds of call:

* ``echo``: the agent answers with a Message at once;
* ``task``: the agent makes a task and streams it: SUBMITTED, WORKING, an artifact
  holding the reversed text, COMPLETED.

``bridge``: our Trio client calls the bridge's ``a2a_send_message`` tool
(2026-07-28, no tasks extension: one ``tools/call`` that answers once the agent
has).  ``a2a-sdk``: an a2a-sdk ``Client`` (streaming, as the card allows) sends
the same text and reads the stream to its end.  Each in its own worker, the
bridge and the agent the same processes for both, interleaved.
"""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._proc import PY, WorkerError, http_server, run_worker

if TYPE_CHECKING:
    from ._model import Counts, Results

__all__ = ["ROW12_TITLE", "counts", "lines", "row12", "run_a2a", "targets"]

ROW12_TITLE = "A2A bridge: a2a_send_message through the bridge vs the a2a-sdk client's own call"
TEXT = "hello, bench"
#: kind of call -> (what is sent, the text the answer must hold).
CALLS = {"echo": (f"echo:{TEXT}", TEXT), "task": (f"task:{TEXT}", TEXT[::-1])}
CLIENTS = {
    "bridge": "Trio client -> a2a-bridge (Trio) -> agent",
    "a2a-sdk": "a2a-sdk client -> agent (streaming)",
}
AGENT = [PY, "-m", "sansio_mcp_testing.a2a_agent", "--port", "0"]


def _calls(c: Counts) -> int:
    # A task call takes some 50 ms here (the a2a-sdk server's own pace): fewer calls.
    return max(3, c.http_calls // 5)


def _warmup(c: Counts) -> int:
    return max(1, c.http_warmup // 5)


def counts(c: Counts) -> str:
    return (
        f"{_calls(c)} calls after {_warmup(c)} warm-up; bridge CPU from /proc over the "
        "client's whole run"
    )


def row12(results: Results, c: Counts, rnd: int) -> None:
    import importlib.util

    from .cli import _measure, _rotate
    from .peers import _with_server_cpu

    if importlib.util.find_spec("a2a") is None:
        results.note(12, "skipped: a2a-sdk is not installed (pip install 'sansio-mcp[a2a]')")
        return
    with ExitStack() as stack:
        try:
            agent = stack.enter_context(http_server(AGENT)).rsplit("/mcp", 1)[0] + "/"
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            config = folder / "agents.json"
            config.write_text(json.dumps({"agents": {"fixture": {"url": agent}}}))
            command = [PY, "-m", "sansio_mcp_cli", "a2a-bridge", "--config", str(config),
                       "--port", "0", "--backend", "trio"]  # fmt: skip
            bridge = stack.enter_context(http_server(command))
        except WorkerError as exc:
            for kind in CALLS:
                for client, label in CLIENTS.items():
                    results.add(12, f"{kind}:{client}", f"{kind}: {label}", {"error": str(exc)})
            return
        order = [(kind, client) for kind in CALLS for client in CLIENTS]
        for kind, client in _rotate(order, rnd):
            text, expect = CALLS[kind]
            args = {
                "impl": client,
                "agent": agent,
                "bridge": bridge,
                "text": text,
                "expect": expect,
                "calls": _calls(c),
                "warmup": _warmup(c),
                "deadline": c.loop_deadline,
            }
            run = partial(run_worker, "a2a", args, timeout=c.worker_timeout)
            fn = partial(_with_server_cpu, bridge, _calls(c) + _warmup(c), run)
            _measure(
                results,
                12,
                f"{kind}:{client}",
                f"{kind}: {CLIENTS[client]}",
                fn if client == "bridge" else run,
            )


def lines(results: Results) -> list[str]:
    from .peers import _table

    return _table(
        results,
        12,
        lambda v: f"{v.split(':')[0]}:a2a-sdk",
        "time/sdk",
        (("server_cpu_us_per_call", "brg CPU"), ("client_cpu_us_per_call", "cli CPU")),
    )


def targets(results: Results) -> list[Any]:
    from .cli import Target, paired_ratio

    out = []
    for kind in CALLS:
        out.append(
            Target(
                f"12-{kind}",
                f"row 12 {kind}: a call through the A2A bridge <= 1.0x the a2a-sdk "
                "client's own call (time per call)",
                paired_ratio(results, 12, f"{kind}:bridge", f"{kind}:a2a-sdk", "us_per_call"),
                1.0,
                higher_is_better=False,
            )
        )
    return out


# Worker side (``python -m bench.worker a2a ...``) -------------------------------------


def run_a2a(
    impl: str,
    agent: str,
    bridge: str,
    text: str,
    expect: str,
    calls: int,
    warmup: int,
    deadline: float,
) -> dict[str, Any]:
    """Timed calls of ``text`` through the bridge (``impl="bridge"``) or with the
    a2a-sdk client (``"a2a-sdk"``); a call counts as right when an answer's text
    part is ``expect``."""
    from .worker import timed_calls

    if impl == "bridge":
        import trio

        from trio_adapters.http_client import open_http_client

        async def through_bridge() -> dict[str, Any]:
            async with open_http_client(bridge, mode="modern") as client:

                async def call() -> str:
                    result = await client.call_tool("a2a_send_message", {"text": text})
                    said = [b.get("text") for b in result["content"] if b.get("type") == "text"]
                    return expect if expect in said else json.dumps(result)[:300]

                return await timed_calls(call, expect, calls, warmup, deadline)

        return trio.run(through_bridge)

    if impl == "a2a-sdk":
        import asyncio
        import uuid

        from a2a.client import create_client
        from a2a.types import Message, Part, Role, SendMessageRequest

        async def direct() -> dict[str, Any]:
            client = await create_client(agent)
            try:

                async def call() -> str:
                    message = Message(
                        message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)]
                    )
                    said: list[str] = []
                    async for event in client.send_message(SendMessageRequest(message=message)):
                        if event.HasField("message"):
                            said.extend(p.text for p in event.message.parts)
                        elif event.HasField("artifact_update"):
                            said.extend(p.text for p in event.artifact_update.artifact.parts)
                    return expect if expect in said else repr(said)[:300]

                return await timed_calls(call, expect, calls, warmup, deadline)
            finally:
                await client.close()

        return asyncio.run(direct())

    raise ValueError(f"unknown row-12 client {impl!r}")
