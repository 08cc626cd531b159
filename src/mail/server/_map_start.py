"""``mail/create`` with ``startTask``: a conversation whose initial turn starts a task.

``params.startTask`` (``true``, or ``{"entrypoint": name}``) with an ``initialTurn`` of
type ``text`` sends the turn's text into the caller's swarm as ``POST /message`` would
(to the entrypoint, as the caller; ``subject`` is the message's subject), in a new task
(``taskId`` if given: it must not exist yet) bound to the new conversation. The initial
turn is the intercepted turn of that message. It answers, as ``map/send`` does, when the
task's first turn ended: ``{conversation, participant, initialTurn, task{taskId,
response, status}}``; the conversation's status then follows the task's.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pydantic import ValidationError

from mail.conversations import (
    Actor,
    InvalidParamsError,
    MailProtocolError,
    opt_str,
    parse_params,
    turn_of,
)
from mail.conversations.errors import MailNotEnabledError
from mail.core.message import new_task_id
from mail.errors import MAILError
from mail.server._routes_message import send_message
from mail.server._state import ServerState
from mail.server._statuses import server_status
from mail.server.auth import Caller
from mail.server.models import MessageRequest

__all__ = ["TaskNotStartedError", "create_with_task"]

#: how long the answer waits for the initial turn and the status to be written
_SETTLE = 5.0


class TaskNotStartedError(MailProtocolError):
    """The task of a ``mail/create`` with ``startTask`` was refused as ``POST /message``
    would refuse it (``data.status``: that HTTP status); the conversation is ``failed``."""

    code = -32000
    name = "TASK_NOT_STARTED"


def _first_message(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The initial turn's text and its ``meta.mail``-like extras (``visibility``)."""
    turn = params.get("initialTurn")
    if not isinstance(turn, dict):
        raise InvalidParamsError(
            "params.initialTurn: startTask needs an initialTurn", field="initialTurn"
        )
    if turn.get("contentType") != "text":
        raise InvalidParamsError(
            'params.initialTurn.contentType: must be "text" to start a task',
            field="initialTurn.contentType",
        )
    content = turn.get("content")
    text = content.get("text") if isinstance(content, dict) else content
    if not isinstance(text, str) or not text.strip():
        raise InvalidParamsError(
            "params.initialTurn.content: must have text, a non-empty string, to start a task",
            field="initialTurn.content",
        )
    for name in ("threadId", "inReplyTo"):
        if turn.get(name) is not None:
            raise InvalidParamsError(
                f"params.initialTurn.{name}: a new conversation's first turn has none",
                field=f"initialTurn.{name}",
            )
    extras = {"visibility": turn["visibility"]} if turn.get("visibility") else {}
    return text, extras


def _message(params: dict[str, Any], text: str, task_id: str) -> MessageRequest:
    start = params["startTask"]  # true or {"entrypoint": name}: checked by the params model
    options = start if isinstance(start, dict) else {}
    payload = {
        "body": text,
        "subject": opt_str(params, "subject") or "New Message",
        "task_id": task_id,
        "entrypoint": options.get("entrypoint"),
        "stream": False,
        "show_events": False,
    }
    try:
        return MessageRequest.model_validate(payload)
    except ValidationError as e:
        raise InvalidParamsError(
            "params.startTask: does not make a valid message: "
            + "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()),
            field="startTask",
        ) from e


async def create_with_task(
    state: ServerState, caller: Caller, actor: Actor, params: dict[str, Any]
) -> dict[str, Any]:
    """``mail/create`` with ``startTask`` (see the module docstring). Raises the MAP Mail
    errors (-32602 for bad params, 10010 when mail is off) and
    :class:`TaskNotStartedError`."""
    service, interceptor = state.conversations, state.interceptor
    if service is None or interceptor is None or not service.enabled:
        raise MailNotEnabledError("MAP Mail is not enabled on this server")
    parse_params("mail/create", params)
    text, extras = _first_message(params)
    task_id = opt_str(params, "taskId") or new_task_id()
    request = _message(params, text, task_id)
    async with state.swarms.hold(caller) as swarm:
        if swarm.get_task_by_id(task_id) is not None:
            raise InvalidParamsError(
                f"params.taskId: task {task_id!r} already exists: to bind it, create without startTask",
                field="taskId",
            )
    rest = {k: v for k, v in params.items() if k not in ("startTask", "initialTurn")}
    created = await service.call("mail/create", actor, {**rest, "taskId": task_id})
    cid = created["conversation"]["id"]
    if extras:
        interceptor.expect(actor.key, task_id, cid, extras)
    try:
        answer = await send_message(state, caller, request)
    except MAILError as e:
        conv = await service.store.get(actor.key, cid, "conversation", cid)
        if conv is not None:
            await service.close_as(actor, conv, "failed", f"the task did not start: {e}")
        raise TaskNotStartedError(str(e), status=server_status(e), conversationId=cid) from e
    finally:
        interceptor.forget(actor.key, task_id)
    with contextlib.suppress(TimeoutError):  # late turns or statuses: the answer is not
        await asyncio.wait_for(interceptor.drain(), timeout=_SETTLE)
        if state.map_status is not None:
            await asyncio.wait_for(state.map_status.drain(), timeout=_SETTLE)
    if not isinstance(answer, dict):
        raise TaskNotStartedError("the server is shutting down", status=503, conversationId=cid)
    conv = await service.store.get(actor.key, cid, "conversation", cid)
    if conv is not None:
        await interceptor.catch_up(actor.key, conv)  # done by drain() when someone listens
    turns = await service.store.list_records(actor.key, "turn", cid)
    mine = [turn_of(t) for t in turns if t.data["participantId"] == actor.participant_id]
    return {
        **created,
        "conversation": (
            await service.shown(actor.key, conv) if conv is not None else created["conversation"]
        ),
        "initialTurn": mine[0] if mine else None,
        "task": {"taskId": task_id, "response": answer["response"], "status": answer["status"]},
    }
