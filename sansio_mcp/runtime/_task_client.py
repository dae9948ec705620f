"""The client's side of the tasks extension: :class:`ToolTask`, a handle on a
tool call the server runs as a task.

It polls ``tasks/get`` at the server's ``pollIntervalMs``, answers the
task's input requests with the client's handlers (``tasks/update``, each
key once), and can be cancelled.  A 2025-11-25 task (the core's own, answered
``{"task": Task}``) is polled the same way; its input requests come as ordinary
server requests the handlers answer, and its outcome is fetched with
``tasks/result``, which is also asked as soon as the task is ``input_required``:
a server may hold its questions until then (they come while it waits).
Backend-neutral: it awaits only its client's requests and sleep.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .._errors import MCPError, RemoteProtocolError
from .._tasks import TERMINAL_STATUSES, TaskStatus, poll_seconds

__all__ = ["TaskCancelled", "ToolTask", "StatusCallback"]

#: Called with each new DetailedTask a :class:`ToolTask` sees (status changes).
StatusCallback = Callable[[dict[str, Any]], Any]
_TERMINAL = frozenset(s.value for s in TERMINAL_STATUSES)


class TaskCancelled(MCPError, local=True):
    """The task ended ``cancelled``: it has no result (never on the wire)."""

    code = -3


class _TaskPeer(Protocol):
    """What a :class:`ToolTask` needs of its client (a ``ClientAPI`` has it)."""

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]: ...

    async def sleep(self, seconds: float) -> None: ...

    async def answer_input(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


def _task_fields(result: dict[str, Any]) -> dict[str, Any]:
    task = {k: v for k, v in result.items() if k not in ("resultType", "_meta")}
    if not isinstance(task.get("taskId"), str) or task.get("status") not in {
        s.value for s in TaskStatus
    }:
        raise RemoteProtocolError(f"not a task: {sorted(result)}")
    return task


class ToolTask:
    """A tool call running as a task on the server.

    ``task_id`` and :attr:`status` describe it; :meth:`refresh` polls once,
    :meth:`result` polls until it ends (answering input requests) and returns
    the ``CallToolResult``, :meth:`update` answers input requests yourself,
    :meth:`cancel` asks the server to stop it.  A call the server answered at
    once (no task) is a finished handle whose :meth:`result` returns at once.
    """

    def __init__(self, peer: _TaskPeer, created: dict[str, Any]) -> None:
        self._peer = peer
        self._answered: set[str] = set()
        #: A 2025-11-25 task's ``tasks/result`` answer (or its error), once asked.
        self._payload: dict[str, Any] | MCPError | None = None
        #: A 2025-11-25 task: ``CreateTaskResult`` ``{"task": Task}``, outcome by ``tasks/result``.
        self.core_form = "resultType" not in created and isinstance(created.get("task"), dict)
        if created.get("resultType", "complete") == "task":
            self.last = _task_fields(created)
        elif self.core_form:
            self.last = _task_fields(created["task"])
        else:  # answered without a task
            self.last = {"taskId": "", "status": "completed", "result": created}

    @property
    def legacy(self) -> bool:
        """Deprecated alias of :attr:`core_form`."""
        return self.core_form

    @property
    def task_id(self) -> str:
        """The server's task id ("" when the call was answered without a task)."""
        return str(self.last["taskId"])

    @property
    def status(self) -> str:
        return str(self.last["status"])

    @property
    def done(self) -> bool:
        return self.status in _TERMINAL

    @property
    def poll_interval(self) -> float:
        """Seconds between polls: the server's ``pollIntervalMs``, else a default."""
        return poll_seconds(self.last, core_form=self.core_form)

    @property
    def input_requests(self) -> dict[str, Any]:
        """The input requests the task waits on and this handle has not answered."""
        pending = self.last.get("inputRequests") or {}
        return {k: v for k, v in pending.items() if k not in self._answered}

    async def refresh(self) -> dict[str, Any]:
        """``tasks/get`` once; returns the DetailedTask."""
        if self.task_id:
            got = await self._peer.send_request("tasks/get", {"taskId": self.task_id})
            self.last = _task_fields(got)
        return self.last

    async def update(self, responses: dict[str, dict[str, Any]]) -> None:
        """Answer input requests (``tasks/update``); keys answered before are skipped."""
        fresh = {k: v for k, v in responses.items() if k not in self._answered}
        if not fresh:
            return
        await self._peer.send_request(
            "tasks/update", {"taskId": self.task_id, "inputResponses": fresh}
        )
        self._answered.update(fresh)

    async def cancel(self) -> None:
        """``tasks/cancel``: cooperative; the status says when it took effect."""
        if self.task_id and not self.done:
            await self._peer.send_request("tasks/cancel", {"taskId": self.task_id})

    async def wait(
        self, *, on_status: StatusCallback | None = None, answer_inputs: bool = True
    ) -> dict[str, Any]:
        """Poll until the task ends; returns the final DetailedTask.  With
        ``answer_inputs`` the client's handlers answer its input requests;
        ``on_status`` sees every status (or status message) change."""
        seen: tuple[Any, ...] | None = None
        while True:
            if (
                not self.core_form
                and self.status == "input_required"
                and "inputRequests" not in self.last
            ):
                await self.refresh()  # a bare Task (the CreateTaskResult) names no requests
                continue
            key = (self.status, self.last.get("statusMessage"), tuple(self.input_requests))
            if key != seen:
                seen = key
                if on_status is not None:
                    outcome = on_status(dict(self.last))
                    if isinstance(outcome, Awaitable):
                        await outcome
            if self.done:
                return self.last
            if self.core_form and answer_inputs and self.status == "input_required":
                await self._fetch_payload()  # the server's questions come meanwhile
            elif answer_inputs and self.input_requests:
                answers = {
                    key: await self._peer.answer_input(
                        request.get("method", ""), request.get("params") or {}
                    )
                    for key, request in self.input_requests.items()
                }
                await self.update(answers)
            else:
                await self._peer.sleep(self.poll_interval)
            await self.refresh()

    async def _fetch_payload(self) -> None:
        """2025-11-25: ``tasks/result`` (it waits for the end, and the input requests the
        server queued for the task reach the handlers meanwhile); then the final status."""
        try:
            self._payload = await self._peer.send_request("tasks/result", {"taskId": self.task_id})
        except MCPError as error:  # a failed task's error (raised by :meth:`result`)
            self._payload = error
        await self.refresh()

    async def result(
        self, *, on_status: StatusCallback | None = None, answer_inputs: bool = True
    ) -> dict[str, Any]:
        """Wait for the end; the ``CallToolResult`` of a completed task.  A failed
        task raises its error (:class:`MCPError`), a cancelled one :class:`TaskCancelled`."""
        final = await self.wait(on_status=on_status, answer_inputs=answer_inputs)
        if self.core_form and final["status"] in ("completed", "failed"):
            # The payload (or the task's error, raised) is fetched, never inline.
            if self._payload is None:
                await self._fetch_payload()
            if isinstance(self._payload, MCPError):
                raise self._payload
            return dict(self._payload or {})
        if final["status"] == "completed" and isinstance(final.get("result"), dict):
            return dict(final["result"])
        error = final.get("error")
        if final["status"] == "failed" and isinstance(error, dict):
            if isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
                raise MCPError.from_dict(error)
        if final["status"] == "cancelled":
            raise TaskCancelled(message=f"task {self.task_id} was cancelled")
        raise RemoteProtocolError(f"task {self.task_id} ended {final['status']} with no outcome")
