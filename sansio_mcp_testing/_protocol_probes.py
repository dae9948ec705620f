"""The checker's protocol probes: the pagination, unknown-method and
malformed-jsonrpc properties (what any server must get right whatever its
tools)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import trio

from sansio_mcp import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    REVISIONS,
    ConnectionClosedError,
    Era,
    MCPError,
    RequestTimeout,
)

from ._connection import ServerGone
from ._probe import Probe
from ._uris import uri_problem, uri_template_problem

__all__ = ["ProtocolProbes"]


class ProtocolProbes(Probe):
    """The protocol properties over one connection."""

    async def pagination(self) -> None:
        caps = self.conn.client.server_capabilities
        lists = [
            ("tools/list", "tools", "tools"),
            ("prompts/list", "prompts", "prompts"),
            ("resources/list", "resources", "resources"),
            ("resources/templates/list", "resourceTemplates", "resources"),
        ]
        for method, key, capability in lists:
            if capability not in caps:
                continue
            await self._walk_pages(method, key)
            # A bogus cursor SHOULD get -32602.
            params: dict[str, Any] = {"cursor": "sansio-mcp-check-bogus-cursor"}
            kind, value, transcript = await self.request(method, params, f"{method} bogus")
            self.findings.count("pagination")
            if kind == "result":
                self.violate(
                    "pagination",
                    f"{method} accepted a cursor it never issued (SHOULD be -32602)",
                    transcript,
                    severity="warning",
                )
            elif kind == "error" and value.code != -32602:
                self.violate(
                    "pagination",
                    f"{method} answered a bogus cursor with {value.code}, not -32602",
                    transcript,
                    severity="warning",
                )

    async def _walk_pages(self, method: str, key: str) -> None:
        walk = await self.walk(method, key)
        self.findings.count("pagination", len(walk.pages))
        if walk.problem is not None:
            transcript = self.conn.transcript(walk.start)
            if len(transcript) > 40:  # a hundred pages: the handshake and the last few
                transcript = [*self.conn.setup, "…", *transcript[-6:]]
            self.violate("pagination", walk.problem, transcript)
            return
        first_walk = [(cursor, json.dumps(items, sort_keys=True)) for cursor, items in walk.pages]
        # Stability: every cursor, asked again, gives the same page.
        for cursor, items in first_walk:
            params = {"cursor": cursor} if cursor is not None else None
            begin = self.conn.recorder.seq
            kind, value, transcript = await self.request(method, params, method)
            if kind != "result":
                self.violate(
                    "pagination",
                    f"{method} refused cursor {cursor!r} the second time it was used",
                    transcript,
                )
                return
            self.findings.count("pagination")
            if _page_items(value, key) != items:
                self.violate(
                    "pagination",
                    f"{method} with cursor {cursor!r} gave a different page the second time",
                    self.conn.transcript(begin),
                    cursor=cursor,
                )
                return

    async def listings(self) -> None:
        """Every item of every list: its key unique, its URI well formed."""
        caps = self.conn.client.server_capabilities
        for method, key, capability, ident, check in _LISTINGS:
            if capability not in caps:
                continue
            walk = await self.walk(method, key)
            transcript = self.conn.transcript(walk.start)
            if len(transcript) > 40:
                transcript = [*self.conn.setup, "…", *transcript[-6:]]
            seen: set[str] = set()
            for item in walk.items:
                value = item.get(ident) if isinstance(item, dict) else None
                if not isinstance(value, str):
                    continue  # the schema property reports it
                self.findings.count("listings")
                if value in seen:
                    self.violate(
                        "listings",
                        f"{method} lists {ident} {value!r} more than once",
                        transcript,
                        severity="error" if ident == "name" else "warning",
                    )
                seen.add(value)
                problem = check(value) if check is not None else None
                if problem is not None:
                    self.violate(
                        "listings",
                        f"{method}: {ident} {value!r} is malformed: {problem}",
                        transcript,
                    )

    async def unknown_method(self) -> None:
        params: dict[str, Any] = {}
        if REVISIONS[self.conn.revision].era is Era.STATELESS:
            params = {}  # the session adds the per-request _meta
        start = self.conn.recorder.seq
        request_id = self.conn.session.send_request(
            "sansio-mcp-check/no-such-method",
            params,
            experimental=True,
            now=trio.current_time(),
            timeout=self.options.timeout,
        )
        outcome: tuple[str, Any]
        try:
            await self.conn.host.wait_for(request_id, timed=True)
            outcome = ("result", None)
        except RequestTimeout:
            outcome = ("timeout", None)
        except ConnectionClosedError:
            self.findings.server_gone(self.conn, "an unknown-method request", start)
            raise ServerGone() from None
        except MCPError as error:
            outcome = ("error", error)
        self.findings.count("unknown-method")
        transcript = self.conn.transcript(start)
        if outcome[0] == "timeout":
            self.violate(
                "unknown-method",
                f"an unknown method got no answer within {self.options.timeout}s",
                transcript,
            )
        elif outcome[0] == "result":
            self.violate(
                "unknown-method",
                "an unknown method got a result",
                transcript,
            )
        elif isinstance(outcome[1], MCPError) and outcome[1].code != -32601:
            self.violate(
                "unknown-method",
                f"an unknown method got error {outcome[1].code}, not -32601",
                transcript,
            )

    async def wire(self) -> None:
        """Notifications are never answered (the recorder checks every other message of
        the server's as it arrives)."""
        if self.conn.raw is None:
            self.skip("wire", "raw notifications are only sent over stdio")
            return
        notifications: list[dict[str, Any]] = [
            {"jsonrpc": "2.0", "method": "notifications/sansio-mcp-check/probe", "params": {}},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        ]
        for notification in notifications:
            start = self.conn.recorder.seq
            await self._send_raw(
                json.dumps(notification), f"a notification ({notification['method']})"
            )
            try:
                await self.conn.client.ping(timeout=self.options.timeout)
            except RequestTimeout:
                pass  # the server fell silent: responsive reports it at the end
            except ConnectionClosedError:
                self.findings.server_gone(self.conn, "a notification", start)
                raise ServerGone() from None
            except MCPError:
                pass
            self.findings.count("wire")
            answers = [
                line
                for line in self.conn.recorder.lines[start:]
                if line.direction == "<"
                and isinstance(line.obj, dict)
                and "method" not in line.obj
                and line.obj.get("id") is None
            ]
            if answers:
                self.violate(
                    "wire",
                    f"the notification {notification['method']} got an answer (a notification "
                    "is never answered)",
                    self.conn.transcript(start, answers[0].seq + 1),
                )

    async def _send_raw(self, text: str, what: str) -> None:
        """Write ``text`` as one line, past the session (raises ServerGone)."""
        assert self.conn.raw is not None
        start = self.conn.recorder.seq
        self.conn.recorder.sent_bytes(text.encode("utf-8"))
        try:
            await self.conn.raw.send_all(text.encode("utf-8") + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.findings.server_gone(self.conn, what, start)
            raise ServerGone() from None

    async def malformed_jsonrpc(self) -> None:
        if self.conn.raw is None:
            self.skip("malformed-jsonrpc", "raw malformed lines are only sent over stdio")
            return
        stateless = REVISIONS[self.conn.revision].era is Era.STATELESS
        meta = {
            "_meta": {
                META_PROTOCOL_VERSION: self.conn.revision,
                META_CLIENT_CAPABILITIES: {},
            }
        }
        tools_params = dict(meta) if stateless else {}
        probes: list[tuple[str, str, Any, set[int]]] = [
            ("a JSON string", '"just a string"', None, {-32600}),
            ("an empty batch", "[]", None, {-32600}),
            (
                "a method that is a number",
                '{"jsonrpc":"2.0","id":"probe-4","method":42}',
                "probe-4",
                {-32600},
            ),
            (
                'jsonrpc "1.0"',
                json.dumps(
                    {
                        "jsonrpc": "1.0",
                        "id": "probe-5",
                        "method": "tools/list",
                        "params": tools_params,
                    }
                ),
                "probe-5",
                {-32600},
            ),
            (
                "params that are a string",
                '{"jsonrpc":"2.0","id":"probe-6","method":"tools/list","params":"oops"}',
                "probe-6",
                {-32600, -32602},
            ),
            (
                "an id that is an object",
                '{"jsonrpc":"2.0","id":{"nested":1},"method":"tools/list"}',
                None,
                {-32600},
            ),
            # Last: the probe most likely to take a fragile server down.
            ("not JSON", '{"jsonrpc": "2.0", "id": "probe-1", "method": "ping"', None, {-32700}),
        ]
        for what, text, probe_id, codes in probes:
            start = self.conn.recorder.seq
            await self._send_raw(text, f"malformed input ({what})")

            def answers(line: Any, probe_id: Any = probe_id) -> bool:
                obj = line.obj
                if not isinstance(obj, dict) or "error" not in obj or "method" in obj:
                    return False
                return bool(obj.get("id") == probe_id)

            # The server keeps serving: a ping right behind the probe is answered.  Once
            # it is, an answer to the probe has had its chance (stdio is ordered).
            alive = True
            try:
                await self.conn.client.ping(timeout=self.options.timeout)
            except RequestTimeout:
                alive = False
            except ConnectionClosedError:
                self.findings.server_gone(self.conn, f"malformed input ({what})", start)
                raise ServerGone() from None
            except MCPError:
                pass
            grace = 0.5 if alive else 0.0
            answer = await self.conn.recorder.wait_for(answers, after=start, timeout=grace)
            self.findings.count("malformed-jsonrpc")
            transcript = self.conn.transcript(start)
            if answer is None:
                self.violate(
                    "malformed-jsonrpc",
                    f"{what}: no error response (expected {_codes(codes)} with id "
                    f"{json.dumps(probe_id)})",
                    transcript,
                )
            else:
                code = (answer.obj.get("error") or {}).get("code")
                if code not in codes:
                    self.violate(
                        "malformed-jsonrpc",
                        f"{what}: error {code}, expected {_codes(codes)}",
                        transcript,
                    )
            if not alive:
                self.violate(
                    "malformed-jsonrpc",
                    f"after {what}, the server stopped answering (a ping got no answer "
                    f"within {self.options.timeout}s)",
                    transcript,
                )
                return


#: The lists walked item by item: (method, items key, capability, the key that
#: identifies an item, the syntax check of that key).
_LISTINGS: list[tuple[str, str, str, str, Callable[[str], str | None] | None]] = [
    ("tools/list", "tools", "tools", "name", None),
    ("prompts/list", "prompts", "prompts", "name", None),
    ("resources/list", "resources", "resources", "uri", uri_problem),
    (
        "resources/templates/list",
        "resourceTemplates",
        "resources",
        "uriTemplate",
        uri_template_problem,
    ),
]


def _codes(codes: set[int]) -> str:
    return " or ".join(str(c) for c in sorted(codes))


def _page_items(result: dict[str, Any], key: str) -> str:
    items = result.get(key)
    return json.dumps(items if isinstance(items, list) else [], sort_keys=True)
