"""A deterministic A2A v1.0 agent for tests (no model), on the official a2a-sdk server.

Run it on its own with ``python -m sansio_mcp_testing.a2a_agent --port P`` (0: any free
port); it prints ``a2a fixture agent: http://127.0.0.1:P/`` once it listens.  The command is
the first word of the message's text, case-insensitive, before an optional colon:

* ``echo:<t>``: a direct Message holding ``<t>``.
* ``task:<t>``: SUBMITTED, WORKING (with a message), an artifact ``result`` holding the
  reversed text, COMPLETED.
* ``ask:<q>``: INPUT_REQUIRED "What value should I use for <q>?"; the next turn on the task
  answers ``<q> = <answer>`` and completes.
* ``ask2:<q>``: two rounds of questions before completing (``<q>: <first>, <second>``).
* ``slow:<ms>``: WORKING for ``<ms>`` milliseconds (10 s at most), honouring cancellation;
  then COMPLETED.
* ``submitted``, ``working``: the task is left SUBMITTED or WORKING (the agent returns).
* ``giveup``: WORKING for 0.2 s, then the agent cancels the task itself (CANCELED).
* ``reject``, ``fail``, ``auth``: REJECTED, FAILED, AUTH_REQUIRED with fixed texts (the auth
  text carries a URL).
* ``unspecified``: a task whose status carries no state.
* ``data``: a data part ``{"answer": 42, "echo": <rest>}`` in an artifact; ``file``: a url
  part (report.pdf); ``image``: a raw 1x1 PNG; ``audio``: a raw WAV; ``blob``: raw octets;
  ``parts``: one artifact with all four part kinds and two data parts.
* ``vanish``: WORKING, then the task is removed from the store (a later GetTask is -32001).
* ``error:<code>``: raises the typed A2A error with that code (-32001 to -32009).
* ``many:<n>``: an artifact of ``<n>`` empty text parts (100,000 at most).
* ``malformed:<how>``: an answer the SDK would never write, made by hand: ``nan`` (a data
  part holding NaN), ``deep[:<n>]`` (a data part nested ``<n>`` deep, 100,000 by default),
  ``list`` and ``string`` (a ``result`` that is no object).
* ``GET /malformed-card/nan`` and ``/malformed-card/deep``: the card with a NaN, or nested
  past any parser, for a ``cardUrl``.
* ``reuse``: a COMPLETED task whose id is always ``reused-task`` (an agent that gives two
  conversations the same task id), made by hand.

Anything else gets a help Message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from collections.abc import Callable
from typing import Any

from a2a.helpers.proto_helpers import (
    new_data_part,
    new_raw_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
    new_url_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils import errors as a2a_errors

__all__ = ["HELP", "PNG_1X1", "WAV_SILENCE", "build_app", "build_card", "main"]

HELP = (
    "Commands: echo:<t>, task:<t>, ask:<q>, ask2:<q>, slow:<ms>, submitted, working, giveup, "
    "reject, fail, auth, unspecified, data, file, image, audio, blob, parts, vanish, error:<code>, "
    "many:<n>, malformed:<nan|deep|list|string>, reuse"
)
#: The id the ``reuse`` command gives every task it answers with.
REUSED_TASK_ID = "reused-task"
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
#: 2 samples of 8-bit mono silence at 8 kHz.
WAV_SILENCE = (
    b"RIFF&\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00@\x1f\x00\x00"
    b"\x01\x00\x08\x00data\x02\x00\x00\x00\x80\x80"
)
AUTH_URL = "https://auth.example.org/authorize?agent=fixture"
TYPED_ERRORS: dict[int, type[a2a_errors.A2AError]] = {
    code: cls
    for cls, code in a2a_errors.JSON_RPC_ERROR_CODE_MAP.items()
    if -32009 <= code <= -32001
}


def _command(text: str) -> tuple[str, str]:
    head, sep, rest = text.strip().partition(":")
    if not sep:
        head, _, rest = text.strip().partition(" ")
    return head.strip().lower(), rest.strip()


class FixtureExecutor(AgentExecutor):
    """The command grammar above, as an :class:`AgentExecutor`."""

    def __init__(self, store: InMemoryTaskStore) -> None:
        self.store = store
        self.cancelled: set[str] = set()
        self._background: set[asyncio.Future[None]] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await self._answer(task, text, event_queue)
            return
        command, rest = _command(text)
        if command == "echo":
            await event_queue.enqueue_event(
                new_text_message(rest, context_id=context.context_id, role=Role.ROLE_AGENT)
            )
            return
        if command == "error":
            try:
                code = int(rest)
            except ValueError:
                code = 0
            error = TYPED_ERRORS.get(code)
            if error is None:
                raise a2a_errors.InvalidParamsError(
                    f"error:<code> takes -32001 to -32009: {rest!r}"
                )
            raise error(f"fixture error {code}")
        handler = self._commands().get(command)
        if handler is None:
            await event_queue.enqueue_event(
                new_text_message(HELP, context_id=context.context_id, role=Role.ROLE_AGENT)
            )
            return
        assert context.message is not None
        new = new_task_from_user_message(context.message)
        if command == "unspecified":
            new.status.CopyFrom(TaskStatus())
            await event_queue.enqueue_event(new)
            return
        await event_queue.enqueue_event(new)
        updater = TaskUpdater(event_queue, new.id, new.context_id)
        await handler(updater, rest)
        if command == "vanish":
            forget = asyncio.ensure_future(self._forget(new.id, context))
            self._background.add(forget)
            forget.add_done_callback(self._background.discard)

    def _commands(self) -> dict[str, Callable[[TaskUpdater, str], Any]]:
        return {
            "task": self._task,
            "ask": self._ask,
            "ask2": self._ask,
            "slow": self._slow,
            "submitted": self._submitted,
            "working": self._working,
            "giveup": self._giveup,
            "reject": self._reject,
            "fail": self._fail,
            "auth": self._auth,
            "unspecified": self._submitted,
            "data": self._data,
            "file": self._file,
            "image": self._image,
            "audio": self._audio,
            "blob": self._blob,
            "parts": self._parts,
            "vanish": self._vanish,
            "many": self._many,
        }

    def _say(self, updater: TaskUpdater, text: str) -> Message:
        return updater.new_agent_message([new_text_part(text)])

    async def _task(self, updater: TaskUpdater, rest: str) -> None:
        await updater.submit()
        await updater.start_work(self._say(updater, "working on it"))
        await updater.add_artifact([new_text_part(rest[::-1])], name="result")
        await updater.complete(self._say(updater, "done"))

    async def _ask(self, updater: TaskUpdater, rest: str) -> None:
        await updater.requires_input(
            self._say(updater, f"What value should I use for {rest}?"),
        )

    async def _answer(self, task: Task, answer: str, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        first = next((m for m in task.history if m.role == Role.ROLE_USER), None)
        command, question = _command(_text(first)) if first is not None else ("ask", "?")
        answers = [_text(m) for m in task.history if m.role == Role.ROLE_USER][1:]
        if command == "ask2" and len(answers) < 1:
            await updater.requires_input(
                self._say(updater, f"And a second value for {question}?"),
            )
            return
        if command == "ask2":
            reply = f"{question}: {answers[0]}, {answer}"
        else:
            reply = f"{question} = {answer}"
        await updater.add_artifact([new_text_part(reply)], name="answer")
        await updater.complete(self._say(updater, reply))

    async def _slow(self, updater: TaskUpdater, rest: str) -> None:
        try:
            millis = min(10_000, max(0, int(rest or "1000")))
        except ValueError:
            millis = 1000
        await updater.start_work(self._say(updater, f"working for {millis} ms"))
        waited = 0
        while waited < millis:
            if updater.task_id in self.cancelled:
                return
            await asyncio.sleep(0.02)
            waited += 20
        await updater.add_artifact([new_text_part(f"slept {millis} ms")], name="result")
        await updater.complete()

    async def _submitted(self, updater: TaskUpdater, rest: str) -> None:
        await updater.submit(self._say(updater, "queued"))

    async def _working(self, updater: TaskUpdater, rest: str) -> None:
        await updater.start_work(self._say(updater, "still working"))

    async def _giveup(self, updater: TaskUpdater, rest: str) -> None:
        await updater.start_work(self._say(updater, "trying"))
        await asyncio.sleep(0.2)
        await updater.cancel(self._say(updater, "I gave up on this task"))

    async def _reject(self, updater: TaskUpdater, rest: str) -> None:
        await updater.reject(self._say(updater, "I will not do that."))

    async def _fail(self, updater: TaskUpdater, rest: str) -> None:
        await updater.failed(self._say(updater, "Something went wrong."))

    async def _auth(self, updater: TaskUpdater, rest: str) -> None:
        await updater.requires_auth(self._say(updater, f"Please sign in at {AUTH_URL}"))

    async def _data(self, updater: TaskUpdater, rest: str) -> None:
        await updater.add_artifact([new_data_part({"answer": 42, "echo": rest})], name="data")
        await updater.complete()

    async def _file(self, updater: TaskUpdater, rest: str) -> None:
        part = new_url_part("https://files.example.org/report.pdf", "application/pdf", "report.pdf")
        await updater.add_artifact([part], name="report")
        await updater.complete()

    async def _image(self, updater: TaskUpdater, rest: str) -> None:
        await updater.add_artifact([new_raw_part(PNG_1X1, "image/png", "dot.png")], name="image")
        await updater.complete()

    async def _audio(self, updater: TaskUpdater, rest: str) -> None:
        part = new_raw_part(WAV_SILENCE, "audio/wav", "silence.wav")
        await updater.add_artifact([part], name="audio")
        await updater.complete()

    async def _blob(self, updater: TaskUpdater, rest: str) -> None:
        part = new_raw_part(b"\x00\x01\x02binary", "application/octet-stream", "blob.bin")
        await updater.add_artifact([part], name="blob")
        await updater.complete()

    async def _parts(self, updater: TaskUpdater, rest: str) -> None:
        parts: list[Part] = [
            new_text_part("all four kinds"),
            new_data_part({"first": 1}),
            new_data_part({"second": 2}),
            new_url_part("https://files.example.org/a.txt", "text/plain", "a.txt"),
            new_raw_part(PNG_1X1, "image/png", "dot.png"),
        ]
        await updater.add_artifact(parts, name="mixed")
        await updater.complete()

    async def _many(self, updater: TaskUpdater, rest: str) -> None:
        try:
            count = min(100_000, max(0, int(rest or "0")))
        except ValueError:
            count = 0
        await updater.add_artifact([new_text_part("") for _ in range(count)], name="many")
        await updater.complete()

    async def _vanish(self, updater: TaskUpdater, rest: str) -> None:
        await updater.start_work(self._say(updater, "about to vanish"))

    async def _forget(self, task_id: str, context: RequestContext) -> None:
        await asyncio.sleep(0.3)
        await self.store.delete(task_id, context.call_context)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None or context.task_id is None:
            raise a2a_errors.TaskNotFoundError()
        self.cancelled.add(context.task_id)
        updater = TaskUpdater(event_queue, context.task_id, task.context_id)
        await updater.cancel(self._say(updater, "cancelled"))


def _text(message: Message | None) -> str:
    if message is None:
        return ""
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


def build_card(url: str, *, streaming: bool = True) -> AgentCard:
    """The fixture's agent card, served at ``url`` (its JSON-RPC endpoint)."""
    return AgentCard(
        name="fixture",
        description="A deterministic A2A agent for tests: " + HELP,
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json", "image/png"],
        skills=[
            AgentSkill(
                id="fixture",
                name="fixture commands",
                description=HELP,
                tags=["test"],
                examples=["task: hello world", "ask: colour"],
            )
        ],
    )


def _by_hand(body: bytes) -> bytes | None:
    """The hand-made JSON-RPC answer to a ``malformed:<how>`` or ``reuse`` message, or
    None for any other request (the SDK answers it)."""
    try:
        request = json.loads(body)
        message = request["params"]["message"]
        command, rest = _command(message["parts"][0]["text"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if command not in ("malformed", "reuse"):
        return None
    context = message.get("contextId") or "reuse-context"
    task = {
        "id": REUSED_TASK_ID,
        "contextId": context,
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a1", "name": "data", "parts": [{"data": {"ok": 1}}]}],
    }
    head = '{"jsonrpc": "2.0", "id": ' + json.dumps(request.get("id")) + ', "result": '
    if command == "reuse":
        return (head + json.dumps({"task": task}) + "}").encode()
    if rest == "nan":
        return (head + json.dumps({"task": task}).replace('{"ok": 1}', "NaN") + "}").encode()
    if rest.partition(":")[0] == "deep":
        depth = int(rest.partition(":")[2] or "100000")
        deep = json.dumps({"task": task}).replace('{"ok": 1}', "[" * depth + "]" * depth)
        return (head + deep + "}").encode()
    if rest == "list":
        return (head + "[1, 2]}").encode()
    return (head + '"not an object"}').encode()


class _HandMade:
    """ASGI middleware: the answers of :func:`_by_hand`, before the SDK sees the request."""

    def __init__(self, app: Any, card: AgentCard) -> None:
        self.app = app
        self.card = card

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(_BAD_CARDS):
            await _send_json(send, _bad_card(self.card, scope["path"][len(_BAD_CARDS) :]))
            return
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        body = b"".join(chunks)
        answer = _by_hand(body)
        if answer is None:
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
            return
        await _send_json(send, answer)


#: ``GET /malformed-card/<how>``: the card, made malformed by hand (``nan``: a NaN in a
#: skill's extension params; ``deep``: a skill nested 100,000 deep).
_BAD_CARDS = "/malformed-card/"


def _bad_card(card: AgentCard, how: str) -> bytes:
    from google.protobuf import json_format  # type: ignore[import-untyped]

    text = json.dumps(json_format.MessageToDict(card))
    if how == "nan":
        marker = '"capabilities": {'
        return text.replace(
            marker, marker + '"extensions": [{"uri": "x", "params": {"n": NaN}}], ', 1
        ).encode()
    return text.replace(
        '"skills": [', '"skills": [' + "[" * 100_000 + "]" * 100_000 + ", ", 1
    ).encode()


async def _send_json(send: Any, body: bytes) -> None:
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def build_app(url: str, *, streaming: bool = True) -> Any:
    """The Starlette app of an agent reachable at ``url``."""
    from starlette.applications import Starlette

    store = InMemoryTaskStore()
    card = build_card(url, streaming=streaming)
    handler = DefaultRequestHandler(FixtureExecutor(store), store, card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return _HandMade(Starlette(routes=routes), card)


def main(argv: list[str] | None = None) -> int:
    """``python -m sansio_mcp_testing.a2a_agent --port P [--host H] [--no-streaming]``."""
    parser = argparse.ArgumentParser(prog="python -m sansio_mcp_testing.a2a_agent")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=41241, help="0: any free port")
    parser.add_argument("--no-streaming", action="store_true", help="declare no streaming")
    args = parser.parse_args(argv)
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)  # before the announcement: a client that reads it may connect at once
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{port}/"
    app = build_app(url, streaming=not args.no_streaming)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    print(f"a2a fixture agent: {url}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
