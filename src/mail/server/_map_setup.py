"""MAP Mail's part of the server: the conversation service over the task store's
database, the interceptor that records bound tasks' turns, and the events it makes them
from."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from mail.core import stored_events

if TYPE_CHECKING:
    from mail.core.events import MAILEvent
    from mail.db.store import CallerKey
    from mail.server._state import ServerState

__all__ = ["open_conversations"]


def open_conversations(state: ServerState) -> None:
    """MAP Mail's service over the task store's database (in memory without a store)."""
    from mail.conversations import (  # noqa: PLC0415
        ConversationService,
        StatusFollower,
        conversation_store_for,
        summarizer_for,
    )
    from mail.conversations.interception import Interceptor  # noqa: PLC0415

    settings = state.config.server.map
    state.conversations = ConversationService(
        conversation_store_for(state.store),
        bus=state.map_events,
        enabled=settings.enabled,
        max_thread_depth=settings.max_thread_depth,
        summarizer=summarizer_for(settings),
    )
    agents = state.map_agents
    state.conversations.principal_of = lambda pid: agents.principal_of(state.template, pid)
    if settings.enabled:
        memory = state.conversations.store.backend == "memory"  # events die with the process
        state.interceptor = Interceptor(
            state.conversations, functools.partial(_task_events, state), eager=memory
        )
        state.interceptor.start()
        state.map_status = StatusFollower.over(state.conversations, state.interceptor.bound)
        state.map_status.start()


async def _task_events(
    state: ServerState, key: CallerKey, task_id: str, after: int
) -> list[MAILEvent]:
    """The events of the caller ``key``'s task after seq ``after``, for MAP Mail's
    catch-ups: its runtime's when it holds the task (in cluster mode, those the store
    committed), else the store's (the whole task is read: its messages are stored once, in
    the event that first carried them)."""
    swarm = state.swarms.lookup(key.role, key.id)
    task = swarm.get_task_by_id(task_id) if swarm is not None else None
    if task is not None:
        events = task.log.since(after)
        committed = task.log.committed_seq
        return events if committed is None else [e for e in events if (e.seq or 0) <= committed]
    store = state.store
    if store is None or not await store.load_events(key, task_id, after, limit=1):
        return []  # (one cheap read when there is nothing new, as for a finished task)
    return [e for e in await stored_events(store, key, task_id) if (e.seq or 0) > after]
