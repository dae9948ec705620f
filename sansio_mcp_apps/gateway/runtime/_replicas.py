"""Parked calls across replicas (issue 33): which replica holds each parked call
(a :class:`ParkedCallOwners` store), and a retry that lands on another replica
forwarded to it over the stores' event bus (:class:`ReplicaLink`).

The replica that parks a call records ``call id -> its replica id`` for the parked
time and listens on its own bus channel, ``gateway:REPLICA_ID`` (the bus adds
the stores' namespace).  A
replica given a retry for a call parked elsewhere publishes the retry there with
a reply channel of its own, and waits: first for the owner's word that it took
the retry (``ack_timeout``), then for the round's outcome (the upstream's next
question or its result, or an error), which it hands its client."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from sansio_mcp import ErrorCode, MCPError
from sansio_mcp.runtime import Backend, RedisCommands, Stores, StoreUnavailable, TaskGroup

__all__ = [
    "MemoryParkedCallOwners",
    "ParkedCallOwners",
    "RedisParkedCallOwners",
    "ReplicaLink",
    "parked_call_owners",
]


class ParkedCallOwners(Protocol):
    """Which replica holds each parked call, for ``ttl`` seconds from its record."""

    async def record(self, call_id: str, replica_id: str, ttl: float) -> None: ...

    async def owner(self, call_id: str) -> str | None:
        """The replica holding ``call_id``; None if no record is live."""
        ...


class MemoryParkedCallOwners:
    """:class:`ParkedCallOwners` of one process (several gateways in it may share
    one), bounded to ``max_keys`` live records (past it the oldest go first)."""

    def __init__(self, clock: Callable[[], float], *, max_keys: int = 100_000) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._owners: dict[str, tuple[str, float]] = {}

    async def record(self, call_id: str, replica_id: str, ttl: float) -> None:
        now = self._clock()
        self._owners.pop(call_id, None)
        if len(self._owners) >= self._max_keys:
            for gone in [k for k, (_, until) in self._owners.items() if until <= now]:
                del self._owners[gone]
            while len(self._owners) >= self._max_keys:
                del self._owners[next(iter(self._owners))]
        self._owners[call_id] = (replica_id, now + ttl)

    async def owner(self, call_id: str) -> str | None:
        found = self._owners.get(call_id)
        if found is None or found[1] <= self._clock():
            return None
        return found[0]


class RedisParkedCallOwners:
    """:class:`ParkedCallOwners` in Redis: one key per call under ``prefix``, which
    Redis expires."""

    def __init__(self, redis: RedisCommands, prefix: str) -> None:
        self.redis = redis
        self.prefix = prefix

    async def record(self, call_id: str, replica_id: str, ttl: float) -> None:
        await self.redis.execute(
            "SET", f"{self.prefix}:{call_id}", replica_id, "PX", max(1, round(ttl * 1000))
        )

    async def owner(self, call_id: str) -> str | None:
        found = await self.redis.execute("GET", f"{self.prefix}:{call_id}")
        if isinstance(found, bytes):
            return found.decode("utf-8", "replace")
        return found if isinstance(found, str) else None


def parked_call_owners(stores: Stores, clock: Callable[[], float]) -> ParkedCallOwners:
    """The owners store ``stores`` call for: Redis's when it has one, else memory."""
    if stores.redis is None:
        return MemoryParkedCallOwners(clock)
    return RedisParkedCallOwners(stores.redis, stores.key("gateway", "parked"))


logger = logging.getLogger("sansio_mcp_apps.gateway")

#: Seconds a replica waits for the one holding a parked call to take a forwarded retry.
DEFAULT_ACK_TIMEOUT = 5.0


class ReplicaLink:
    """This replica among others: it records the calls it parks in ``owners``,
    serves retries forwarded to it with ``serve(message) -> result``, and forwards
    those of calls parked elsewhere (:meth:`forward`).  :meth:`run` it beside the
    gateway."""

    def __init__(
        self,
        stores: Stores,
        owners: ParkedCallOwners,
        backend: Backend,
        *,
        ack_timeout: float = DEFAULT_ACK_TIMEOUT,
        outcome_timeout: float = 300.0,
    ) -> None:
        self.stores = stores
        self.owners = owners
        self.backend = backend
        self.replica_id = stores.replica_id
        self.ack_timeout = ack_timeout
        self.outcome_timeout = outcome_timeout
        self.serve: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
        #: This replica's tag: the ids of its questions to handshake-era clients carry it.
        self.tag = hashlib.sha256(self.replica_id.encode("utf-8")).hexdigest()[:16]
        #: ``take_answer(answer, authorization)``: a handshake-era client's answer to
        #: one of this replica's questions, which reached another replica.
        self.take_answer: Callable[[dict[str, Any], str], None] | None = None
        self._group: TaskGroup | None = None
        self._subscribed = backend.new_signal()

    async def ready(self) -> None:
        """Until :meth:`run` has subscribed to this replica's channels and the bus has
        them in effect: a replica listens only then, so nothing forwarded is lost."""
        await self._subscribed.wait()
        await self.stores.events.settled()

    def channel(self, replica_id: str) -> str:
        return f"gateway:{replica_id}"

    def answers_channel(self, tag: str) -> str:
        return f"gateway:answers:{tag}"

    async def run(self) -> None:
        """Serve the retries and answers forwarded to this replica until cancelled."""
        async with self.backend.open_task_group() as group:

            def deliver(message: dict[str, Any]) -> None:
                group.start_soon(self._serve, message)

            def answered(message: dict[str, Any]) -> None:
                answer, authorization = message.get("answer"), message.get("authorization")
                if (
                    self.take_answer is not None
                    and isinstance(answer, dict)
                    and isinstance(authorization, str)
                ):
                    self.take_answer(answer, authorization)

            events = self.stores.events
            subscriptions = [
                events.subscribe(self.channel(self.replica_id), deliver),
                events.subscribe(self.answers_channel(self.tag), answered),
            ]
            self._group = group
            self._subscribed.set()
            try:
                await self.backend.new_signal().wait()
            finally:
                self._group = None
                for subscription in subscriptions:
                    subscription.close()
                group.cancel()

    def forward_answer(self, tag: str, answer: dict[str, Any], authorization: str) -> None:
        """Pass a handshake-era client's ``answer`` to the replica tagged ``tag``,
        whose question it answers (soon: this is called while a request is routed)."""
        if self._group is None:
            return
        message = {"answer": answer, "authorization": authorization}

        async def publish() -> None:
            try:
                await self.stores.events.publish(self.answers_channel(tag), message)
            except StoreUnavailable as exc:
                logger.warning("an answer for replica %s was lost: %s", tag, exc)

        self._group.start_soon(publish)

    async def _serve(self, message: dict[str, Any]) -> None:
        reply = message.get("reply")
        if not isinstance(reply, str) or self.serve is None:
            return  # not a forwarded retry: nothing to answer
        outcome: dict[str, Any]
        try:
            await self.stores.events.publish(reply, {"taken": True})
            outcome = {"result": await self.serve(message)}
        except MCPError as exc:
            outcome = {"error": {"code": int(exc.code), "message": exc.message, "data": exc.data}}
        except StoreUnavailable as exc:
            outcome = {"error": {"code": int(ErrorCode.INTERNAL_ERROR), "message": str(exc)}}
        try:
            await self.stores.events.publish(reply, outcome)
        except StoreUnavailable:
            pass  # the forwarding replica times out and says so

    async def forward(self, owner: str, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` (a retry) served by replica ``owner``: its result, or its
        error raised as :class:`MCPError`."""
        reply = f"gateway:{self.replica_id}:reply:{secrets.token_hex(12)}"
        got: list[dict[str, Any]] = []
        arrived = [self.backend.new_signal()]

        def deliver(answer: dict[str, Any]) -> None:
            got.append(answer)
            arrived[0].set()

        subscription = self.stores.events.subscribe(reply, deliver)
        try:
            # The owner answers on ``reply`` at once: the bus must hear it before we ask.
            await self.stores.events.settled()
            await self.stores.events.publish(self.channel(owner), {**message, "reply": reply})
            for limit, what in ((self.ack_timeout, "take"), (self.outcome_timeout, "finish")):
                async with self.backend.move_on_after(limit):
                    while not got:
                        await arrived[0].wait()
                        arrived[0] = self.backend.new_signal()
                if not got:
                    raise MCPError(
                        ErrorCode.INTERNAL_ERROR,
                        f"the gateway replica holding this parked call ({owner}) did not "
                        f"{what} the retry within {limit:g} s",
                    )
                answer = got.pop(0)
                if "taken" not in answer:
                    return _outcome(answer)
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            subscription.close()


def _outcome(answer: dict[str, Any]) -> dict[str, Any]:
    error = answer.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        raise MCPError(
            code if isinstance(code, int) else ErrorCode.INTERNAL_ERROR,
            str(error.get("message", "")),
            error.get("data"),
        )
    result = answer.get("result")
    if not isinstance(result, dict):
        raise MCPError(ErrorCode.INTERNAL_ERROR, "another gateway replica answered malformed")
    return result
