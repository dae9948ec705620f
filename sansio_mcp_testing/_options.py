"""What a server check is asked to do: the properties it knows and the options
that select and bound them (shared by the checker, its probes and its
connections, so that none of them imports another for these)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = ["CheckOptions", "PROPERTIES"]

#: The transcript's bounds (see :class:`CheckOptions`).
DEFAULT_MAX_RECORDED_MESSAGES = 100_000
DEFAULT_MAX_RECORDED_BYTES = 32 << 20

#: The properties, in the order they run.
PROPERTIES: dict[str, str] = {
    "initialize": "initialize/discover works at each revision the server claims",
    "schema": "every message the server sends validates against the official schema "
    "of the negotiated revision",
    "tool-schemas": "every tool's inputSchema (and outputSchema) is a valid JSON Schema",
    "valid-arguments": "calls with generated valid arguments never give a protocol error "
    "(tool failures are isError results); structured results match the outputSchema",
    "invalid-arguments": "calls with invalid arguments (or an unknown tool) give an isError "
    "result or -32602",
    "malformed-jsonrpc": "malformed JSON-RPC gets the right error code and the server keeps "
    "serving",
    "unknown-method": "an unknown method gets -32601",
    "pagination": "list cursors are stable, never loop, lists end, and a bogus cursor gets -32602",
    "listings": "every listed tool, prompt, resource and template, item by item: names and "
    "URIs unique, resource URIs and URI templates well formed",
    "stateful": "random interleavings of lists, reads, prompts, safe tool calls, pings and "
    "cancellations on one session: every request answered or cleanly cancelled, every "
    "message schema-valid, lists stable between list_changed notifications",
    "wire": 'the server speaks JSON-RPC 2.0: jsonrpc "2.0" on every message, responses '
    "only to requests and with their ids, notifications never answered",
    "responsive": "every request is answered within the timeout",
    "survival": "the server survives the whole run",
}


@attrs.define
class CheckOptions:
    """What to check and how carefully."""

    #: Revisions to try (None: every revision the library knows; checked where claimed).
    protocol_versions: Sequence[str] | None = None
    #: Generated examples per tool and property.
    examples: int = 20
    #: Hypothesis seed (None: a random one, reported).
    seed: int | None = None
    allow_destructive: bool = False
    #: Tools called even if annotated destructive.
    allow: Sequence[str] = ()
    #: Tools never called.
    deny: Sequence[str] = ()
    #: Call only tools annotated ``readOnlyHint: true``.
    read_only: bool = False
    #: Seconds per request.
    timeout: float = 10.0
    #: Seconds a generated tool call may take (None: ``timeout``).  A call over it is
    #: cancelled and its tool is skipped for time (said once, with the budget) for the
    #: rest of the run, instead of a ``responsive`` warning per property and revision.
    call_budget: float | None = None
    #: Check the revisions of a stdio server at once, a process each (a URL's are
    #: always checked one after the other: they share one server).
    parallel: bool = True
    #: A folder of official schemas searched first (see
    #: :func:`~sansio_mcp_testing.schemas.find_schema`).
    schema_dir: str | None = None
    #: Extra environment variables for a stdio server (on top of a minimal environment).
    env: Mapping[str, str] = attrs.field(factory=dict)
    #: Working directory of a stdio server (None: a fresh temporary directory, removed after).
    cwd: str | None = None
    #: Only these properties (None: all).
    properties: Sequence[str] | None = None
    #: Examples and steps per example of the stateful property (kept small: it is slow).
    stateful_examples: int = 5
    stateful_steps: int = 10
    #: Called with a line of progress (for a terminal).
    progress: Callable[[str], None] | None = None
    #: Called as examples run: (revision, surface, examples done, examples planned).
    status: Callable[[str, str, int, int], None] | None = None
    #: An :class:`~sansio_mcp.runtime.OAuthProvider` for a protected HTTP server.
    auth: Any = None
    #: The server's messages a connection's transcript keeps, and their bytes, at most;
    #: past either, its messages are still checked, and counted in a skip line.
    max_recorded_messages: int = DEFAULT_MAX_RECORDED_MESSAGES
    max_recorded_bytes: int = DEFAULT_MAX_RECORDED_BYTES
