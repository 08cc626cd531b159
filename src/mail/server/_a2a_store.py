"""The A2A façade's task store: the SDK's ``TaskStore`` over our store's records.

Each A2A task is one record of kind ``a2a_task`` of its caller (conversation ``a2a``,
id the A2A task id, bound to the MAIL task it ran a turn of), holding the task in its
protobuf encoding (base64): the SDK's JSON encoding costs tens of times more, on every
event of a turn. The records live where MAP Mail's do, in the task store's database (SQLite,
PostgreSQL, or memory without a store): A2A tasks survive a restart and every replica of
a cluster reads the same ones. ``ListTasks`` reads the caller's records and pages them
with the SDK's own in-memory store.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task

from mail.conversations.store import ConversationStore, Record, RecordKind
from mail.db.store import CallerKey
from mail.server.auth import Caller

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["CALLER", "RecordTaskStore", "caller_of"]

#: where the call context keeps the authenticated :class:`Caller`
CALLER = "mail_caller"
_KIND: RecordKind = "a2a_task"
_SPACE = "a2a"


def caller_of(context: ServerCallContext) -> Caller:
    """The caller the request was authenticated as (every A2A route authenticates)."""
    caller = context.state.get(CALLER)
    if not isinstance(caller, Caller):  # pragma: no cover  # the routes set it
        raise TypeError("the A2A call context has no authenticated caller")
    return caller


class RecordTaskStore(TaskStore):
    """A2A tasks as records of ``records()`` (the conversation store, opened with the
    task store), per caller of swarm ``swarm``."""

    def __init__(self, records: Callable[[], ConversationStore], swarm: str) -> None:
        self._records = records
        self._swarm = swarm
        #: brings each task read up to date (the request handler's); ``None``: as stored
        self.catch_up: Callable[[Task, ServerCallContext], Awaitable[Task]] | None = None

    async def _read(self, record: Record, context: ServerCallContext) -> Task:
        task = _task(record)
        return task if self.catch_up is None else await self.catch_up(task, context)

    def _key(self, context: ServerCallContext) -> CallerKey:
        caller = caller_of(context)
        return CallerKey(swarm=self._swarm, role=caller.role, id=caller.id)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        record = Record(
            conversation_id=_SPACE,
            kind=_KIND,
            record_id=task.id,
            seq=0,
            task_id=task.context_id,
            data={"task": base64.b64encode(task.SerializeToString()).decode()},
        )
        await self._records().put(self._key(context), record)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        record = await self._records().get(self._key(context), _SPACE, _KIND, task_id)
        return None if record is None else await self._read(record, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        records = await self._records().list_records(self._key(context), _KIND, _SPACE)
        page = InMemoryTaskStore()
        for record in records:
            await page.save(await self._read(record, context), context)
        return await page.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Not offered: A2A tasks go when the MAIL tasks they belong to are pruned."""
        del task_id, context


def _task(record: Record) -> Task:
    """The A2A task a record holds (its protobuf encoding, in base64)."""
    return Task.FromString(base64.b64decode(record.data["task"]))
