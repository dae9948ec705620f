"""2026-07-28 ``x-mcp-header`` / ``Mcp-Param-*`` (SEP-2243), end to end over
``serve_http``: our client mirrors annotated arguments into headers (learning
the schemas from tools/list), the server checks them against the body, and a
tool whose annotations are invalid is not offered to the client at all.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio

from sansio_mcp import ToolResult
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp.runtime import Server
from trio_adapters.http_client import open_http_client
from trio_adapters.http_server import serve_http, serve_router

from .helpers import (
    NEWEST_HANDSHAKE,
    STATELESS,
    RecordingRouter,
    post_stateless,
    serving,
    stateless_request,
)

BUDGET = 20

DEPLOY_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "tag": {"type": "string", "x-mcp-header": "Tag"},
        "note": {"type": "string"},
    },
    "required": ["region", "count", "dry_run"],
}

BAD_SCHEMA = {
    "type": "object",
    "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}},
    "required": ["ratio"],
}


def header_server() -> Server:
    server = Server("param-headers", "1.0.0")

    @server.tool(input_schema=DEPLOY_SCHEMA)
    def deploy(
        region: str, count: int, dry_run: bool, tag: str | None = None, note: str = ""
    ) -> ToolResult:
        """Pretend to deploy; echo the arguments back."""
        return ToolResult.text(
            f"{region}:{count}:{dry_run}",
            structured={"region": region, "count": count, "dry_run": dry_run, "tag": tag},
        )

    @server.tool(input_schema=BAD_SCHEMA)
    def scale(ratio: float) -> str:
        """A tool whose x-mcp-header annotation is invalid (on a number)."""
        return str(ratio)

    return server


class HeaderRecorder(RecordingRouter):
    """Also keeps the headers of every request."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.headers: list[dict[str, str]] = []

    def handle(self, request: Any) -> Any:
        self.headers.append({k.lower(): v for k, v in dict(request.headers).items()})
        return super().handle(request)


def recording_router(server: Server) -> HeaderRecorder:
    return HeaderRecorder(
        StreamableHTTPServer(
            server.create_session,
            tool_input_schema=lambda name: (
                tool.input_schema if (tool := server.tools.get(name)) else None
            ),
        )
    )


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def test_client_mirrors_annotated_arguments() -> None:
    server = header_server()
    router = recording_router(server)
    with trio.fail_after(BUDGET):
        async with serving(serve_router, server, router=router) as port:
            async with open_http_client(url(port), mode="modern") as client:
                assert client.protocol_version == STATELESS
                # The invalid annotation keeps `scale` out of the list.
                assert [t["name"] for t in await client.list_tools()] == ["deploy"]

                arguments = {"region": "eu-west-1", "count": 3, "dry_run": True, "note": "n"}
                result = await client.call_tool("deploy", arguments)
                assert result["structuredContent"] == {
                    "region": "eu-west-1",
                    "count": 3,
                    "dry_run": True,
                    "tag": None,
                }
                sent = router.headers[-1]
                assert sent["mcp-param-region"] == "eu-west-1"
                assert sent["mcp-param-count"] == "3"
                assert sent["mcp-param-dry-run"] == "true"
                assert "mcp-param-tag" not in sent

                # Non-ASCII (and padded) values travel base64-encoded.
                for region in ("zürich-☃", " padded "):
                    result = await client.call_tool(
                        "deploy", {"region": region, "count": 0, "dry_run": False, "tag": "é"}
                    )
                    assert result["structuredContent"]["region"] == region
                    assert result["structuredContent"]["tag"] == "é"
                    sent = router.headers[-1]
                    encoded = base64.b64encode(region.encode()).decode()
                    assert sent["mcp-param-region"] == f"=?base64?{encoded}?="
                    assert sent["mcp-param-dry-run"] == "false"
                    assert sent["mcp-param-tag"] == "=?base64?w6k=?="
    assert router.posted("tools/call") == [200, 200, 200]


async def test_legacy_session_lists_every_tool_and_sends_no_param_headers() -> None:
    server = header_server()
    router = recording_router(server)
    with trio.fail_after(BUDGET):
        async with serving(serve_router, server, router=router) as port:
            async with open_http_client(url(port), mode="legacy") as client:
                assert client.protocol_version == NEWEST_HANDSHAKE
                assert {t["name"] for t in await client.list_tools()} == {"deploy", "scale"}
                result = await client.call_tool(
                    "deploy", {"region": "r", "count": 1, "dry_run": True}
                )
                assert result["structuredContent"]["region"] == "r"
    assert not any(k.startswith("mcp-param-") for h in router.headers for k in h)


CALL = stateless_request(
    "tools/call",
    {"name": "deploy", "arguments": {"region": "eu", "count": 7, "dry_run": True}},
)
GOOD = {"Mcp_Param_Region": "eu", "Mcp_Param_Count": "7", "Mcp_Param_Dry_Run": "true"}


@pytest.mark.parametrize(
    ("overrides", "status"),
    [
        pytest.param({}, 200, id="ok"),
        pytest.param({"Mcp_Param_Region": "=?base64?ZXU=?="}, 200, id="base64-ok"),
        pytest.param({"mcp_param_region": "eu"}, 200, id="case-insensitive-name"),
        pytest.param({"Mcp_Param_Region": None}, 400, id="missing-string"),
        pytest.param({"Mcp_Param_Count": None}, 400, id="missing-integer"),
        pytest.param({"Mcp_Param_Dry_Run": None}, 400, id="missing-boolean"),
        pytest.param({"Mcp_Param_Region": "us"}, 400, id="mismatched-string"),
        pytest.param({"Mcp_Param_Count": "8"}, 400, id="mismatched-integer"),
        pytest.param({"Mcp_Param_Count": "seven"}, 400, id="malformed-integer"),
        pytest.param({"Mcp_Param_Dry_Run": "false"}, 400, id="mismatched-boolean"),
        pytest.param({"Mcp_Param_Dry_Run": "TRUE"}, 400, id="malformed-boolean"),
        pytest.param({"Mcp_Param_Region": "=?base64?!!!?="}, 400, id="malformed-base64"),
        pytest.param({"Mcp_Param_Region": "=?base64?//79?="}, 400, id="base64-not-utf8"),
        pytest.param({"Mcp_Param_Tag": "x"}, 400, id="header-without-body-value"),
    ],
)
async def test_raw_param_header_rules(overrides: dict[str, str | None], status: int) -> None:
    headers: dict[str, str | None] = {**GOOD}
    for name, value in overrides.items():
        key = next((k for k in headers if k.lower() == name.lower()), name)
        headers.pop(key, None)
        headers[name] = value
    with trio.fail_after(BUDGET):
        async with serving(serve_http, header_server()) as port:
            response = await post_stateless(port, CALL, **headers)
    assert response.status == status, response
    (answer,) = response.messages()
    assert answer["id"] == CALL["id"]
    if status == 200:
        assert answer["result"]["structuredContent"]["region"] == "eu"
    else:
        assert answer["error"]["code"] == -32020, answer
        assert response.headers["content-type"] == "application/json"


async def test_invalid_annotation_is_not_validated_against_headers() -> None:
    """The server does not demand a header for a number-typed annotation (no valid
    Mcp-Param-* exists for it); the call itself still works when sent raw."""
    message = stateless_request("tools/call", {"name": "scale", "arguments": {"ratio": 1.5}})
    with trio.fail_after(BUDGET):
        async with serving(serve_http, header_server()) as port:
            response = await post_stateless(port, message)
    assert response.status == 200, response
