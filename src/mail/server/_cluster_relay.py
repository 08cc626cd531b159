"""Cluster mode: a task's events and requests between replicas, through Redis.

**Events.** The replica that runs a task publishes each event to the Redis stream of the
task (``mail:task:<digest>``, trimmed to about :data:`STREAM_MAXLEN` entries, kept a day)
once the store has committed it (:class:`~mail.core._recorder.StoreRecorder`'s
``on_commit``), then, when a turn ends, an ``end`` entry with the stream's closing event.
Any replica follows a task (:meth:`Relay.follow`): it notes the stream's last entry, reads
the stored events after the client's cursor, then reads the stream from the noted entry,
dropping what it already sent. An event is committed before it is published, so every
event is in the store or after the noted entry: no gap, no duplicate. Should a replica die
between a commit and its publication, the follower fills the gap from the store.

**Requests.** A request that acts on a task another replica runs (a follow-up, a
breakpoint answer, a cancel) is pushed to that replica's list ``mail:inbox:<replica>``
with a reply key; the owner runs it as if it had reached it and pushes the outcome to
``mail:reply:<id>`` (:meth:`Relay.hand_over`, :meth:`Relay.serve_inbox`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException

from mail.core.events import EventName, MAILEvent
from mail.core.tasks import MAILTask, TaskState, closing_event
from mail.errors import MAILError
from mail.server._cluster import redis_errors

if TYPE_CHECKING:
    from mail.core.events import EventLog
    from mail.db.store import CallerKey
    from mail.server._cluster import Cluster

__all__ = ["STREAM_MAXLEN", "Relay", "stream_key"]

logger = logging.getLogger("mail.server.cluster")

#: Entries kept per task stream (approximately: ``XADD MAXLEN ~``).
STREAM_MAXLEN = 10_000
_STREAM_TTL = 86_400
_REPLY_TTL = 120
#: How long a hand-over waits for the owner's answer.
HAND_OVER_TIMEOUT = 30.0

#: ``handle(kind, request) -> answer`` runs a handed-over request on the owner.
Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
#: ``load(key, task_id) -> task`` reads a task from the store (``None``: not there).
Loader = Callable[["CallerKey", str], Awaitable[MAILTask | None]]


def stream_key(key: CallerKey, task_id: str) -> str:
    """The Redis stream of a caller's task (a digest: ids may hold any character)."""
    raw = json.dumps([key.swarm, key.role, key.id, task_id]).encode()
    return "mail:task:" + hashlib.sha256(raw).hexdigest()[:40]


def _inbox(replica_id: str) -> str:
    return f"mail:inbox:{replica_id}"


def _fields(event: MAILEvent) -> dict[str, str]:
    return {
        "seq": str(event.seq or 0),
        "event": str(event.event),
        "data": json.dumps(event.data(), separators=(",", ":")),
    }


def _event(task_id: str, fields: dict[str, str]) -> MAILEvent:
    data = json.loads(fields["data"])
    if "end" in fields:  # the stream's closing event: its data is its payload
        return MAILEvent(event=fields["event"], task_id=task_id, payload=data)
    return MAILEvent(
        event=fields["event"],
        task_id=task_id,
        description=data.get("description", ""),
        extra_data=data.get("extra_data") or {},
        timestamp=data.get("timestamp"),
        seq=int(fields["seq"]),
    )


class Relay:
    """This replica's side of the Redis streams and inboxes."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.replica_id = cluster.replica_id
        # committed events to publish, in commit order: (caller, [(log, first, last, task)])
        self._outbox: asyncio.Queue[tuple[CallerKey, list[Any]]] = asyncio.Queue()
        #: called after a task's turn ended in a final state was published (lease release)
        self.on_final: Callable[[CallerKey, MAILTask], Awaitable[None]] | None = None

    @property
    def _redis(self) -> Any:
        assert self.cluster.redis is not None  # noqa: S101  # open while the server runs
        return self.cluster.redis

    # --- publishing (the owner) -------------------------------------------------------------

    def committed(
        self, key: CallerKey, done: list[tuple[EventLog, int | None, int | None, MAILTask | None]]
    ) -> None:
        """The store committed these events and task records (the recorder's hook)."""
        self._outbox.put_nowait((key, done))

    async def publish_forever(self) -> None:
        """Publish what :meth:`committed` queued, in order, until cancelled."""
        while True:
            key, done = await self._outbox.get()
            try:
                await self._publish(key, done)
            except redis_errors() as e:
                logger.warning("replica %s: publishing events failed: %s", self.replica_id, e)

    async def _publish(
        self, key: CallerKey, done: list[tuple[EventLog, int | None, int | None, MAILTask | None]]
    ) -> None:
        pipe = self._redis.pipeline(transaction=False)
        finals: list[MAILTask] = []
        for log, first, last, task in done:
            stream = stream_key(key, log.task_id)
            if first is not None and last is not None:
                for event in log.since(first - 1)[: last - first + 1]:
                    pipe.xadd(stream, _fields(event), maxlen=STREAM_MAXLEN, approximate=True)
            if task is not None and not task.is_running:
                body = task.response["message"]["body"] if task.response is not None else ""
                end = {**_fields(closing_event(task, body)), "end": str(task.state)}
                pipe.xadd(stream, end, maxlen=STREAM_MAXLEN, approximate=True)
                if task.state is not TaskState.WAITING_BREAKPOINT:
                    finals.append(task)
            pipe.expire(stream, _STREAM_TTL)
        await pipe.execute()
        for task in finals:
            if self.on_final is not None and not task.is_running:
                await self.on_final(key, task)

    # --- following (any replica) ----------------------------------------------------------

    async def follow(
        self,
        key: CallerKey,
        task_id: str,
        after: int,
        load: Loader,
        *,
        ping: float,
        stored_ends: bool = False,
        started: bool = False,
    ) -> AsyncIterator[MAILEvent]:
        """The task's events after ``after``: stored ones, then live ones from its stream
        until its turn ends, then the closing event (``ping`` events meanwhile).

        ``started``: a turn was started after ``after`` on another replica (a handed-over
        request); the store's copy ends the stream only once it holds that turn."""
        stream = stream_key(key, task_id)
        newest = await self._redis.xrevrange(stream, count=1)
        mark = newest[0][0] if newest else "0-0"
        task = await load(key, task_id)
        if task is None:
            return
        cursor = after
        for event in task.log.since(after):
            cursor = event.seq or cursor
            if stored_ends or event.event != EventName.TASK_COMPLETE:
                yield event
        if not task.is_running and not (started and task.log.last_seq <= after):
            body = task.response["message"]["body"] if task.response is not None else ""
            yield closing_event(task, body)
            return
        async for event in self._live(key, task_id, stream, mark, cursor, load, ping):
            if stored_ends or event.event != EventName.TASK_COMPLETE or event.seq is None:
                yield event

    async def _live(
        self,
        key: CallerKey,
        task_id: str,
        stream: str,
        mark: str,
        cursor: int,
        load: Loader,
        ping: float,
    ) -> AsyncIterator[MAILEvent]:
        """The stream's events after entry ``mark`` and sequence number ``cursor`` (gaps
        filled from the store), up to and with the closing event."""
        while True:
            entries = await self._redis.xread({stream: mark}, count=200, block=int(ping * 1000))
            if not entries:
                yield MAILEvent.ping(task_id)
                continue
            for entry_id, fields in entries[0][1]:
                mark = entry_id
                if "end" in fields:
                    yield _event(task_id, fields)
                    return
                seq = int(fields["seq"])
                if seq <= cursor:
                    continue
                if seq > cursor + 1:  # published late or lost: the store has them
                    again = await load(key, task_id)
                    for event in again.log.since(cursor)[: seq - cursor - 1] if again else []:
                        yield event
                cursor = seq
                yield _event(task_id, fields)

    # --- handing requests over ------------------------------------------------------------

    async def hand_over(
        self, owner: str, kind: str, request: dict[str, Any], timeout: float = HAND_OVER_TIMEOUT
    ) -> dict[str, Any]:
        """Have replica ``owner`` run ``request`` and return its answer; its refusal is
        raised as the HTTP error it would have answered; 503 when it does not answer."""
        reply = f"mail:reply:{uuid.uuid4().hex}"
        message = json.dumps({"kind": kind, "reply": reply, "request": request})
        try:
            await self._redis.rpush(_inbox(owner), message)
            answer = await self._redis.blpop([reply], timeout=timeout)
        except redis_errors() as e:
            raise HTTPException(503, f"cannot reach the replica running this task: {e}") from e
        if answer is None:
            raise HTTPException(
                503,
                f"replica {owner}, which runs this task, did not answer within {timeout:.0f}s; "
                "try again (if it stopped, another replica takes the task over)",
            )
        outcome = json.loads(answer[1])
        if "error" in outcome:
            raise HTTPException(outcome["error"]["status"], outcome["error"]["detail"])
        return dict(outcome["answer"])

    async def serve_inbox(self, handle: Handler, status: Callable[[MAILError], int]) -> None:
        """Run the requests handed to this replica until cancelled, each in its own task."""
        running: set[asyncio.Task[None]] = set()
        while True:
            try:
                item = await self._redis.blpop([_inbox(self.replica_id)], timeout=1)
            except redis_errors() as e:
                logger.warning("replica %s: reading its inbox failed: %s", self.replica_id, e)
                await asyncio.sleep(1.0)
                continue
            if item is None:
                continue
            job = asyncio.get_running_loop().create_task(self._serve(item[1], handle, status))
            running.add(job)
            job.add_done_callback(running.discard)

    async def _serve(self, raw: str, handle: Handler, status: Callable[[MAILError], int]) -> None:
        message = json.loads(raw)
        try:
            outcome: dict[str, Any] = {"answer": await handle(message["kind"], message["request"])}
        except HTTPException as e:
            outcome = {"error": {"status": e.status_code, "detail": e.detail}}
        except MAILError as e:
            outcome = {"error": {"status": status(e), "detail": str(e)}}
        except Exception:
            logger.exception("a request handed to replica %s failed", self.replica_id)
            outcome = {"error": {"status": 500, "detail": "internal server error"}}
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.rpush(message["reply"], json.dumps(outcome))
            pipe.expire(message["reply"], _REPLY_TTL)
            await pipe.execute()
        except redis_errors() as e:
            logger.warning(
                "replica %s: answering a handed-over request failed: %s", self.replica_id, e
            )
