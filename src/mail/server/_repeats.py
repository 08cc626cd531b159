"""Retried requests: a ``POST /message`` repeated is answered as the first one is, never
run a second time (docs/http-api.md, "Retries").

A request's :class:`~mail.core.tasks.TurnRequest` digests what it asks (message and
arguments, not ``stream``, ``show_events`` or the timeout) and carries the client's
``Idempotency-Key``; the runtime keeps it on the task, and the store with its record. A
request **repeats** an earlier one when:

* it starts a task (no ``resume_from``) whose id exists and whose first request asked the
  same: the ``task_id`` is the idempotency key (asked something else: 409, as before);
* it continues a task with the ``Idempotency-Key`` of the request that opened the task's
  current turn (a different request under that key: 409);
* without a key, it continues a task whose current turn, still running, was opened by the
  same request (two identical follow-ups in a row may well be meant: once the turn ended,
  only a key tells a retry from a new one).

A repeat is answered from the turn it repeats: the JSON answer once that turn ended (and
is stored), or a stream of the task's events from where that turn started, then live.
This works across replicas: the turn another replica runs is followed there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Any

from fastapi.responses import Response

from mail._limits import TASK_ID_RULE, task_id_problem
from mail.core.tasks import MAILTask, TurnRequest, turn_status
from mail.errors import InvalidMessageError, StorageError, TaskStateError
from mail.server._follow import answer_from_elsewhere, follow_local, stale
from mail.server._sse import event_response, sse_object

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.server._state import ServerState
    from mail.server.auth import Caller
    from mail.server.models import MessageRequest

__all__ = ["IDEMPOTENCY_HEADER", "repeated", "replay", "turn_request"]

#: The header of a client's own key for one request (an IETF draft's name).
IDEMPOTENCY_HEADER = "Idempotency-Key"


def turn_request(
    request: MessageRequest, subject: str, kwargs: dict[str, Any], key: str | None
) -> TurnRequest:
    """What ``request`` asks, digested, with the client's ``Idempotency-Key`` ``key``
    (``InvalidMessageError`` for a key that is no task id: 1-256 characters, no control
    characters)."""
    if key is not None and task_id_problem(key) is not None:
        raise InvalidMessageError(TASK_ID_RULE, field=f"header.{IDEMPOTENCY_HEADER.lower()}")
    asked = {
        "body": request.text,
        "subject": subject,
        "msg_type": request.msg_type,
        "entrypoint": request.entrypoint,
        "resume_from": request.resume_from,
        "kwargs": kwargs,
    }
    text = json.dumps(asked, sort_keys=True, separators=(",", ":"), default=str)
    return TurnRequest(fingerprint=hashlib.sha256(text.encode()).hexdigest()[:32], key=key)


def _repeats(task: MAILTask, resume_from: str | None, asked: TurnRequest) -> bool:
    """Whether ``asked`` repeats the request that opened ``task``'s turn (see the
    module); raises :class:`TaskStateError` for a key reused for another request."""
    before = task.request
    if before is None:
        return False
    if resume_from is None:
        return before.first == asked.fingerprint
    if asked.key is not None and before.key == asked.key:
        if before.fingerprint != asked.fingerprint:
            raise TaskStateError(
                f"{IDEMPOTENCY_HEADER} {asked.key!r} was sent with another request of task "
                f"'{task.task_id}': send a new key for a new request"
            )
        return True
    return asked.key is None and task.is_running and before.fingerprint == asked.fingerprint


async def repeated(
    state: ServerState,
    caller: Caller,
    swarm: MAILSwarm,
    task_id: str,
    resume_from: str | None,
    asked: TurnRequest,
) -> tuple[MAILTask, bool] | None:
    """The task whose turn ``asked`` repeats, and whether this server runs it (else it
    is the store's copy: another replica runs it, or nobody), or ``None``: a new request.
    A task kept only in the store (it left memory) is loaded to tell."""
    cluster = state.cluster_tasks
    if cluster is not None:
        found = cluster.local(caller, task_id)
        if found is not None:
            return _if_repeats(found[1], True, resume_from, asked)
        copy = await cluster.load(cluster.key(caller), task_id)
        return None if copy is None else _if_repeats(copy, False, resume_from, asked)
    task = swarm.get_task_by_id(task_id)
    if task is None and state.store is not None:
        await _restore(state, swarm, task_id)
        task = swarm.get_task_by_id(task_id)
    return None if task is None else _if_repeats(task, True, resume_from, asked)


async def _restore(state: ServerState, swarm: MAILSwarm, task_id: str) -> None:
    """Load ``task_id`` as the store has it (nothing when it is not there); a store that
    does not answer within ``commit_timeout`` is a 503 (it cannot tell whether the id is
    taken)."""
    bound = state.config.database.commit_timeout
    try:
        async with asyncio.timeout(bound):
            await swarm.runtime.restore(only=[task_id])
    except TimeoutError:
        raise StorageError(
            f"the task store did not answer within {bound:g} s: cannot tell whether task "
            f"'{task_id}' exists; try again",
            retry_after=bound,
        ) from None


def _if_repeats(
    task: MAILTask, here: bool, resume_from: str | None, asked: TurnRequest
) -> tuple[MAILTask, bool] | None:
    return (task, here) if _repeats(task, resume_from, asked) else None


async def replay(
    state: ServerState,
    caller: Caller,
    swarm: MAILSwarm,
    found: tuple[MAILTask, bool],
    *,
    resume_from: str | None,
    stream: bool,
    show_events: bool,
    timeout: float,
) -> dict[str, Any] | Response:
    """The answer of the turn a repeated request repeats: a stream of the task's events
    from where that turn started (a new task's from its start), or the JSON answer once
    it ended and is stored."""
    task, here = found
    start = 0 if resume_from is None or task.request is None else task.request.start
    if not here:  # another replica runs it, or nobody: from the store, then live
        return await answer_from_elsewhere(
            state, caller, task.task_id, start, stream=stream, show_events=show_events
        )
    if stream:
        moved = stale(state, swarm, task.task_id)
        return event_response(follow_local(swarm, task, start, state.ping_interval, moved))
    if task.is_running:
        async with asyncio.timeout(timeout):
            await task.wait_turn()
    await swarm.runtime.told(task)
    response = task.response
    return {
        "response": response["message"]["body"] if response is not None else "",
        "events": [sse_object(e) for e in task.log.all()] if show_events else None,
        "task_id": task.task_id,
        "status": turn_status(task),
    }
