"""``/interswarm/*``: peers deliver work here, callers send work to peers (CONTRACT 1.5, 8, 14).

* ``POST /interswarm/forward`` and ``/interswarm/back`` (role ``agent``, protocol 1.3):
  ``{"message": MAILInterswarmMessage}``, validated before anything is queued, answered
  with an acknowledgement once the task service queued it (:mod:`mail.server._tasks`;
  on replicas, the one running the task takes it).
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
from typing import Annotated, Any, Literal, Self, cast

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, field_validator, model_validator

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
    validate_interswarm_message,
    validate_message,
)
from mail.core.tasks import MAILTask
from mail.errors import (
    AuthenticationError,
    InvalidMessageError,
    RemoteSwarmUnavailableError,
    TaskTimeoutError,
)
from mail.net.router import legacy_task_owner
from mail.server._deps import AdminOrUser, Agent, AnyCaller, AppState
from mail.server._routing import StrictJSONRoute
from mail.server._sse import event_response
from mail.server._state import ServerState
from mail.server.auth import Caller
from mail.server.models import (
    ERROR_RESPONSES,
    JSONBody,
    RequestModel,
    TaskId,
    not_an_object,
    validated,
)

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)

_SENDABLE = ("request", "broadcast")
_PING_SECONDS = 15.0


# --- bodies -------------------------------------------------------------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class InterswarmMessageBody(_Open):
    """A ``MAILInterswarmMessage`` (``spec/MAIL-interswarm.schema.json``)."""

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


class MAILMessageBody(_Open):
    """A ``MAILMessage`` envelope (``spec/MAIL-core.schema.json``)."""

    id: str
    timestamp: str
    message: dict[str, Any]
    msg_type: str


def _interswarm_message(value: Any) -> MAILInterswarmMessage:
    try:
        return validate_interswarm_message(value)
    except InvalidMessageError as e:
        raise ValueError(f"invalid interswarm message: {e}") from None


def _mail_message(value: Any) -> MAILMessage:
    if not isinstance(value, dict):
        raise ValueError(not_an_object(value))  # noqa: TRY004  # what pydantic reports
    try:
        return validate_message(value)
    except InvalidMessageError as e:
        raise ValueError(f"invalid MAIL message: {e}") from None


# The protocol's messages are checked by its own validators (mail.core.message), which name
# the offending field; the models above describe them in the OpenAPI document. (Typed as
# plain dicts: pydantic cannot build schemas of typing.TypedDict on Python 3.11.)
_InterswarmMessage = Annotated[
    dict[str, Any],
    PlainValidator(_interswarm_message, json_schema_input_type=InterswarmMessageBody),
]
_MAILMessage = Annotated[
    dict[str, Any], PlainValidator(_mail_message, json_schema_input_type=MAILMessageBody)
]


class InterswarmEnvelope(RequestModel):
    """``POST /interswarm/forward`` and ``/interswarm/back``."""

    message: _InterswarmMessage

    @model_validator(mode="before")
    @classmethod
    def _given(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("message"):
            raise ValueError("parameter 'message' is required")
        return data

    @property
    def interswarm(self) -> MAILInterswarmMessage:
        return cast(MAILInterswarmMessage, self.message)


class InterswarmSendRequest(RequestModel):
    """A proxy send (admin/user): ``user_token``, ``targets`` and ``body`` are required."""

    user_token: str = Field(description="The caller's key, as protocol 1.3 sends it; not forwarded")
    targets: list[str] | None = Field(
        None, description="agent@swarm addresses, all in one remote swarm"
    )
    body: str | None = Field(None, description="The message (other JSON values are sent as text)")
    subject: str | None = Field(None, description="Default: `Interswarm Message`")
    msg_type: Literal["request", "broadcast"] = "request"
    task_id: TaskId | None = None
    routing_info: dict[str, Any] | None = None
    stream: bool | None = None
    ignore_stream_pings: bool | None = None
    message: str | None = Field(None, description="Protocol 1.1 name of body")
    target_agent: str | None = Field(None, description="Protocol 1.1: one target")

    @model_validator(mode="before")
    @classmethod
    def _token(cls, data: Any) -> Any:
        # a credential: without it the request is refused as unauthenticated, before the
        # rest of the body is looked at (AuthenticationError passes through pydantic)
        if isinstance(data, dict):
            token = data.get("user_token")
            if not isinstance(token, str) or not token:
                raise AuthenticationError("user token is required")
        return data

    @field_validator("targets", mode="before")
    @classmethod
    def _addresses(cls, value: Any) -> Any:
        if value and (not isinstance(value, list) or not all(isinstance(t, str) for t in value)):
            raise ValueError("targets must be a list of agent@swarm addresses")
        return value or None

    @field_validator("body", "message", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return value if value is None or isinstance(value, str) else str(value)

    @field_validator("msg_type", mode="before")
    @classmethod
    def _sendable(cls, value: Any) -> Any:
        if value and value not in _SENDABLE:
            raise ValueError(f"msg_type '{value}' is not supported for interswarm send")
        return value or "request"

    @field_validator("task_id", mode="before")
    @classmethod
    def _task(cls, value: Any) -> Any:
        # a blank string asks for a new task; other types are refused
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("routing_info", mode="before")
    @classmethod
    def _object(cls, value: Any) -> Any:
        if value and not isinstance(value, dict):
            raise ValueError("routing_info must be an object")
        return value or None

    @model_validator(mode="after")
    def _addressed(self) -> Self:
        if self.targets is None and self.target_agent is not None:
            self.targets = [self.target_agent]
        if not self.targets or not self.text:
            raise ValueError("'targets' and 'body' are required")
        if self.msg_type == "request" and len(self.targets) != 1:
            raise ValueError("'request' messages require exactly one target")
        return self

    @property
    def text(self) -> str:
        return self.body if self.body is not None else self.message or ""

    @property
    def routing(self) -> dict[str, Any]:
        """``routing_info`` with the ``stream`` and ``ignore_stream_pings`` flags in it."""
        routing = dict(self.routing_info or {})
        for flag in ("stream", "ignore_stream_pings"):
            value = getattr(self, flag)
            if value is not None:
                routing[flag] = value
        return routing


def _an_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(not_an_object(value))  # noqa: TRY004  # what pydantic reports
    return value


#: ``POST /interswarm/message``: a proxy send (admin/user), or a protocol 1.1 peer's bare
#: message (agent). Which one depends on the caller's role, so the route validates the
#: object once it knows it.
_InterswarmPost = Annotated[
    dict[str, Any],
    PlainValidator(
        _an_object, json_schema_input_type=InterswarmSendRequest | InterswarmMessageBody
    ),
]


class InterswarmAck(_Open):
    swarm: str
    task_id: str
    status: Literal["success"]
    local_runner: str = Field(description="role:id@swarm of the runtime that took the message")


class InterswarmSendResponse(_Open):
    response: Any = Field(description="The peer's answer (a MAILMessage for /interswarm/send)")
    events: list[dict[str, Any]] | None = None
    task_id: str


class LegacyResponseAck(_Open):
    status: Literal["response_processed", "no_mail_instance"]
    task_id: str


# --- protocol 1.3: forward and back -------------------------------------------------------


@router.post(
    "/interswarm/forward",
    response_model=InterswarmAck,
    summary="A peer swarm starts or continues a task here (protocol 1.3)",
)
async def forward(
    state: AppState, caller: Agent, body: JSONBody[InterswarmEnvelope]
) -> dict[str, Any]:
    state.check_store()  # a peer's task is refused (503) while the store fails
    return await state.tasks.interswarm(caller, body.interswarm, "forward")


@router.post(
    "/interswarm/back",
    response_model=InterswarmAck,
    summary="A peer swarm returns work for a task that runs here (protocol 1.3)",
)
async def back(
    state: AppState, caller: Agent, body: JSONBody[InterswarmEnvelope]
) -> dict[str, Any]:
    return await state.tasks.interswarm(caller, body.interswarm, "back")


# --- proxy send (admin/user) --------------------------------------------------------------


def _target_swarm(state: ServerState, send: InterswarmSendRequest) -> str:
    local = state.registry.local_swarm_name
    swarms: set[str] = set()
    for target in send.targets or ():
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


def _outgoing(send: InterswarmSendRequest, caller: Caller, task_id: str) -> MAILMessage:
    sender = create_address(caller.id, "admin" if caller.role == "admin" else "user")
    targets = send.targets or []
    subject = send.subject or "Interswarm Message"
    if send.msg_type == "request":
        return make_request(
            task_id=task_id,
            sender=sender,
            recipient=create_agent_address(targets[0]),
            subject=subject,
            body=send.text,
            routing_info=send.routing,
        )
    return make_broadcast(
        task_id=task_id,
        sender=sender,
        recipients=[create_agent_address(t) for t in targets],
        subject=subject,
        body=send.text,
        routing_info=send.routing,
    )


async def _proxy_send(
    state: ServerState, caller: Caller, send: InterswarmSendRequest, *, wait: bool
) -> Response:
    state.check_store()
    swarm = await state.swarms.get(caller)
    runtime = swarm.runtime
    if not runtime.enable_interswarm:
        raise InvalidMessageError(f"interswarm messaging is not enabled in swarm {swarm.name}")
    target = _target_swarm(state, send)
    task = runtime.open_remote_task(send.task_id or new_task_id(), target)
    try:
        answer = await state.router.deliver(
            runtime, task, _outgoing(send, caller, task.task_id), target
        )
    except RemoteSwarmUnavailableError as e:
        runtime.remote.end_task(task.task_id, str(e), failed=True)
        raise
    if wait:  # protocol 1.1: the answer is the reply the remote agent sends back
        timeout = state.config.server.settings.task_timeout
        try:
            answer = await asyncio.wait_for(task.wait_turn(), timeout)
        except TimeoutError:
            runtime.remote.end_task(task.task_id, "no reply from the remote swarm", failed=True)
            raise TaskTimeoutError(f"no reply within {timeout:g} s") from None
        await runtime.told(task)  # the task's end is stored before it is told
    return JSONResponse({"response": answer, "events": None, "task_id": task.task_id})


@router.post(
    "/interswarm/message",
    response_model=InterswarmSendResponse | MAILMessageBody,
    summary="Send to a remote agent (admin/user), or a protocol 1.1 peer's message (agent)",
    response_description="admin/user: the peer's acknowledgement; agent (protocol 1.1): the "
    "answer as a MAILMessage, or its events with metadata.stream",
)
async def interswarm_message(
    state: AppState, caller: AnyCaller, body: JSONBody[_InterswarmPost]
) -> Response:
    if caller.role != "agent":
        return await _proxy_send(state, caller, validated(InterswarmSendRequest, body), wait=False)
    if "payload" not in body:
        raise InvalidMessageError(
            "agents send a MAILInterswarmMessage here (protocol 1.1); "
            "protocol 1.3 peers use /interswarm/forward"
        )
    return await _legacy_exchange(state, caller, _legacy_message(body))


@router.post(
    "/interswarm/send",
    response_model=InterswarmSendResponse,
    summary="Send to a remote agent and wait for its reply (protocol 1.1 name)",
)
async def interswarm_send(
    state: AppState,
    caller: AdminOrUser,
    body: JSONBody[InterswarmSendRequest],
) -> Response:
    return await _proxy_send(state, caller, body, wait=True)


# --- protocol 1.1: synchronous exchange, answers -----------------------------------------


def _legacy_message(data: dict[str, Any]) -> MAILInterswarmMessage:
    """A protocol 1.1 peer's message: ``task_owner`` and ``task_contributors`` may be absent."""
    message = dict(data)
    source = message.get("source_swarm")
    if isinstance(source, str) and source and "task_owner" not in message:
        message["task_owner"] = legacy_task_owner(source)
    if "task_contributors" not in message and isinstance(message.get("task_owner"), str):
        message["task_contributors"] = [message["task_owner"]]
    try:
        return validate_interswarm_message(message)
    except InvalidMessageError as e:
        raise InvalidMessageError(f"invalid interswarm message: {e}") from e


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


async def _legacy_exchange(
    state: ServerState, caller: Caller, inbound: MAILInterswarmMessage
) -> Response:
    runtime = (await state.swarms.get(caller)).runtime
    task = runtime.receive_interswarm(inbound, "forward")
    reply = state.router.expect_reply(runtime, task.task_id, inbound["source_swarm"])
    turn = task.wait_turn()
    local = state.registry.local_swarm_name

    def answered() -> MAILMessage:
        state.router.forget_reply(runtime, task.task_id)
        turn.cancel()
        found = reply.result() if reply.done() and not reply.cancelled() else turn.result()
        runtime.remote.end_task(task.task_id, found["message"]["body"])  # one request, one answer
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
        runtime.remote.end_task(task.task_id, "the task timed out", failed=True)
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
        # a peer's stream carries stored events only (no live token deltas)
        follow = task.log.follow(
            0, heartbeat=_PING_SECONDS, until=over, stored_ends=False, live=False
        )
        async for event in follow:
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
)
async def interswarm_response(
    state: AppState, _caller: Agent, body: JSONBody[_MAILMessage]
) -> dict[str, Any]:
    message = cast(MAILMessage, body)
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
