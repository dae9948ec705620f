"""The wire transcript of one checker connection, and schema checks of what
the server sends, as it arrives."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import trio

from sansio_mcp import ClientSession
from sansio_mcp._versions import REVISIONS

from .schemas import OfficialSchema, load_schema

__all__ = ["Line", "Recorder", "RecordingClientSession", "LockedSendStream"]

#: Direction marks in transcripts: what we sent, and what the server sent.
SENT, RECEIVED = ">", "<"


@attrs.define
class Line:
    seq: int
    direction: str
    text: str
    obj: Any = None
    parsed: bool = False

    def render(self) -> str:
        return f"{self.direction} {self.text}"


@attrs.define
class SchemaProblem:
    line: Line
    request: Line | None
    revision: str
    problems: list[str]


class Recorder:
    """Every line of one connection, in order; validates the server's lines."""

    def __init__(
        self,
        revision: str,
        *,
        schema_dir: str | None = None,
        on_problem: Callable[[SchemaProblem], None] | None = None,
    ) -> None:
        self.revision = revision
        self.schema_dir = schema_dir
        self.lines: list[Line] = []
        self.on_problem = on_problem
        self._requests: dict[Any, Line] = {}
        self._changed = trio.Event()
        self._pending = b""
        self.suppress = False
        self.schema_checks = 0
        #: Line numbers (in this recorder) of the server's schema-invalid messages.
        self.problem_seqs: list[int] = []

    # Recording -----------------------------------------------------------------------

    @property
    def seq(self) -> int:
        return len(self.lines)

    def sent_bytes(self, data: bytes) -> None:
        for raw in data.split(b"\n"):
            if raw.strip():
                self._add(SENT, raw.decode("utf-8", "replace"))

    def sent_obj(self, obj: Any) -> None:
        self._add(SENT, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def received_bytes(self, data: bytes) -> None:
        self._pending += data
        *complete, self._pending = self._pending.split(b"\n")
        if not data and self._pending:
            complete.append(self._pending)
            self._pending = b""
        for raw in complete:
            if raw.strip():
                self._add(RECEIVED, raw.decode("utf-8", "replace").rstrip("\r"))

    def received_obj(self, obj: Any) -> None:
        self._add(RECEIVED, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def _add(self, direction: str, text: str) -> Line:
        line = Line(len(self.lines), direction, text)
        try:
            line.obj, line.parsed = json.loads(text), True
        except ValueError:
            pass
        self.lines.append(line)
        if direction == SENT:
            for message in _messages(line.obj):
                if "method" in message and "id" in message:
                    self._requests[_key(message["id"])] = line
        else:
            self._check(line)
        self._changed.set()
        self._changed = trio.Event()
        return line

    # Waiting ----------------------------------------------------------------------

    async def wait_for(
        self, predicate: Callable[[Line], bool], *, after: int, timeout: float
    ) -> Line | None:
        """The first received line after ``after`` satisfying ``predicate``, or None."""
        with trio.move_on_after(timeout):
            while True:
                for line in self.lines[after:]:
                    if line.direction == RECEIVED and predicate(line):
                        return line
                await self._changed.wait()
        return None

    # Transcripts ------------------------------------------------------------------

    def window(self, start: int, end: int | None = None) -> list[str]:
        return [line.render() for line in self.lines[start:end]]

    def request_line(self, request_id: Any) -> Line | None:
        return self._requests.get(_key(request_id))

    # Schema checks -----------------------------------------------------------------

    def _schema_for(self, obj: Any) -> OfficialSchema | None:
        revision = self.revision
        if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
            chosen = obj["result"].get("protocolVersion")
            if isinstance(chosen, str) and chosen in REVISIONS:
                revision = chosen
        return load_schema(revision, self.schema_dir)

    def _check(self, line: Line) -> None:
        if self.on_problem is None:
            return
        if not line.parsed:
            self.problem_seqs.append(line.seq)
            self.on_problem(
                SchemaProblem(
                    line, None, self.revision, ["the server wrote a line that is not JSON"]
                )
            )
            return
        schema = self._schema_for(line.obj)
        if schema is None:
            return
        self.schema_checks += 1
        request: Line | None = None
        method: str | None = None
        for message in _messages(line.obj):
            if "method" not in message and "id" in message:
                request = self.request_line(message.get("id"))
                if request is not None:
                    for sent in _messages(request.obj):
                        if sent.get("id") == message.get("id"):
                            method = sent.get("method")
        problems = schema.message_problems(line.obj, sender="server", request_method=method)
        if problems:
            self.problem_seqs.append(line.seq)
            self.on_problem(SchemaProblem(line, request, schema.revision, problems))


def _messages(obj: Any) -> Iterable[dict[str, Any]]:
    if isinstance(obj, dict):
        return [obj]
    if isinstance(obj, list):
        return [m for m in obj if isinstance(m, dict)]
    return []


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


class RecordingClientSession(ClientSession):
    """A :class:`ClientSession` that shows every line in and out to a :class:`Recorder`."""

    recorder: Recorder

    def attach(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def receive_data(self, data: bytes | bytearray) -> None:
        self.recorder.received_bytes(bytes(data))
        self.recorder.suppress = True
        try:
            super().receive_data(data)
        finally:
            self.recorder.suppress = False

    def receive_text(self, text: str | bytes) -> None:
        raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        self.recorder.received_bytes(raw + b"\n")
        self.recorder.suppress = True
        try:
            super().receive_text(text)
        finally:
            self.recorder.suppress = False

    def receive_message(self, obj: Any) -> None:
        if not self.recorder.suppress:
            self.recorder.received_obj(obj)
        super().receive_message(obj)

    def data_to_send(self) -> bytes:
        data = super().data_to_send()
        if data:
            self.recorder.sent_bytes(data)
        return data

    def messages_to_send(self) -> list[Any]:
        messages = super().messages_to_send()
        for message in messages:
            self.recorder.sent_obj(message)
        return messages

    def routed_messages_to_send(self) -> list[tuple[Any, Any]]:
        routed = super().routed_messages_to_send()
        for message, _ in routed:
            self.recorder.sent_obj(message)
        return routed


class LockedSendStream(trio.abc.SendStream):
    """A send stream safe to share between the session runner and raw probes."""

    def __init__(self, inner: trio.abc.SendStream) -> None:
        self.inner = inner
        self._lock = trio.Lock()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        async with self._lock:
            await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.inner.aclose()
