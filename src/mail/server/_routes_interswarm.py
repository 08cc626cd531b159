"""``/interswarm/*``: peers deliver work here, callers send work to peers (CONTRACT 1.5, 8, 14).

* ``POST /interswarm/forward`` and ``/interswarm/back`` (role ``agent``, protocol 1.3):
  ``{"message": MAILInterswarmMessage}``, validated before anything is queued, answered
  with an acknowledgement once queued. A forward runs in the runtime of the calling peer
  (``swarm:<token id>@<local>``); a back message in the runtime of the task's local
  contributor.
* ``POST /interswarm/message``: for ``admin``/``user``, a proxy send to a remote agent
  (delivered to the peer's ``/interswarm/forward``, never to this server); for
  ``agent``, the synchronous exchange of protocol 1.1 (a bare message in, the answer out,
  or its events with ``metadata.stream``).
* ``POST /interswarm/send`` (1.1 name of the proxy send; waits for the reply) and
  ``POST /interswarm/response`` (1.1: a peer's answer for a task running here).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from mail.api import MAILSwarm
from mail.core.events import EventName, MAILEvent
from mail.core.message import (
    MAILInterswarmMessage,
    MAILMessage,
    create_address,
    create_agent_address,
    make_broadcast,
    make_request,
    make_response,
    new_task_id,
    parse_agent_address,
    parse_task_contributor,
    validate_interswarm_message,
    validate_message,
)
from mail.core.tasks import MAILTask
from mail.errors import (
    AuthenticationError,
    InvalidMessageError,
    RemoteSwarmUnavailableError,
    TaskNotFoundError,
    TaskTimeoutError,
)
from mail.net.router import legacy_task_owner
from mail.server._deps import as_str, caller_with, read_json, state_of
from mail.server._sse import event_response
from mail.server._state import ServerState
from mail.server.auth import Caller
from mail.server.models import ERROR_RESPONSES, body_schema

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)
agent_only = caller_with("agent")
admin_or_user = caller_with("admin", "user")
any_caller = caller_with("admin", "user", "agent")

#: role in a ``role:id@swarm`` contributor -> role of the caller whose runtime it is
_RUNTIME_ROLES = {"admin": "admin", "user": "user", "swarm": "agent", "agent": "agent"}
_SENDABLE = ("request", "broadcast")
_PING_SECONDS = 15.0


# --- documentation models ---------------------------------------------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class InterswarmMessageBody(_Open):
    """A ``MAILInterswarmMessage`` (``spec/MAIL-interswarm.schema.json``)."""

    model_config = ConfigDict(defer_build=True)  # documents a request body only
    message_id: str
    source_swarm: str
    target_swarm: str
    timestamp: str
    payload: dict[str, Any] = Field(description="The inner MAIL payload (not the envelope)")
    msg_type: Literal["request", "response", "broadcast", "interrupt"]
    auth_token: str | None = None
    task_owner: str = Field(description="role:id@swarm")
    task_contributors: list[str] = Field(description="role:id@swarm of each contributor")
    metadata: dict[str, Any] | None = None


class InterswarmEnvelope(BaseModel):
    """``POST /interswarm/forward`` and ``/interswarm/back``."""

    model_config = ConfigDict(defer_build=True)  # documents a request body only
    message: InterswarmMessageBody


class InterswarmAck(_Open):
    swarm: str
    task_id: str
    status: Literal["success"]
    local_runner: str = Field(description="role:id@swarm of the runtime that took the message")


class InterswarmSendRequest(_Open):
    """A proxy send (admin/user); agents send a bare ``MAILInterswarmMessage`` instead."""

    model_config = ConfigDict(defer_build=True)  # documents a request body only
    user_token: str = Field(description="Required by protocol 1.3 clients; not forwarded")
    targets: list[str] = Field(description="agent@swarm addresses, all in one remote swarm")
    body: str
    subject: str = "Interswarm Message"
    msg_type: Literal["request", "broadcast"] = "request"
    task_id: str | None = None
    routing_info: dict[str, Any] | None = None
    stream: bool | None = None
    ignore_stream_pings: bool | None = None
    message: str | None = Field(None, description="Protocol 1.1 name of body")
    target_agent: str | None = Field(None, description="Protocol 1.1: one target")


class InterswarmSendResponse(_Open):
    response: Any = Field(description="The peer's answer (a MAILMessage for /interswarm/send)")
    events: list[dict[str, Any]] | None = None
    task_id: str


class LegacyResponseAck(_Open):
    status: Literal["response_processed", "no_mail_instance"]
    task_id: str


class MAILMessageBody(_Open):
    """A ``MAILMessage`` envelope (``spec/MAIL-core.schema.json``)."""

    id: str
    timestamp: str
    message: dict[str, Any]
    msg_type: str


# --- protocol 1.3: forward and back -------------------------------------------------------


def _validated(message: Any) -> MAILInterswarmMessage:
    try:
        return validate_interswarm_message(message)
    except InvalidMessageError as e:
        raise InvalidMessageError(f"invalid interswarm message: {e}") from e


async def _envelope_message(request: Request) -> MAILInterswarmMessage:
    data = await read_json(request)
    message = data.get("message")
    if not message:
        raise InvalidMessageError("parameter 'message' is required")
    return _validated(message)


def _ack(state: ServerState, swarm: MAILSwarm, task: MAILTask) -> dict[str, Any]:
    return {
        "swarm": state.registry.local_swarm_name,
        "task_id": task.task_id,
        "status": "success",
        "local_runner": swarm.runtime.this_owner,
    }


@router.post(
    "/interswarm/forward",
    response_model=InterswarmAck,
    summary="A peer swarm starts or continues a task here (protocol 1.3)",
    openapi_extra=body_schema(InterswarmEnvelope),
)
async def forward(request: Request, caller: Caller = Depends(agent_only)) -> dict[str, Any]:
    state = state_of(request)
    message = await _envelope_message(request)
    swarm = await state.swarms.get(caller)
    return _ack(state, swarm, swarm.runtime.receive_interswarm(message, "forward"))


def _contributor_swarm(state: ServerState, message: MAILInterswarmMessage) -> MAILSwarm:
    """The runtime of the task's first local contributor that holds the task."""
    local = state.registry.local_swarm_name
    task_id = message["payload"]["task_id"]
    for contributor in message["task_contributors"]:
        role, caller_id, swarm_name = parse_task_contributor(contributor)
        if swarm_name != local:
            continue
        runtime_role = _RUNTIME_ROLES.get(role)
        if runtime_role is None:
            raise InvalidMessageError(f"invalid role: {role}", field="task_contributors")
        found = state.swarms.lookup(runtime_role, caller_id)
        if found is not None and task_id in found.runtime.tasks:
            return found
    raise TaskNotFoundError(task_id)


@router.post(
    "/interswarm/back",
    response_model=InterswarmAck,
    summary="A peer swarm returns work for a task that runs here (protocol 1.3)",
    openapi_extra=body_schema(InterswarmEnvelope),
)
async def back(request: Request, _caller: Caller = Depends(agent_only)) -> dict[str, Any]:
    state = state_of(request)
    message = await _envelope_message(request)
    swarm = _contributor_swarm(state, message)
    return _ack(state, swarm, swarm.runtime.receive_interswarm(message, "back"))


# --- proxy send (admin/user) --------------------------------------------------------------


class _ProxySend:
    """A proxy-send body, checked field by field with the protocol's error texts."""

    def __init__(self, data: dict[str, Any]) -> None:
        token = data.get("user_token")
        if not isinstance(token, str) or not token:
            raise AuthenticationError("user token is required")
        targets = data.get("targets")
        if targets is None and isinstance(data.get("target_agent"), str):
            targets = [data["target_agent"]]
        body = data.get("body", data.get("message"))
        if not targets or body is None or body == "":
            raise InvalidMessageError("'targets' and 'body' are required")
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise InvalidMessageError("targets must be a list of agent@swarm addresses")
        msg_type = data.get("msg_type") or "request"
        if msg_type not in _SENDABLE:
            raise InvalidMessageError(f"msg_type '{msg_type}' is not supported for interswarm send")
        if msg_type == "request" and len(targets) != 1:
            raise InvalidMessageError("'request' messages require exactly one target")
        routing = data.get("routing_info") or {}
        if not isinstance(routing, dict):
            raise InvalidMessageError("routing_info must be an object")
        for flag in ("stream", "ignore_stream_pings"):
            if data.get(flag) is not None:
                routing[flag] = data[flag]
        task_id = data.get("task_id")
        self.targets: list[str] = targets
        self.body = body if isinstance(body, str) else str(body)
        self.subject = as_str(data, "subject") or "Interswarm Message"
        self.msg_type: str = msg_type
        self.task_id = task_id if isinstance(task_id, str) and task_id.strip() else new_task_id()
        self.routing_info: dict[str, Any] = routing

    def target_swarm(self, state: ServerState) -> str:
        local = state.registry.local_swarm_name
        swarms: set[str] = set()
        for target in self.targets:
            _, swarm = parse_agent_address(target)
            if swarm is None or swarm == local:
                raise InvalidMessageError(
                    f"target '{target}' is not in a remote swarm; write agent@swarm"
                )
            swarms.add(swarm)
        if len(swarms) != 1:
            raise InvalidMessageError("all targets must be in one swarm")
        swarm = swarms.pop()
        if state.registry.get_swarm_endpoint(swarm) is None:
            raise InvalidMessageError(f"swarm '{swarm}' is not registered (see POST /swarms)")
        return swarm

    def message(self, caller: Caller) -> MAILMessage:
        sender = create_address(caller.id, "admin" if caller.role == "admin" else "user")
        if self.msg_type == "request":
            return make_request(
                task_id=self.task_id,
                sender=sender,
                recipient=create_agent_address(self.targets[0]),
                subject=self.subject,
                body=self.body,
                routing_info=self.routing_info,
            )
        return make_broadcast(
            task_id=self.task_id,
            sender=sender,
            recipients=[create_agent_address(t) for t in self.targets],
            subject=self.subject,
            body=self.body,
            routing_info=self.routing_info,
        )


async def _proxy_send(
    state: ServerState, caller: Caller, data: dict[str, Any], *, wait: bool
) -> Response:
    send = _ProxySend(data)
    swarm = await state.swarms.get(caller)
    runtime = swarm.runtime
    if not runtime.enable_interswarm:
        raise InvalidMessageError(f"interswarm messaging is not enabled in swarm {swarm.name}")
    target = send.target_swarm(state)
    task = runtime.open_remote_task(send.task_id, target)
    try:
        answer = await state.router.deliver(runtime, task, send.message(caller), target)
    except RemoteSwarmUnavailableError as e:
        runtime.end_task(task.task_id, str(e), failed=True)
        raise
    if wait:  # protocol 1.1: the answer is the reply the remote agent sends back
        timeout = state.config.server.settings.task_timeout
        try:
            answer = await asyncio.wait_for(task.wait_turn(), timeout)
        except TimeoutError:
            runtime.end_task(task.task_id, "no reply from the remote swarm", failed=True)
            raise TaskTimeoutError(f"no reply within {timeout:g} s") from None
    return JSONResponse({"response": answer, "events": None, "task_id": task.task_id})


@router.post(
    "/interswarm/message",
    response_model=InterswarmSendResponse | MAILMessageBody,
    summary="Send to a remote agent (admin/user), or a protocol 1.1 peer's message (agent)",
    response_description="admin/user: the peer's acknowledgement; agent (protocol 1.1): the "
    "answer as a MAILMessage, or its events with metadata.stream",
    openapi_extra=body_schema(InterswarmSendRequest),
)
async def interswarm_message(request: Request, caller: Caller = Depends(any_caller)) -> Response:
    state = state_of(request)
    data = await read_json(request)
    if caller.role == "agent":
        return await _legacy_exchange(state, caller, data)
    return await _proxy_send(state, caller, data, wait=False)


@router.post(
    "/interswarm/send",
    response_model=InterswarmSendResponse,
    summary="Send to a remote agent and wait for its reply (protocol 1.1 name)",
    openapi_extra=body_schema(InterswarmSendRequest),
)
async def interswarm_send(request: Request, caller: Caller = Depends(admin_or_user)) -> Response:
    state = state_of(request)
    return await _proxy_send(state, caller, await read_json(request), wait=True)


# --- protocol 1.1: synchronous exchange, answers -----------------------------------------


def _legacy_message(data: dict[str, Any]) -> MAILInterswarmMessage:
    if "payload" not in data:
        raise InvalidMessageError(
            "agents send a MAILInterswarmMessage here (protocol 1.1); "
            "protocol 1.3 peers use /interswarm/forward"
        )
    message = dict(data)
    source = message.get("source_swarm")
    if isinstance(source, str) and source and "task_owner" not in message:
        message["task_owner"] = legacy_task_owner(source)
    if "task_contributors" not in message and isinstance(message.get("task_owner"), str):
        message["task_contributors"] = [message["task_owner"]]
    return _validated(message)


def _reply(answer: MAILMessage, inbound: MAILInterswarmMessage, local: str) -> MAILMessage:
    """The 1.1 answer: a response from the answering agent to the original sender."""
    payload = answer["message"]
    name, _ = parse_agent_address(payload["sender"]["address"])
    return make_response(
        task_id=payload["task_id"],
        sender=create_agent_address(f"{name}@{local}"),
        recipient=inbound["payload"]["sender"],
        subject=payload["subject"],
        body=payload["body"],
        sender_swarm=local,
        recipient_swarm=inbound["source_swarm"],
    )


async def _legacy_exchange(state: ServerState, caller: Caller, data: dict[str, Any]) -> Response:
    inbound = _legacy_message(data)
    runtime = (await state.swarms.get(caller)).runtime
    task = runtime.receive_interswarm(inbound, "forward")
    reply = state.router.expect_reply(runtime, task.task_id, inbound["source_swarm"])
    turn = task.wait_turn()
    local = state.registry.local_swarm_name

    def answered() -> MAILMessage:
        state.router.forget_reply(runtime, task.task_id)
        turn.cancel()
        found = reply.result() if reply.done() and not reply.cancelled() else turn.result()
        runtime.end_task(task.task_id, found["message"]["body"])  # one request, one answer
        return _reply(found, inbound, local)

    def abandon() -> None:  # the peer went away before the answer: stop waiting for it
        state.router.forget_reply(runtime, task.task_id)
        turn.cancel()

    metadata = inbound.get("metadata") or {}
    if metadata.get("stream"):
        pings = not metadata.get("ignore_stream_pings")
        return event_response(_legacy_events(task, reply, turn, answered, abandon, pings))
    timeout = state.config.server.settings.task_timeout
    done, _ = await asyncio.wait({reply, turn}, timeout=timeout, return_when="FIRST_COMPLETED")
    if not done:
        state.router.forget_reply(runtime, task.task_id)
        turn.cancel()
        runtime.end_task(task.task_id, "the task timed out", failed=True)
        raise TaskTimeoutError(f"no answer within {timeout:g} s")
    return JSONResponse(answered())


async def _legacy_events(
    task: MAILTask,
    reply: asyncio.Future[MAILMessage],
    turn: asyncio.Future[MAILMessage],
    answered: Callable[[], MAILMessage],
    abandon: Callable[[], None],
    pings: bool,
) -> AsyncIterator[MAILEvent]:
    def over() -> bool:
        return reply.done() or turn.done()

    try:
        async for event in task.log.follow(0, heartbeat=_PING_SECONDS, until=over):
            if pings or event.event != EventName.PING:
                yield event
        body = answered()["message"]["body"]
    finally:
        abandon()
    yield MAILEvent.stream_final(EventName.TASK_COMPLETE, task.task_id, body)


@router.post(
    "/interswarm/response",
    response_model=LegacyResponseAck,
    summary="A protocol 1.1 peer's answer for a task running here",
    openapi_extra=body_schema(MAILMessageBody),
)
async def interswarm_response(
    request: Request, _caller: Caller = Depends(agent_only)
) -> dict[str, Any]:
    state = state_of(request)
    try:
        message = validate_message(await read_json(request))
    except InvalidMessageError as e:
        raise InvalidMessageError(f"invalid MAIL message: {e}") from e
    payload = message["message"]
    task_id = payload["task_id"]
    source = payload.get("sender_swarm") or parse_agent_address(payload["sender"]["address"])[1]
    if not source:
        raise InvalidMessageError(
            "the sender's swarm is unknown: set sender_swarm or write the sender as agent@swarm"
        )
    for swarm in state.swarms.holding(task_id):
        task = swarm.runtime.tasks.get(task_id)
        if task is not None and task.is_running and source in task.remote_swarms:
            state.router.queue_answer(swarm.runtime, task, message, source)
            return {"status": "response_processed", "task_id": task_id}
    return {"status": "no_mail_instance", "task_id": task_id}
