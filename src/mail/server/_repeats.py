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

A repeat is answered from the turn it repeats (:meth:`Tasks.send
<mail.server._tasks.Tasks.send>`): the JSON answer once that turn ended (and is stored),
or a stream of the task's events from where that turn started, then live. This works
across replicas: the turn another replica runs is followed there.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from mail._limits import TASK_ID_RULE, task_id_problem
from mail.core.tasks import MAILTask, TurnRequest
from mail.errors import InvalidMessageError, TaskStateError

if TYPE_CHECKING:
    from mail.server.models import MessageRequest

__all__ = ["IDEMPOTENCY_HEADER", "repeats", "turn_request"]

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


def repeats(task: MAILTask, resume_from: str | None, asked: TurnRequest) -> bool:
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
