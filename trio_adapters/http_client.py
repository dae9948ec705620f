"""The Trio MCP client over Streamable HTTP: ``open_http_client(url)``."""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from sansio_mcp import ClientSession, RemoteProtocolError, _json
from sansio_mcp._client import ClientHandlers, new_client_session
from sansio_mcp._http import (
    ConnectionEnded,
    HTTPClientConnection,
    HTTPError,
    HTTPResponseHead,
)
from sansio_mcp._ndjson import NEED_DATA
from sansio_mcp._streamable_http_client import Endpoint, ResponseHandler, StreamableHTTPClient
from sansio_mcp._versions import ALL_REVISIONS

from ._runner import TrioSessionHost
from ._util import unwrap_single_exception
from .client import Client, start_client

__all__ = ["open_http_client"]

logger = logging.getLogger("trio_adapters.http")

_READ_SIZE = 65536


class _HTTPClientHost(TrioSessionHost):
    """Every queued message goes out as its own POST, in its own task."""

    def __init__(
        self,
        session: ClientSession,
        transport: StreamableHTTPClient,
        handlers: ClientHandlers,
        *,
        max_body: int,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        super().__init__(
            session,
            **handlers.host_callbacks(),
        )
        self.transport = transport
        self.max_body = max_body
        self.ssl_context = ssl_context
        self._get_running = False
        # Cancel scopes of the POSTs in flight, by the JSON-RPC id they carry.
        self._posts: dict[Any, trio.CancelScope] = {}

    async def flush(self) -> None:
        assert self._nursery is not None
        for message in self.session.messages_to_send():
            if self.transport.is_stateless_cancel(message):
                # 2026-07-28 over HTTP: closing the request's stream is the cancellation.
                scope = self._posts.get(message["params"]["requestId"])
                if scope is not None:
                    scope.cancel()
                continue
            self._nursery.start_soon(self._post, message)

    async def _open(self) -> trio.abc.Stream:
        endpoint = self.transport.endpoint
        stream: trio.abc.Stream = await trio.open_tcp_stream(endpoint.host, endpoint.port)
        if endpoint.scheme == "https":
            context = self.ssl_context or ssl.create_default_context()
            stream = trio.SSLStream(stream, context, server_hostname=endpoint.host)
        return stream

    async def _exchange(
        self, method: str, headers: dict[str, str], body: bytes | None, message: Any
    ) -> ResponseHandler:
        """One HTTP request; what the answer means goes through a core :class:`ResponseHandler`."""
        endpoint = self.transport.endpoint
        response = ResponseHandler(self.transport, message, max_body=self.max_body)
        try:
            stream = await self._open()
        except OSError as exc:
            response.on_failure(f"cannot connect to {endpoint.host_header}: {exc}")
            self._after_input()
            return response
        async with stream:
            conn = HTTPClientConnection(endpoint.host_header)
            try:
                await stream.send_all(conn.send_request(method, endpoint.target, headers, body))
                await self._read(stream, conn, response)
            except (OSError, trio.BrokenResourceError, RemoteProtocolError) as exc:
                response.on_failure(f"the connection failed: {exc}")
                self._after_input()
        return response

    async def _read(
        self, stream: trio.abc.Stream, conn: HTTPClientConnection, response: ResponseHandler
    ) -> None:
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                data = await stream.receive_some(_READ_SIZE)
                conn.receive_data(data)
                if not data:
                    break
                continue
            if isinstance(event, HTTPError):
                raise RemoteProtocolError(event.reason)
            if isinstance(event, ConnectionEnded) or event is None:
                break
            if isinstance(event, HTTPResponseHead):
                response.on_head(event)
                if response.message is None and event.status != 200:
                    return
            elif isinstance(event, bytes) and response.on_body(event):
                self._after_input()
        response.on_end()
        self._after_input()

    def _after_input(self) -> None:
        self.driver.process_events()
        assert self._nursery is not None
        self._nursery.start_soon(self.flush)
        if self.transport.wants_get_stream and not self._get_running:
            self._get_running = True
            self._nursery.start_soon(self._get_stream)

    async def _post(self, message: Any) -> None:
        body = _json.dumps(message).encode("utf-8")
        request_id = message.get("id") if isinstance(message, dict) else None
        with trio.CancelScope() as scope:
            if request_id is not None:
                self._posts[request_id] = scope
            try:
                headers = self.transport.post_headers(message)
                response = await self._exchange("POST", headers, body, message)
                # SEP-1699: a stream that ended before its answer is resumed with a GET.
                last_event_id = None
                while response.needs_resume:
                    last_event_id = response.last_event_id or last_event_id
                    if last_event_id is None:
                        break  # nothing to resume from
                    await trio.sleep(self.transport.retry_delay)
                    headers = self.transport.resume_headers(last_event_id)
                    response = await self._exchange("GET", headers, None, message)
            finally:
                if request_id is not None:
                    self._posts.pop(request_id, None)

    async def _get_stream(self) -> None:
        """Hold the GET stream open for server-initiated messages; reconnect on drops."""
        failures = 0
        while self.transport.wants_get_stream and not self.driver.closed:
            response = await self._exchange("GET", self.transport.get_headers(), None, None)
            if response.status in (405, 404, 400):
                return  # no GET stream here (or the session ended)
            failures = 0 if response.status == 200 else failures + 1
            if failures > 5:
                logger.warning("giving up on the GET stream after %d failures", failures)
                return
            await trio.sleep(self.transport.retry_delay)

    async def end_session(self) -> None:
        """DELETE the handshake session, politely (servers may answer 405)."""
        headers = self.transport.delete_headers()
        if headers is None:
            return
        with trio.move_on_after(2):
            try:
                stream = await self._open()
                async with stream:
                    conn = HTTPClientConnection(self.transport.endpoint.host_header)
                    await stream.send_all(
                        conn.send_request("DELETE", self.transport.endpoint.target, headers)
                    )
                    await stream.receive_some(_READ_SIZE)
            except (OSError, trio.BrokenResourceError):
                pass


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    mode: str = "auto",
    supported_versions: Sequence[str] = ALL_REVISIONS,
    headers: dict[str, str] | None = None,
    initialize_timeout: float | None = 30.0,
    max_input_rounds: int = 10,
    max_body: int = 16 * 1024 * 1024,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`.

    HTTP failures become typed errors of the request that met them:
    :class:`sansio_mcp.HTTPStatusError` (with ``data.status``), or
    :class:`sansio_mcp.ConnectionClosedError` when the server ended the session.
    """
    handlers = handlers or ClientHandlers()
    endpoint = Endpoint.parse(url)
    session = new_client_session(
        handlers,
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
        mode=mode,
        max_input_rounds=max_input_rounds,
    )
    transport = StreamableHTTPClient(endpoint, session, headers=headers)
    host = _HTTPClientHost(session, transport, handlers, max_body=max_body, ssl_context=ssl_context)
    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            try:
                client = await start_client(host, session, handlers, initialize_timeout)
                yield client
                with trio.CancelScope(shield=True):
                    await host.end_session()
            finally:
                session.close()
                host.driver.process_events()
                nursery.cancel_scope.cancel()
