"""The wire transcript of one checker connection, and schema checks of what
the server sends, as it arrives."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import trio

from sansio_mcp import REVISIONS, ClientSession, MCPError, Outgoing
from sansio_mcp.jsontext import DEFAULT_MAX_MESSAGE_SIZE

from ._options import DEFAULT_MAX_RECORDED_BYTES, DEFAULT_MAX_RECORDED_MESSAGES
from .schemas import OfficialSchema, load_schema

__all__ = ["Line", "Recorder", "RecordingClientSession", "LockedSendStream"]

#: Direction marks in transcripts: what we sent, and what the server sent.
SENT, RECEIVED = ">", "<"
#: Bytes of a message over the size limit kept for its transcript line.
_OVERSIZED_HEAD = 300
#: Characters of a received string value shown in a transcript.
_LONG_STRING = 200


@attrs.define
class Line:
    seq: int
    direction: str
    text: str
    obj: Any = None
    parsed: bool = False
    #: Over the session's message size limit: the session dropped it, and ``text``
    #: holds only its beginning; ``size`` is its length in bytes.
    oversized: bool = False
    size: int = 0
    #: Server messages over the transcript's bounds, stood for by this one line:
    #: how many, and their bytes.
    unrecorded: int = 0
    unrecorded_bytes: int = 0

    def render(self) -> str:
        """The line for a transcript: what was sent exactly (it is replayed), what was
        received with long strings cut (a server's whole ``instructions`` text in every
        transcript buried the finding)."""
        if self.direction == RECEIVED and self.parsed and len(self.text) > _LONG_STRING:
            shortened, cut = _shorten(self.obj)
            if cut:
                return f"{self.direction} " + json.dumps(
                    shortened, ensure_ascii=False, separators=(",", ":")
                )
        return f"{self.direction} {self.text}"


def _mib(size: int) -> str:
    if size < 1 << 20:
        return f"{size} bytes"
    return f"{size / (1 << 20):.1f}".removesuffix(".0") + " MiB"


def _shorten(value: Any) -> tuple[Any, bool]:
    """``value`` with every string longer than :data:`_LONG_STRING` cut, its length
    said; and whether anything was cut."""
    if isinstance(value, str):
        if len(value) <= _LONG_STRING:
            return value, False
        return f"{value[:_LONG_STRING]}… ({len(value)} characters)", True
    if isinstance(value, list):
        items = [_shorten(item) for item in value]
        return [item for item, _ in items], any(cut for _, cut in items)
    if isinstance(value, dict):
        entries = {key: _shorten(item) for key, item in value.items()}
        return {k: v for k, (v, _) in entries.items()}, any(c for _, c in entries.values())
    return value, False


@attrs.define
class SchemaProblem:
    line: Line
    #: What the message answers, or for a request or notification of the server's
    #: own, the latest request of ours still open when it came (what caused it).
    request: Line | None
    revision: str
    problems: list[str]
    #: The handshake lines before it (with ``request``, what reproduces it).
    setup: list[Line] = attrs.field(factory=list)

    def transcript(self) -> list[str]:
        lines = [*self.setup]
        if self.request is not None and self.request not in lines:
            lines.append(self.request)
        return [line.render() for line in [*lines, self.line]]


class Recorder:
    """Every line of one connection, in order; validates the server's lines."""

    def __init__(
        self,
        revision: str,
        *,
        schema_dir: str | None = None,
        on_problem: Callable[[SchemaProblem], None] | None = None,
        on_wire_problem: Callable[[SchemaProblem], None] | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_messages: int = DEFAULT_MAX_RECORDED_MESSAGES,
        max_bytes: int = DEFAULT_MAX_RECORDED_BYTES,
    ) -> None:
        self.revision = revision
        #: A server flooding notifications must not fill the checker's memory: past
        #: either bound its messages are still checked but only counted (answers to
        #: the checker's own requests are always kept).
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        #: The server's messages kept, and their bytes.
        self.recorded = 0
        self.recorded_bytes = 0
        #: The server's messages only counted (over ``max_messages`` or ``max_bytes``).
        self.unrecorded = 0
        self.unrecorded_bytes = 0
        #: The client session's limit: a longer line is dropped by it, and kept short here.
        self.max_message_size = max_message_size
        self.schema_dir = schema_dir
        self.lines: list[Line] = []
        self.on_problem = on_problem
        #: Called with a JSON-RPC breach (a wrong version, a response to no request).
        self.on_wire_problem = on_wire_problem
        self._requests: dict[Any, Line] = {}
        #: Our requests not answered yet, by id.
        self._open: dict[str, Line] = {}
        #: Where the handshake ends (None: still under way).
        self.setup_end: int | None = None
        self._changed = trio.Event()
        #: The line being received: its first bytes (all of them while under the
        #: limit) and its size so far.
        self._pending = bytearray()
        self._pending_size = 0
        self._pending_cr = False
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
        """Record what the server wrote; ``b""`` is the end of its output.  Linear in
        the size of the output, however it is chunked (a line of 100 MB arrives in
        thousands of chunks), and bounded in memory: a line over the limit keeps
        only its beginning."""
        if not data:
            self._end_line()
            return
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            self._hold(data, start, newline)
            self._end_line()
            start = newline + 1
        self._hold(data, start, len(data))

    def _hold(self, data: bytes, start: int, end: int) -> None:
        if end == start:
            return
        held = len(self._pending)
        self._pending_size += end - start
        self._pending_cr = data[end - 1] == 0x0D
        if self._pending_size <= self.max_message_size:
            self._pending += data[start:end]
        elif held < _OVERSIZED_HEAD:
            self._pending += data[start : start + _OVERSIZED_HEAD - held]
        else:
            del self._pending[_OVERSIZED_HEAD:]  # only the head of an oversized line

    def _end_line(self) -> None:
        raw, size = bytes(self._pending), self._pending_size
        if self._pending_cr:  # a CRLF line end is not part of the message
            size -= 1
            if size <= self.max_message_size:
                raw = raw[:-1]
        self._pending.clear()
        self._pending_size = 0
        self._pending_cr = False
        if size > self.max_message_size:
            head = raw[:_OVERSIZED_HEAD].decode("utf-8", "replace")
            text = f"{head} … ({size} bytes, over the {self.max_message_size}-byte limit)"
            self._add(RECEIVED, text, size=size)
        elif raw.strip():
            self._add(RECEIVED, raw.decode("utf-8", "replace"))

    def dropped_since(self, start: int) -> str | None:
        """Why no answer came after line ``start`` although the server wrote one: a
        message over the size limit, which the session drops (None: there was none)."""
        sizes = [line.size for line in self.lines[start:] if line.oversized]
        if self._pending_size > self.max_message_size:
            sizes.append(self._pending_size)  # still arriving
        if not sizes:
            return None
        limit = self.max_message_size
        # Sizes in MiB, rounded: the same answer at another revision differs by a few
        # bytes (its id, its framing), and is still the same finding.
        return (
            f"the server answered with a message of {_mib(max(sizes))}, over the client's "
            + (f"{_mib(limit)} ({limit}-byte)" if limit >= 1 << 20 else f"{limit}-byte")
            + " message size limit, so the client could not take it"
        )

    def received_obj(self, obj: Any) -> None:
        self._add(RECEIVED, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def _add(self, direction: str, text: str, *, size: int = 0) -> Line:
        line = Line(len(self.lines), direction, text, oversized=size > 0, size=size)
        if not line.oversized:
            try:
                line.obj, line.parsed = json.loads(text), True
            except ValueError:
                pass
        if direction == SENT or self._keeps(line):
            self.lines.append(line)
        else:
            self._count_unrecorded(line)
        if direction == SENT:
            for message in _messages(line.obj):
                if "method" in message and "id" in message:
                    self._requests[_key(message["id"])] = line
                    self._open[_key(message["id"])] = line
                elif message.get("method") == "notifications/cancelled":
                    params = message.get("params")
                    if isinstance(params, dict):
                        self._open.pop(_key(params.get("requestId")), None)
        else:
            self._check(line)
            self._check_wire(line)
            for message in _messages(line.obj):
                if "method" not in message and "id" in message:
                    self._open.pop(_key(message["id"]), None)
        self._changed.set()
        self._changed = trio.Event()
        return line

    def _keeps(self, line: Line) -> bool:
        """Whether the server's ``line`` goes into the transcript (an answer to an open
        request of ours always does: the checker waits for it)."""
        answers = any(
            "method" not in message and _key(message.get("id")) in self._open
            for message in _messages(line.obj)
        )
        within = (
            self.recorded < self.max_messages
            and self.recorded_bytes + len(line.text) <= self.max_bytes
        )
        if answers or within:
            self.recorded += 1
            self.recorded_bytes += len(line.text)
            return True
        return False

    def _count_unrecorded(self, line: Line) -> None:
        """``line`` is checked but kept out: one line of the transcript counts it with the
        others that came in a row, and takes its place (its ``seq``)."""
        last = self.lines[-1] if self.lines else None
        if last is None or not last.unrecorded:
            last = Line(len(self.lines), RECEIVED, "")
            self.lines.append(last)
        line.seq = last.seq
        size = line.size or len(line.text.encode("utf-8", "surrogatepass"))
        last.unrecorded += 1
        last.unrecorded_bytes += size
        self.unrecorded += 1
        self.unrecorded_bytes += size
        last.text = (
            f"… {last.unrecorded} more message(s) from the server ({_mib(last.unrecorded_bytes)}) "
            f"not recorded: the transcript keeps {self.max_messages} messages or "
            f"{_mib(self.max_bytes)} at most"
        )

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
        if self.on_problem is None or line.oversized:
            return  # an oversized message is its request's finding (dropped_since)
        if not line.parsed:
            self._note_problem(line)
            self.on_problem(
                SchemaProblem(
                    line,
                    self._latest_open(),
                    self.revision,
                    ["the server wrote a line that is not JSON"],
                    self._setup_before(line),
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
            self._note_problem(line)
            if request is None:
                request = self._latest_open()
            self.on_problem(
                SchemaProblem(line, request, schema.revision, problems, self._setup_before(line))
            )

    def _note_problem(self, line: Line) -> None:
        if not self.problem_seqs or self.problem_seqs[-1] != line.seq:
            self.problem_seqs.append(line.seq)  # once per unrecorded run

    def _check_wire(self, line: Line) -> None:
        if self.on_wire_problem is None:
            return
        problems = []
        for message in _messages(line.obj):
            version = message.get("jsonrpc")
            if version != "2.0":
                problems.append(
                    f'a message with jsonrpc {json.dumps(version)} (JSON-RPC 2.0 requires "2.0")'
                )
            response = "method" not in message and ("result" in message or "error" in message)
            answered = message.get("id")
            if response and answered is not None and self.request_line(answered) is None:
                problems.append(
                    f"a response with id {json.dumps(answered)}, which matches no request "
                    "the client sent"
                )
        if problems:
            request = self._latest_open()
            self.on_wire_problem(
                SchemaProblem(line, request, self.revision, problems, self._setup_before(line))
            )

    def _latest_open(self) -> Line | None:
        return max(self._open.values(), key=lambda line: line.seq, default=None)

    def _setup_before(self, line: Line) -> list[Line]:
        end = self.setup_end if self.setup_end is not None else line.seq
        return self.lines[: min(end, line.seq)]


def _messages(obj: Any) -> Iterable[dict[str, Any]]:
    if isinstance(obj, dict):
        return [obj]
    if isinstance(obj, list):
        return [m for m in obj if isinstance(m, dict)]
    return []


def _with_defaults(result: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    """``result`` with each of ``defaults`` put in where its value is not an object."""
    fixed = dict(result)
    for key, value in defaults.items():
        if not isinstance(fixed.get(key), dict):
            fixed[key] = value
    return fixed


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


class RecordingClientSession(ClientSession):
    """A :class:`ClientSession` that shows every line in and out to a :class:`Recorder`."""

    recorder: Recorder

    def attach(self, recorder: Recorder) -> None:
        self.recorder = recorder

    # Lenient handshakes: a checker goes on with what the server sent wherever it can
    # be understood (the schema property reports what is missing); only a result
    # without a protocol version stops the revision.

    def _accept_initialize_result(self, result: dict[str, Any]) -> MCPError | None:
        return super()._accept_initialize_result(
            _with_defaults(result, capabilities={}, serverInfo={})
        )

    def _accept_discover_result(self, result: dict[str, Any]) -> MCPError | None:
        return super()._accept_discover_result(_with_defaults(result, capabilities={}))

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

    def receive_message(self, obj: Any, **carried_by: Any) -> None:
        if not self.recorder.suppress:
            self.recorder.received_obj(obj)
        super().receive_message(obj, **carried_by)

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

    def outgoing_to_send(self) -> list[Outgoing]:
        outgoing = super().outgoing_to_send()
        for item in outgoing:
            self.recorder.sent_obj(item.message)
        return outgoing


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
