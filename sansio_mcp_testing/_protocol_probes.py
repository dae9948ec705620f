"""The checker's protocol probes: the pagination, unknown-method and
malformed-jsonrpc properties (what any server must get right whatever its
tools)."""

from __future__ import annotations

import json
from typing import Any

import trio

from sansio_mcp import ConnectionClosedError, MCPError, RequestTimeout
from sansio_mcp._versions import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, REVISIONS, Era

from ._connection import ServerGone
from ._probe import MAX_PAGES, Probe

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
        first_walk: list[tuple[str | None, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        start = self.conn.recorder.seq
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            kind, value, transcript = await self.request(method, params, method)
            if kind != "result":
                return
            self.findings.count("pagination")
            first_walk.append((cursor, _page_items(value, key)))
            next_cursor = value.get("nextCursor")
            if next_cursor is None:
                break
            if not isinstance(next_cursor, str):
                return  # the schema property reports it
            if next_cursor in seen:
                self.violate(
                    "pagination",
                    f"{method} returned cursor {next_cursor!r} twice (a pagination loop)",
                    self.conn.transcript(start),
                )
                return
            seen.add(next_cursor)
            cursor = next_cursor
        else:
            self.violate(
                "pagination",
                f"{method} did not end after {MAX_PAGES} pages",
                [],
            )
            return
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

    async def unknown_method(self) -> None:
        params: dict[str, Any] = {}
        if REVISIONS[self.conn.revision].era is Era.MODERN:
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

    async def malformed_jsonrpc(self) -> None:
        if self.conn.raw is None:
            self.skip("malformed-jsonrpc", "raw malformed lines are only sent over stdio")
            return
        modern = REVISIONS[self.conn.revision].era is Era.MODERN
        meta = {
            "_meta": {
                META_PROTOCOL_VERSION: self.conn.revision,
                META_CLIENT_CAPABILITIES: {},
            }
        }
        tools_params = dict(meta) if modern else {}
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
            self.conn.recorder.sent_bytes(text.encode("utf-8"))
            try:
                await self.conn.raw.send_all(text.encode("utf-8") + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.findings.server_gone(self.conn, f"malformed input ({what})", start)
                raise ServerGone() from None

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


def _codes(codes: set[int]) -> str:
    return " or ".join(str(c) for c in sorted(codes))


def _page_items(result: dict[str, Any], key: str) -> str:
    return json.dumps(result.get(key), sort_keys=True)
