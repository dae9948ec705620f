"""The conformance client: what the official MCP conformance suite
(``@modelcontextprotocol/conformance``) expects a client under test to do,
built on sansio-mcp's Trio Streamable HTTP client.

    MCP_CONFORMANCE_SCENARIO=tools_call python conformance/client.py URL

The suite starts a mock server per scenario and runs this program with the
server's URL as the last argument.  ``MCP_CONFORMANCE_SCENARIO`` names the
scenario, ``MCP_CONFORMANCE_PROTOCOL_VERSION`` the revision to speak (a
handshake revision, or 2026-07-28 for the stateless one) and
``MCP_CONFORMANCE_CONTEXT`` (JSON) carries scenario data such as the tool
calls to make.  Exit status 0 means the client did what the scenario asks;
the suite then judges the traffic it saw.  ``SANSIO_MCP_CONFORMANCE_BACKEND=asyncio``
runs the client on asyncio instead of Trio.

The ``auth/*`` scenarios run the same calls with an :class:`OAuthProvider` built from
the scenario's context (:func:`oauth_provider`); the suite's mock authorization server
approves at once and redirects, so the provider follows that redirect itself (headless).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Run from a checkout without installing: make the project importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if TYPE_CHECKING:
    from sansio_mcp.runtime import ClientHandlers
    from trio_adapters.client import Client

# The library is imported only for a scenario this client plays: the suite starts
# every scenario of a run at once, and the out-of-scope ones should exit at once.

__all__ = ["SCENARIOS", "main"]

logger = logging.getLogger("conformance-client")

#: The environment variable naming the backend to run on: trio (the default) or asyncio.
BACKEND_VARIABLE = "SANSIO_MCP_CONFORMANCE_BACKEND"
CLIENT_INFO = {"name": "sansio-mcp-conformance-client", "version": "1.0.0"}
TIMEOUT = 25.0  # the suite gives a client 30 s


def _defaults(schema: Any) -> dict[str, Any]:
    """The ``default`` of each property of an elicitation's requestedSchema."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }


def _sample_value(name: str, spec: Any) -> Any:
    """An argument value that satisfies a simple property schema."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and isinstance(spec.get("enum"), list) and spec["enum"]:
        return spec["enum"][0]
    if kind == "number":
        return 2.5 if name not in ("a", "b") else {"a": 2, "b": 3}[name]
    if kind == "integer":
        return {"a": 2, "b": 3}.get(name, 1)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return f"test-{name}"


def _sample_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments for ``tool``'s required parameters."""
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    return {
        name: _sample_value(name, properties.get(name))
        for name in schema.get("required") or []
        if isinstance(name, str)
    }


class Answers:
    """How this client answers the server: a model, a user, a filesystem."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("sampling/createMessage", params))
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "This is a test response from the client"},
            "model": "sansio-mcp-test-model",
            "stopReason": "endTurn",
        }

    def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        """Accept, with each field's default filled in (SEP-1034) and a value for the rest."""
        self.asked.append(("elicitation/create", params))
        schema = params.get("requestedSchema") or {}
        content = _defaults(schema)
        for name, spec in (schema.get("properties") or {}).items():
            if name in content or not isinstance(spec, dict):
                continue
            if spec.get("type") == "boolean":
                content[name] = True
            elif spec.get("type") == "string" and "enum" not in spec and "oneOf" not in spec:
                content[name] = f"test-{name}"
        return {"action": "accept", "content": content}

    def roots(self) -> list[dict[str, Any]]:
        return [{"uri": "file:///tmp/conformance-root", "name": "Conformance Root"}]

    def handlers(self) -> ClientHandlers:
        from sansio_mcp.runtime import ClientHandlers

        return ClientHandlers(
            sampling=self.sampling, elicitation=self.elicitation, roots=self.roots
        )


# Scenarios ----------------------------------------------------------------------------


async def list_and_call_first(client: Client, context: dict[str, Any]) -> None:
    """initialize / tools_call: discover, list the tools (when served), call the first one."""
    if "tools" not in client.server_capabilities:
        return
    tools = await client.list_tools()
    if tools:
        tool = tools[0]
        await client.call_tool(tool["name"], _sample_arguments(tool), timeout=TIMEOUT)


async def list_only(client: Client, context: dict[str, Any]) -> None:
    """json-schema-ref-no-deref: list the tools (and never fetch a network $ref)."""
    await client.list_tools()


async def echo_schema(client: Client, context: dict[str, Any]) -> None:
    """json-schema-2020-12-preservation: send the focal tool's inputSchema back verbatim."""
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    focal = tools.get("json_schema_2020_12_tool")
    if focal is None:
        raise RuntimeError("the focal tool json_schema_2020_12_tool is not advertised")
    await client.call_tool("json_schema_echo", {"schema": focal["inputSchema"]}, timeout=TIMEOUT)


async def elicitation_defaults(client: Client, context: dict[str, Any]) -> None:
    """elicitation-sep1034-client-defaults: the elicitation is accepted with defaults applied."""
    await client.list_tools()
    await client.call_tool("test_client_elicitation_defaults", {}, timeout=TIMEOUT)


async def call_every_tool(client: Client, context: dict[str, Any]) -> None:
    """Call each listed tool (the context's arguments when it names them)."""
    planned = {c["name"]: c.get("arguments") or {} for c in context.get("toolCalls") or []}
    for tool in await client.list_tools():
        arguments = planned.get(tool["name"], _sample_arguments(tool))
        await client.call_tool(tool["name"], arguments, timeout=TIMEOUT)


async def exercise_everything(client: Client, context: dict[str, Any]) -> None:
    """http-standard-headers: call each tool, read each resource, get each prompt
    (each request's Mcp-Method and Mcp-Name headers are what is checked)."""
    capabilities = client.server_capabilities
    if "tools" in capabilities:
        await call_every_tool(client, context)
    if "resources" in capabilities:
        for resource in await client.list_resources():
            await client.read_resource(resource["uri"])
    if "prompts" in capabilities:
        for prompt in await client.list_prompts():
            arguments = {
                a["name"]: f"test-{a['name']}"
                for a in prompt.get("arguments") or []
                if a.get("required")
            }
            await client.get_prompt(prompt["name"], arguments or None)


async def context_tool_calls(client: Client, context: dict[str, Any]) -> None:
    """http-custom-headers: make exactly the calls the context lists."""
    await client.list_tools()
    for call in context.get("toolCalls") or []:
        await client.call_tool(call["name"], call.get("arguments") or {}, timeout=TIMEOUT)


async def mrtr_request_state(client: Client, context: dict[str, Any]) -> None:
    """sep-2322-client-request-state: MRTR rounds are answered by the client library,
    which echoes requestState verbatim and never leaks it into another call."""
    names = [tool["name"] for tool in await client.list_tools()]
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
        if name in names:
            await client.call_tool(name, {}, timeout=TIMEOUT)
    if "test_mrtr_no_result_type" in names:
        await client.call_tool("test_mrtr_no_result_type", {}, timeout=TIMEOUT)


async def request_metadata(client: Client, context: dict[str, Any]) -> None:
    """request-metadata: every request carries _meta and the MCP-Protocol-Version header."""
    await client.list_tools()


Scenario = Callable[["Client", dict[str, Any]], Awaitable[None]]

SCENARIOS: dict[str, Scenario] = {
    "initialize": list_and_call_first,
    "tools_call": list_and_call_first,
    "sse-retry": call_every_tool,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": echo_schema,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": mrtr_request_state,
    "http-standard-headers": exercise_everything,
    "http-custom-headers": context_tool_calls,
    "http-invalid-tool-headers": call_every_tool,
}


#: The Client ID Metadata Document URL the suite expects (auth/basic-cimd).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def oauth_provider(scenario: str, context: dict[str, Any]) -> Any:
    """The provider an ``auth/*`` scenario calls for: the grant and the credentials
    come from the scenario's context (pre-registered clients, keys, assertions)."""
    from sansio_mcp.auth import ClientInfo, Grant, OAuthConfig
    from sansio_mcp.runtime import OAuthProvider

    client_id = context.get("client_id")
    secret = context.get("client_secret")
    options: dict[str, Any] = {
        "client_name": CLIENT_INFO["name"],
        "redirect_uri": "http://127.0.0.1:3000/callback",
        "client_metadata_url": CLIENT_METADATA_URL,
    }
    if scenario.startswith("auth/client-credentials"):
        options["grant"] = Grant.CLIENT_CREDENTIALS
        if context.get("private_key_pem"):
            options["private_key"] = context["private_key_pem"]
            options["signing_algorithm"] = context.get("signing_algorithm") or "ES256"
    elif "idp_id_token" in context:
        options["grant"] = Grant.TOKEN_EXCHANGE
        options["id_token"] = context["idp_id_token"]
        options["idp_token_endpoint"] = context.get("idp_token_endpoint")
        options["idp_client_id"] = context.get("idp_client_id")
    elif "valid_jwt" in context:
        options["grant"] = Grant.JWT_BEARER
        options["assertion"] = context["valid_jwt"]
        client_id = client_id or CLIENT_INFO["name"]
    if client_id:
        options["client"] = ClientInfo(client_id, secret, issuer=context.get("issuer"))
    return OAuthProvider(OAuthConfig(**options))


async def run(url: str, scenario: str, version: str | None, context: dict[str, Any]) -> None:
    import trio

    from trio_adapters.http_client import open_http_client

    with trio.fail_after(TIMEOUT):
        await _play(open_http_client, url, scenario, version, context)


async def run_asyncio(
    url: str, scenario: str, version: str | None, context: dict[str, Any]
) -> None:
    import asyncio

    from asyncio_adapters.http_client import open_http_client

    async with asyncio.timeout(TIMEOUT):
        await _play(open_http_client, url, scenario, version, context)


async def _play(
    open_http_client: Any, url: str, scenario: str, version: str | None, context: dict[str, Any]
) -> None:
    answers = Answers()
    auth = oauth_provider(scenario, context) if scenario.startswith("auth/") else None
    # A handshake revision means initialize and a session; 2026-07-28 is stateless.
    async with open_http_client(
        url,
        handlers=answers.handlers(),
        client_info=CLIENT_INFO,
        protocol_version=version,
        initialize_timeout=TIMEOUT,
        auth=auth,
    ) as client:
        logger.info("connected: %s %s", client.protocol_version, client.server_info)
        await SCENARIOS[scenario](client, context)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(
        level=os.environ.get("MCP_CONFORMANCE_LOG", "WARNING"),
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not argv:
        print("usage: conformance/client.py SERVER_URL", file=sys.stderr)
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if scenario.startswith("auth/"):
        SCENARIOS.setdefault(scenario, list_and_call_first)
    if scenario not in SCENARIOS:
        print(f"scenario {scenario!r} is not supported by this client", file=sys.stderr)
        return 2
    from sansio_mcp import MCPError

    try:
        if os.environ.get(BACKEND_VARIABLE) == "asyncio":
            import asyncio

            asyncio.run(run_asyncio(url, scenario, version, context))
        else:
            import trio

            trio.run(run, url, scenario, version, context)
    except MCPError as exc:
        print(f"{scenario}: MCP error {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
