"""The JSON shapes :class:`mail.client.MAILClient` returns, as ``TypedDict``\\s.

They describe what a MAIL server answers (CONTRACT sections 1.5, 8 and 14); the client checks only
that an answer is a JSON object, so a field this server adds is kept and one an older
server omits is missing (``NotRequired`` marks the fields older servers do not send).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "CancelResult",
    "DumpResult",
    "HealthInfo",
    "InterswarmAck",
    "InterswarmReply",
    "InterswarmReplyPayload",
    "InterswarmResponseAck",
    "InterswarmSendResult",
    "LoadResult",
    "MessageAddress",
    "MessageEvent",
    "MessageResult",
    "RegisterResult",
    "ResponsesFunctionCall",
    "ResponsesMessage",
    "ResponsesOutputText",
    "ResponsesResult",
    "RootInfo",
    "RootSwarm",
    "StatusInfo",
    "StatusSwarm",
    "StoredEvent",
    "SwarmEntry",
    "SwarmsList",
    "TaskPage",
    "TaskRecord",
    "WhoAmI",
]


class RootSwarm(TypedDict):
    """The served swarm as ``GET /`` describes it."""

    name: str
    version: str
    description: str
    entrypoint: str
    keywords: list[str]
    public: bool


class RootInfo(TypedDict):
    """``GET /``: the server and its swarm."""

    name: str
    protocol_version: str
    version: NotRequired[str]
    swarm: RootSwarm
    status: str
    uptime: float


class HealthInfo(TypedDict):
    """``GET /health`` and ``POST /health``."""

    status: str
    swarm_name: str
    timestamp: str
    storage: NotRequired[str]  # "ok", or the store's last failure (servers with a store)
    unsaved_tasks: NotRequired[int]  # tasks the store has not got yet (servers with a store)


class WhoAmI(TypedDict):
    """``GET /whoami``: the caller's identity (``username`` repeats ``id``)."""

    id: str
    role: str
    username: NotRequired[str]


class StatusSwarm(TypedDict):
    """The swarm part of :class:`StatusInfo`."""

    name: str | None
    status: str


class StatusInfo(TypedDict):
    """``GET /status``: the caller's runtime on the server."""

    swarm: StatusSwarm
    active_users: int
    user_mail_ready: bool
    user_task_running: bool


class MessageEvent(TypedDict):
    """A stored event in a ``POST /message`` answer (``show_events``); ``data`` is an object
    ``{timestamp, description, task_id, extra_data}`` and ``id`` its sequence number."""

    event: str
    data: dict[str, Any]
    id: str | None
    retry: NotRequired[int | None]
    comment: NotRequired[str | None]


class MessageResult(TypedDict):
    """``POST /message``: the final answer, and the task's events when asked for.

    ``task_id`` and ``status`` (``completed``, ``waiting_breakpoint``, ``failed``,
    ``cancelled``) are sent by this implementation, not by v1.3.6 servers.
    """

    response: str
    events: list[MessageEvent] | None
    task_id: NotRequired[str]
    status: NotRequired[str]


class StoredEvent(TypedDict):
    """An event in a task record; ``data`` is the JSON text of the event's data."""

    event: str
    data: str
    id: str | None
    retry: NotRequired[int | None]
    comment: NotRequired[str | None]


class TaskRecord(TypedDict):
    """``GET /task``, and each value of ``GET /tasks``."""

    task_id: str
    task_owner: str
    task_contributors: list[str]
    start_time: str
    events: NotRequired[list[StoredEvent]]  # left out with events=false
    is_running: bool
    completed: bool
    task_message_queue: list[Any]
    updated_at: NotRequired[str]
    state: NotRequired[str]
    remote_swarms: NotRequired[list[str]]
    title: NotRequired[str | None]
    usage: NotRequired[dict[str, int]]
    #: servers with a store: whether it holds the task as shown (false while it fails)
    stored: NotRequired[bool]


class TaskPage(TypedDict):
    """``GET /tasks?limit=&cursor=``: one page, newest first."""

    tasks: list[TaskRecord]
    next_cursor: str | None


class CancelResult(TypedDict):
    """``POST /tasks/{task_id}/cancel``."""

    task_id: str
    status: str


class SwarmEntry(TypedDict):
    """One public swarm of ``GET /swarms``."""

    swarm_name: str
    base_url: str
    version: str | None
    last_seen: str | None
    is_active: bool
    latency: float | None
    swarm_description: str
    keywords: list[str]
    metadata: dict[str, Any] | None


class SwarmsList(TypedDict):
    """``GET /swarms``."""

    swarms: list[SwarmEntry]


class RegisterResult(TypedDict):
    """``POST /swarms``."""

    status: Literal["registered"]
    swarm_name: str


class DumpResult(TypedDict):
    """``GET /swarms/dump``."""

    status: Literal["dumped"]
    swarm_name: str


class LoadResult(TypedDict):
    """``POST /swarms/load``."""

    status: Literal["success"]
    swarm_name: str


# --- interswarm (CONTRACT 1.5, 8, 14) ----------------------------------------------------------


class MessageAddress(TypedDict):
    """A participant of a MAIL message: ``{"address_type": "agent", "address": "weather@beta"}``."""

    address_type: str
    address: str


class InterswarmReplyPayload(TypedDict):
    """The payload of an :class:`InterswarmReply`: a ``MAILResponse`` (CONTRACT 3.1)."""

    task_id: str
    request_id: str
    sender: MessageAddress
    recipient: MessageAddress
    subject: str
    body: str
    sender_swarm: str | None
    recipient_swarm: str | None
    routing_info: dict[str, Any] | None


class InterswarmReply(TypedDict):
    """A remote agent's answer as protocol 1.1 sends it: a ``MAILMessage`` envelope whose
    ``msg_type`` is ``"response"`` and whose sender is ``agent@<answering swarm>``."""

    id: str
    timestamp: str
    message: InterswarmReplyPayload
    msg_type: str


class InterswarmAck(TypedDict):
    """A protocol 1.3 peer's receipt for work sent to ``/interswarm/forward`` or ``/back``:
    the work is queued in task ``task_id`` of the runtime ``local_runner``
    (``role:id@swarm``) of swarm ``swarm``; the answer comes back later, by itself."""

    swarm: str
    task_id: str
    status: Literal["success"]
    local_runner: str


class InterswarmSendResult(TypedDict):
    """``POST /interswarm/message`` by an admin or user (the proxy send).

    ``response`` is what the peer answered the delivery: an :class:`InterswarmAck` from a
    protocol 1.3 peer (the remote agent's reply then ends the local task ``task_id``;
    follow it with ``task_events``), an :class:`InterswarmReply` from a protocol 1.1 peer.
    ``events`` is always ``None``. ``task_id`` is sent by this implementation, not by v1.3.6
    servers.
    """

    response: InterswarmAck | InterswarmReply
    events: list[Any] | None
    task_id: NotRequired[str]


class InterswarmResponseAck(TypedDict):
    """``POST /interswarm/response`` (protocol 1.1): ``response_processed`` when the answer
    reached a task running here, ``no_mail_instance`` when no task here waits for it."""

    status: Literal["response_processed", "no_mail_instance"]
    task_id: str


# --- POST /responses (debug servers) ----------------------------------------------------------


class ResponsesOutputText(TypedDict):
    """The text of a :class:`ResponsesMessage`."""

    type: Literal["output_text"]
    text: str
    annotations: list[Any]


class ResponsesMessage(TypedDict):
    """An output item of :class:`ResponsesResult`: the swarm's answer."""

    type: Literal["message"]
    id: str
    status: str
    role: Literal["assistant"]
    content: list[ResponsesOutputText]


class ResponsesFunctionCall(TypedDict):
    """An output item of :class:`ResponsesResult`: a breakpoint tool call the task paused
    on; send its result as a ``function_call_output`` input item with this ``call_id``."""

    type: Literal["function_call"]
    id: str | None
    call_id: str
    name: str
    arguments: str  # JSON text
    status: str | None


class ResponsesResult(TypedDict):
    """``POST /responses``: an OpenAI Responses-style ``Response``; ``id`` is the task id
    (pass it back as ``previous_response_id``) and ``model`` the swarm's name. ``output``
    holds one :class:`ResponsesMessage`, or the :class:`ResponsesFunctionCall` items of a
    task paused at a breakpoint."""

    id: str
    object: Literal["response"]
    created_at: int
    model: str
    status: str
    output: list[ResponsesMessage | ResponsesFunctionCall]
    parallel_tool_calls: bool
    tool_choice: str | dict[str, Any]
    tools: list[Any]
