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
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mail.core.events import EventName, MAILEvent
from mail.core.tasks import MAILTask, TaskState, closing_event
from mail.errors import MAILError
from mail.server._cluster import redis_errors
from mail.server._task_service import RelayedError

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
#: Blocking reads wait at most this long at a time (less than the client's socket timeout).
_BLOCK_MS = 1000

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


@dataclass(slots=True)
class _Cursor:
    """Where a follower is: the last sequence number sent, the last stream entry read."""

    seq: int
    mark: str
    ended: bool = False

    def stored(self, events: list[MAILEvent]) -> list[MAILEvent]:
        """``events`` (stored ones, in order) to send, the cursor moved past them; the
        stored ``task_complete`` events are left out (the closing event ends a turn)."""
        if events:
            self.seq = events[-1].seq or self.seq
        return [e for e in events if e.event != EventName.TASK_COMPLETE]


def _closing(task: MAILTask) -> MAILEvent:
    """The closing event of the task's last turn."""
    body = task.response["message"]["body"] if task.response is not None else ""
    return closing_event(task, body)


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
                end = {**_fields(_closing(task)), "end": str(task.state)}
                pipe.xadd(stream, end, maxlen=STREAM_MAXLEN, approximate=True)
                if task.state is not TaskState.WAITING_BREAKPOINT:
                    finals.append(task)
            pipe.expire(stream, _STREAM_TTL)
        try:
            await pipe.execute()
        finally:  # stored is enough: a lease is let go of even when Redis fails
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
        started: bool = False,
    ) -> AsyncIterator[MAILEvent]:
        """The task's events after ``after``: stored ones, then live ones from its stream
        until its turn ends, then the closing event (stored ``task_complete`` events are
        left out: the closing event ends the turn). After ``ping`` seconds of silence, the
        store is read again (a replica that died may have stored what it did not
        publish), then a ``ping`` is sent.

        ``started``: a turn was started after ``after`` on another replica (a handed-over
        request); the store's copy ends the stream only once it holds that turn."""
        stream = stream_key(key, task_id)
        try:
            newest = await self._redis.xrevrange(stream, count=1)
        except redis_errors() as e:  # the stream ends: the client reconnects
            logger.warning("following task %s: Redis failed: %s", task_id, e)
            return
        mark = newest[0][0] if newest else "0-0"

        def over(task: MAILTask) -> bool:
            return not task.is_running and not (started and task.log.last_seq <= after)

        task = await load(key, task_id)
        if task is None:
            return
        at = _Cursor(seq=after, mark=mark)
        quiet = time.monotonic()
        while not at.ended:
            if task is not None:  # read from the store: what it has after the cursor
                for event in at.stored(task.log.since(at.seq)):
                    yield event
                if over(task):
                    yield _closing(task)
                    return
                task = None
            entries = await self._read(stream, at.mark, task_id)
            if entries:
                quiet = time.monotonic()
                async for event in self._entries(entries, at, key, task_id, load):
                    yield event
            elif time.monotonic() - quiet >= ping:
                quiet = time.monotonic()
                task = await load(key, task_id)
                yield MAILEvent.ping(task_id)

    async def _entries(
        self,
        entries: list[tuple[str, Any]],
        at: _Cursor,
        key: CallerKey,
        task_id: str,
        load: Loader,
    ) -> AsyncIterator[MAILEvent]:
        """The events of stream ``entries`` after ``at`` (gaps filled from the store),
        up to and with a closing one (``at.ended`` then)."""
        for entry_id, fields in entries:
            at.mark = entry_id
            if "end" in fields:
                at.ended = True
                yield _event(task_id, fields)
                return
            seq = int(fields["seq"])
            if seq <= at.seq:
                continue
            if seq > at.seq + 1:  # published late or lost: the store has them
                again = await load(key, task_id)
                for event in at.stored(
                    again.log.since(at.seq)[: seq - at.seq - 1] if again else []
                ):
                    yield event
            at.seq = seq
            if fields["event"] != EventName.TASK_COMPLETE:
                yield _event(task_id, fields)

    async def _read(self, stream: str, mark: str, task_id: str) -> list[tuple[str, Any]]:
        """The stream's entries after ``mark`` (waiting a second at most); none while
        Redis fails (retried a second later)."""
        try:  # blocking less than the client's socket timeout
            entries = await self._redis.xread({stream: mark}, count=200, block=_BLOCK_MS)
        except redis_errors() as e:
            logger.warning("following task %s: Redis failed, retrying: %s", task_id, e)
            await asyncio.sleep(1.0)
            return []
        return list(entries[0][1]) if entries else []

    async def publish_end(self, key: CallerKey, task: MAILTask) -> None:
        """Publish the closing event of a task that is not running (a task taken over
        finished: its replica may have died before it published the end)."""
        stream = stream_key(key, task.task_id)
        end = {**_fields(_closing(task)), "end": str(task.state)}
        await self._redis.xadd(stream, end, maxlen=STREAM_MAXLEN, approximate=True)

    async def drain(self) -> None:
        """Publish what is still queued (the replica stops: its runtimes wrote their last
        changes after the publisher was cancelled)."""
        while not self._outbox.empty():
            key, done = self._outbox.get_nowait()
            try:
                await self._publish(key, done)
            except redis_errors() as e:
                logger.warning("replica %s: publishing events failed: %s", self.replica_id, e)

    # --- handing requests over ------------------------------------------------------------

    async def hand_over(
        self, owner: str, kind: str, request: dict[str, Any], timeout: float = HAND_OVER_TIMEOUT
    ) -> dict[str, Any]:
        """Have replica ``owner`` run ``request`` and return its answer; its refusal is
        raised as the HTTP error it would have answered; 503 when it does not answer."""
        reply = f"mail:reply:{uuid.uuid4().hex}"
        message = json.dumps({"kind": kind, "reply": reply, "request": request})
        deadline = time.monotonic() + timeout
        answer = None
        try:
            await self._redis.rpush(_inbox(owner), message)
            while answer is None and time.monotonic() < deadline:
                answer = await self._redis.blpop([reply], timeout=_BLOCK_MS / 1000)
        except redis_errors() as e:
            raise RelayedError(503, f"cannot reach the replica running this task: {e}") from e
        if answer is None:
            raise RelayedError(
                503,
                f"replica {owner}, which runs this task, did not answer within {timeout:.0f}s; "
                "try again (if it stopped, another replica takes the task over)",
            )
        outcome = json.loads(answer[1])
        if "error" in outcome:
            raise RelayedError(outcome["error"]["status"], outcome["error"]["detail"])
        return dict(outcome["answer"])

    async def serve_inbox(self, handle: Handler, status: Callable[[MAILError], int]) -> None:
        """Run the requests handed to this replica until cancelled, each in its own task."""
        running: set[asyncio.Task[None]] = set()
        while True:
            try:
                item = await self._redis.blpop([_inbox(self.replica_id)], timeout=_BLOCK_MS / 1000)
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
