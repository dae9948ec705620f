"""The conformance fixture server: what the official MCP conformance suite
(``@modelcontextprotocol/conformance``) expects a server under test to expose,
built on sansio-mcp and served over Streamable HTTP at ``/mcp``.

    python conformance/server.py --port 8123
    python conformance/server.py --port 0      # prints the chosen port
    python conformance/server.py --backend asyncio

One server answers both eras on the same endpoint: the handshake revisions
(``initialize``, ``Mcp-Session-Id``) and the stateless 2026-07-28 revision
(per-request ``_meta``, MRTR, ``subscriptions/listen``).  Tool, resource and
prompt names, and their outputs, are the ones the suite's scenarios name
(``test_simple_text``, ``test://static-text``, ``test_simple_prompt``, ...).
The same handlers serve both eras: ``ctx.sample``/``ctx.elicit`` become
server-to-client requests on a handshake session and ``input_required``
rounds on a stateless request.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

# Run from a checkout without installing: make the project importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sansio_mcp import ErrorCode, MCPError, ToolResult
from sansio_mcp.runtime import Context, Server, TransportBackend

__all__ = ["build_server", "main"]

# A 1x1 red PNG and a minimal WAV, as the suite's reference server uses.
TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="  # noqa: E501
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# SEP-1613 / SEP-2106: a JSON Schema 2020-12 inputSchema whose keywords must survive tools/list.
JSON_SCHEMA_2020_12_INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {
        "properties": {"contactMethod": {"const": "phone"}},
        "required": ["contactMethod"],
    },
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _text(result: dict[str, Any]) -> str:
    """The text of a CreateMessageResult (content is one block or a list)."""
    content = result.get("content")
    if isinstance(content, list):
        content = next((c for c in content if isinstance(c, dict) and c.get("type") == "text"), {})
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return "no response"


def _field(result: dict[str, Any], name: str) -> str:
    """A string field of an ElicitResult's content ("unknown" when absent)."""
    content = result.get("content")
    value = content.get(name) if isinstance(content, dict) else None
    return value if isinstance(value, str) else "unknown"


def _elicited(result: dict[str, Any]) -> str:
    content = json.dumps(result.get("content") or {}, separators=(",", ":"))
    return f"action={result.get('action')}, content={content}"


def _string_schema(*names: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
        "required": list(names),
    }


def build_server() -> Server:
    server = Server("sansio-mcp-conformance-server", "1.0.0")
    watched_content = "Watched resource content"

    # Tools: content types ---------------------------------------------------------------

    @server.tool(input_schema=NO_ARGUMENTS)
    def test_simple_text() -> str:
        """Tests simple text content response."""
        return "This is a simple text response for testing."

    @server.tool(input_schema=NO_ARGUMENTS)
    def test_image_content() -> ToolResult:
        """Tests image content response."""
        return ToolResult([{"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"}])

    @server.tool(input_schema=NO_ARGUMENTS)
    def test_audio_content() -> ToolResult:
        """Tests audio content response."""
        return ToolResult([{"type": "audio", "data": TEST_AUDIO_BASE64, "mimeType": "audio/wav"}])

    @server.tool(input_schema=NO_ARGUMENTS)
    def test_embedded_resource() -> ToolResult:
        """Tests embedded resource content response."""
        return ToolResult(
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        )

    @server.tool(input_schema=NO_ARGUMENTS)
    def test_multiple_content_types() -> ToolResult:
        """Tests response with multiple content types (text, image, resource)."""
        return ToolResult(
            [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                    },
                },
            ]
        )

    @server.tool(input_schema=NO_ARGUMENTS)
    def test_error_handling() -> str:
        """Tests error response handling (always fails)."""
        raise RuntimeError("This tool intentionally returns an error for testing")

    # Tools: notifications during a call -------------------------------------------------

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_tool_with_logging(ctx: Context) -> str:
        """Tests tool that emits log messages during execution."""
        await ctx.log("info", "Tool execution started")
        await ctx.sleep(0.05)
        await ctx.log("info", "Tool processing data")
        await ctx.sleep(0.05)
        await ctx.log("info", "Tool execution completed")
        return "Tool with logging executed successfully"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_tool_with_progress(ctx: Context) -> str:
        """Tests tool that reports progress notifications."""
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await ctx.sleep(0.05)
            await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
        return str(ctx.progress_token)

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_reconnection(ctx: Context) -> str:
        """Tests SSE stream disconnection and client reconnection (SEP-1699)."""
        await ctx.sleep(0.1)
        return (
            "Reconnection test completed successfully. If you received this, the client "
            "properly reconnected after stream closure."
        )

    # Tools: asking the client (server-to-client requests, or MRTR rounds) ---------------

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The prompt to send to the LLM"}
            },
            "required": ["prompt"],
        }
    )
    async def test_sampling(ctx: Context, prompt: str) -> str:
        """Tests server-initiated sampling (LLM completion request)."""
        result = await ctx.sample(prompt, max_tokens=100)
        return f"LLM response: {_text(result)}"

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "The message to show the user"}
            },
            "required": ["message"],
        }
    )
    async def test_elicitation(ctx: Context, message: str) -> str:
        """Tests server-initiated elicitation (user input request)."""
        result = await ctx.elicit(
            message,
            {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            },
        )
        return f"User response: {_elicited(result)}"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Tests elicitation with default values per SEP-1034."""
        result = await ctx.elicit(
            "Please review and update the form fields with defaults",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active",
                    },
                    "verified": {
                        "type": "boolean",
                        "description": "Verification status",
                        "default": True,
                    },
                },
                "required": [],
            },
        )
        return f"Elicitation completed: {_elicited(result)}"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Tests elicitation with enum schema improvements per SEP-1330."""
        result = await ctx.elicit(
            "Please select options from the enum fields",
            {
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Select one option",
                        "enum": ["option1", "option2", "option3"],
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"},
                        ],
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"],
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Select multiple options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {
                            "anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"},
                            ]
                        },
                    },
                },
                "required": [],
            },
        )
        return f"Elicitation completed: {_elicited(result)}"

    @server.tool(input_schema=JSON_SCHEMA_2020_12_INPUT_SCHEMA)
    def json_schema_2020_12_tool(**arguments: Any) -> str:
        """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)."""
        return f"JSON Schema 2020-12 tool called with: {json.dumps(arguments)}"

    # Tools: SEP-2243 custom headers (x-mcp-header mirrors a parameter into Mcp-Param-*)

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {
                "region": {
                    "type": "string",
                    "description": "Region to query (mirrored into Mcp-Param-Region)",
                    "x-mcp-header": "Region",
                },
                "query": {"type": "string", "description": "What to look up"},
            },
            "required": ["region"],
        }
    )
    def test_custom_header(region: str, query: str = "") -> str:
        """Tests SEP-2243 custom headers: region travels as the Mcp-Param-Region header."""
        return f"region={region} query={query}"

    # Tools: the stateless revision (SEP-2575) ------------------------------------------

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_missing_capability(ctx: Context) -> str:
        """Needs the client's sampling capability (-32021 without it)."""
        result = await ctx.sample("Say hello", max_tokens=20, key="sample")
        return f"Success: {_text(result)}"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Asks for input while streaming progress: only the interim result carries the ask."""
        await ctx.report_progress(50, 100)
        result = await ctx.elicit("Continue?", _string_schema("answer"), key="answer")
        return f"Streaming complete: {_elicited(result)}"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_logging_tool(ctx: Context) -> str:
        """Logs only when the request asked for a log level."""
        await ctx.log("info", "Diagnostic trace logging activated")
        return "Logging evaluated"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_trigger_tool_change(ctx: Context) -> str:
        """Announces a change of the tool list to the listening clients."""
        await ctx.list_changed("tools")
        return "Mutation triggered"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Announces a change of the prompt list to the listening clients."""
        await ctx.list_changed("prompts")
        return "Mutation triggered"

    # Tools: multi round-trip requests (SEP-2322) ----------------------------------------

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """MRTR: asks the user's name by elicitation."""
        result = await ctx.elicit("What is your name?", _string_schema("name"), key="user_name")
        return f"Hello, {_field(result, 'name')}!"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """MRTR: asks the client's model a question."""
        result = await ctx.sample(
            "What is the capital of France?", max_tokens=100, key="capital_question"
        )
        return f"Sampling result: {_text(result)}"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """MRTR: asks the client's roots."""
        roots = await ctx.list_roots(key="client_roots")
        return f"Found {len(roots)} root(s)"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """MRTR: the answer comes back with the sealed requestState, which is checked."""
        result = await ctx.elicit(
            "Please confirm",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            key="confirm",
        )
        ok = (result.get("content") or {}).get("ok")
        return "state-ok: requestState validated" if ok is True else "state-ok: not confirmed"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """MRTR: asks for an elicitation, a sampling and the roots in one round."""
        answers = await ctx.request_many(
            {
                "user_name": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "What is your name?",
                        "requestedSchema": _string_schema("name"),
                    },
                },
                "greeting": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [
                            {
                                "role": "user",
                                "content": {"type": "text", "text": "Generate a greeting"},
                            }
                        ],
                        "maxTokens": 50,
                    },
                },
                "client_roots": {"method": "roots/list", "params": {}},
            }
        )
        roots = answers["client_roots"].get("roots")
        count = len(roots) if isinstance(roots, list) else 0
        return (
            f"Name: {_field(answers['user_name'], 'name')}; "
            f"Greeting: {_text(answers['greeting'])}; Roots: {count}"
        )

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """MRTR: two rounds, the first answer carried in the sealed requestState."""
        first = await ctx.elicit("Step 1: What is your name?", _string_schema("name"), key="step1")
        second = await ctx.elicit(
            "Step 2: What is your favorite color?", _string_schema("color"), key="step2"
        )
        return (
            f"Multi-round complete for {_field(first, 'name')} who likes {_field(second, 'color')}"
        )

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """MRTR: the requestState is HMAC-sealed; a tampered one is refused (-32602)."""
        await ctx.elicit(
            "Please confirm",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            key="confirm",
        )
        return "integrity-ok: state verified"

    @server.tool(input_schema=NO_ARGUMENTS)
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """MRTR: asks only for what the client declared it can answer."""
        capabilities = ctx.client_capabilities
        requests: dict[str, dict[str, Any]] = {}
        if "elicitation" in capabilities:
            requests["elicit_input"] = {
                "method": "elicitation/create",
                "params": {
                    "message": "Elicitation input",
                    "requestedSchema": _string_schema("value"),
                },
            }
        if "sampling" in capabilities:
            requests["sample_input"] = {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [
                        {"role": "user", "content": {"type": "text", "text": "Sample request"}}
                    ],
                    "maxTokens": 50,
                },
            }
        if not requests:
            return "No supported capabilities declared"
        answers = await ctx.request_many(requests)
        return f"capabilities-ok: received {','.join(answers)}"

    # Tools: the tasks extension (SEP-2663) ---------------------------------------------

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }
    )
    def greet(name: str) -> str:
        """Sync-only: greets at once, never as a task."""
        return f"Hello, {name}!"

    @server.tool(
        task="optional",
        input_schema={
            "type": "object",
            "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}},
            "required": ["seconds"],
        },
    )
    async def slow_compute(ctx: Context, seconds: float, label: str = "") -> str:
        """Task-capable: sleeps ``seconds``, then answers."""
        await ctx.sleep(seconds)
        return f"Computed {label or 'result'} after {seconds} s"

    @server.tool(task="required", input_schema=NO_ARGUMENTS)
    async def failing_job(ctx: Context) -> str:
        """Task-required: fails as a tool (isError) after about a second."""
        await ctx.sleep(1.0)
        raise RuntimeError("the job failed")

    @server.tool(task="optional", input_schema=NO_ARGUMENTS)
    async def protocol_error_job(ctx: Context) -> str:
        """Task-capable: ends in a protocol error (the task fails)."""
        await ctx.sleep(0.1)
        raise MCPError(ErrorCode.INTERNAL_ERROR, "the job broke down")

    @server.tool(
        task="optional",
        input_schema={
            "type": "object",
            "properties": {"filename": {"type": "string"}},
            "required": ["filename"],
        },
    )
    async def confirm_delete(ctx: Context, filename: str) -> str:
        """Task-capable: asks for a confirmation inside the task, then answers."""
        await ctx.become_task()
        result = await ctx.elicit(
            f"Delete {filename}?",
            {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
            key="confirm",
        )
        confirmed = (result.get("content") or {}).get("confirm") is True
        return f"{filename}: {'deleted' if confirmed else 'kept'}"

    @server.tool(task="optional", input_schema=NO_ARGUMENTS)
    async def multi_input(ctx: Context) -> str:
        """Task-capable: asks two things at once inside the task."""
        await ctx.become_task()
        answers = await ctx.request_many(
            {
                key: {
                    "method": "elicitation/create",
                    "params": {"message": f"{key}?", "requestedSchema": _string_schema("name")},
                }
                for key in ("first", "second")
            }
        )
        return ", ".join(_field(answers[key], "name") for key in ("first", "second"))

    @server.tool(task="required", input_schema=NO_ARGUMENTS)
    async def test_tool_with_task(ctx: Context) -> str:
        """MRTR, then a task: the name is gathered before the task exists."""
        result = await ctx.elicit("What is your name?", _string_schema("name"), key="user_name")
        await ctx.sleep(0.2)
        return f"Hello, {_field(result, 'name')}!"

    # Resources ---------------------------------------------------------------------------

    @server.resource(
        "test://static-text",
        name="static-text",
        title="Static Text Resource",
        description="A static text resource for testing",
        mime_type="text/plain",
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary",
        name="static-binary",
        title="Static Binary Resource",
        description="A static binary resource (image) for testing",
        mime_type="image/png",
    )
    def static_binary() -> list[dict[str, Any]]:
        return [{"uri": "test://static-binary", "mimeType": "image/png", "blob": TEST_IMAGE_BASE64}]

    @server.resource(
        "test://watched-resource",
        name="watched-resource",
        title="Watched Resource",
        description="A resource clients may subscribe to",
        mime_type="text/plain",
    )
    def watched_resource() -> str:
        return watched_content

    @server.resource_template(
        "test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
    def template(id: str) -> str:
        return json.dumps(
            {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
        )

    # Prompts -----------------------------------------------------------------------------

    @server.prompt(title="Simple Test Prompt", description="A simple prompt without arguments")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    def complete_arg1(value: str, context: dict[str, str]) -> list[str]:
        return [v for v in ("paris", "park", "party") if v.startswith(value)]

    @server.prompt(
        title="Prompt With Arguments",
        description="A prompt with required arguments",
        completers={"arg1": complete_arg1},
    )
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(
        title="Prompt With Embedded Resource",
        description="A prompt that includes an embedded resource",
    )
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {
                        "uri": resourceUri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            },
            {
                "role": "user",
                "content": {"type": "text", "text": "Please process the embedded resource above."},
            },
        ]

    @server.prompt(title="Prompt With Image", description="A prompt that includes image content")
    def test_prompt_with_image() -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"},
            },
            {
                "role": "user",
                "content": {"type": "text", "text": "Please analyze the image above."},
            },
        ]

    @server.prompt(description="MRTR: prompt that requires elicitation input")
    async def test_input_required_result_prompt(ctx: Context) -> str:
        result = await ctx.elicit(
            "What context should the prompt use?", _string_schema("context"), key="user_context"
        )
        return f"Prompt with context: {_field(result, 'context')}"

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument(
        "--port", type=int, default=0, help="port (0: pick a free one and print it)"
    )
    parser.add_argument(
        "--backend", choices=("trio", "asyncio"), default="trio", help="event loop to serve on"
    )
    args = parser.parse_args(argv)
    backend: TransportBackend
    if args.backend == "asyncio":
        from asyncio_adapters import BACKEND as backend
    else:
        from trio_adapters import BACKEND as backend

    def bound(port: int) -> None:
        print(f"conformance server listening on http://{args.host}:{port}/mcp", flush=True)

    serve = functools.partial(backend.serve, on_bound=bound)
    try:
        backend.run(serve, build_server(), "http", args.host, args.port)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
