"""Request and response bodies of the HTTP API.

The request models are what the routes validate their JSON bodies with and what the OpenAPI
document describes. A validator that raises ``ValueError`` writes the whole ``detail`` of
the 400 answer, naming its field (see ``mail.server._app``'s validation handler, which
renders pydantic's own errors as ``<field> is required``, ``<field> must be a string, got
int`` and so on).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, Self, TypeVar
from urllib.parse import urlsplit

from fastapi import Body
from fastapi.exceptions import RequestValidationError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from mail._limits import (
    NAME_PATTERN,
    NAME_RULE,
    TASK_ID_MAX,
    TASK_ID_PATTERN,
    TASK_ID_RULE,
    name_problem,
)
from mail.core.message import MAIL_MESSAGE_TYPES

__all__ = [
    "JsonRpcRequest",
    "JsonRpcResponse",
    "DumpResponse",
    "ERROR_RESPONSES",
    "EVENT_STREAM",
    "ErrorResponse",
    "HealthResponse",
    "HealthUpdate",
    "JSONBody",
    "LoadSwarmRequest",
    "LoadSwarmResponse",
    "BudgetRequest",
    "MessageRequest",
    "MessageResponse",
    "PATTERN_RULES",
    "RegisterSwarmRequest",
    "RegisterSwarmResponse",
    "RequestModel",
    "RootResponse",
    "RootSwarm",
    "BreakpointTool",
    "StatusResponse",
    "TaskId",
    "SwarmEntry",
    "SwarmsResponse",
    "TaskQuery",
    "UIAgentsResponse",
    "WhoamiResponse",
    "not_an_object",
    "validated",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class RequestModel(BaseModel):
    """A JSON request body: no coercion (``"yes"`` is not ``true``), unknown keys ignored,
    no ``NaN`` or infinite numbers (the body's parser refuses them already)."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False)


#: A task id in a body, query or path: 1-256 characters without control characters.
TaskId = Annotated[str, StringConstraints(max_length=TASK_ID_MAX, pattern=TASK_ID_PATTERN)]
#: What the patterns above mean, for the validation errors that name them.
PATTERN_RULES = {TASK_ID_PATTERN: TASK_ID_RULE, NAME_PATTERN: NAME_RULE}
#: The longest health status ``POST /health`` takes.
HEALTH_STATUS_MAX = 256


_T = TypeVar("_T")
#: A route's JSON request body of type ``_T`` (``body: JSONBody[MessageRequest]``). An empty
#: body is read as ``{}``: the model's own rules say what is missing.
JSONBody = Annotated[_T, Body(default_factory=dict, validate_default=True)]


def not_an_object(value: Any) -> str:
    """The ``detail`` for a request body that is JSON but not an object."""
    return f"error parsing request: expected a JSON object, got {type(value).__name__}"


_M = TypeVar("_M", bound=BaseModel)


def validated(model: type[_M], body: Any) -> _M:
    """``body`` validated by ``model`` in the route, for a body whose shape depends on the
    caller: a failure is answered as the body's validation by FastAPI would be."""
    try:
        return model.model_validate(body)
    except ValidationError as e:
        problems = [{**problem, "loc": ("body", *problem["loc"])} for problem in e.errors()]
        raise RequestValidationError(problems, body=body) from None


class ErrorResponse(BaseModel):
    """Every error answer: `{"detail": "what went wrong"}`; a task's answer held back
    until the store has it (503, with `Retry-After`) also names the task."""

    detail: str
    task_id: str | None = Field(
        default=None, description="The task whose answer is held back (503 only)"
    )


_ERROR_CONTENT = {"application/json": {"schema": ErrorResponse.model_json_schema()}}
#: Error answers every route may give (documented once per router; always JSON, also on
#: routes that answer with server-sent events).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {
        "description": "Bad input (400), missing, malformed or wrong-role API key (401), "
        "unknown task or route (404), request body too large (413)",
        "content": _ERROR_CONTENT,
    },
    "5XX": {
        "description": "Internal error or the auth service failed (500), a peer failed "
        "(502, 504), the store failed (503)",
        "content": _ERROR_CONTENT,
    },
}

#: The ``text/event-stream`` content of a streaming answer; as before OpenAPI 3.2, ``schema``
#: describes one event.
EVENT_STREAM: dict[str, Any] = {
    "text/event-stream": {
        "schema": {
            "type": "object",
            "description": "One server-sent event: for stored events `id: <sequence number>` "
            "(for `Last-Event-ID`), then `event: <name>` and one compact JSON `data:` line; "
            "every line ends with CRLF. The stream ends with `task_complete` or `task_error` "
            "(no `id`; data `{timestamp, task_id, response, status}`, plus `usage` when models "
            "reported tokens, `budget` (limits, spent, remaining) when the task has one, and `seq` and `timestamp` of the stored event that ended the "
            "turn, for which it stands); `ping` events keep it alive; `token_delta` events (no `id`, never "
            "stored) carry the text of streaming models as it is written.",
            "required": ["event", "data"],
            "properties": {
                "event": {"type": "string", "examples": ["new_message", "task_complete"]},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {
                        "type": "object",
                        "required": ["timestamp", "task_id"],
                        "properties": {
                            "timestamp": {"type": "string"},
                            "task_id": {"type": "string"},
                            "description": {"type": "string"},
                            "extra_data": {"type": "object"},
                            "response": {"type": "string"},
                            "seq": {"type": "integer", "minimum": 1},
                            "status": {
                                "type": "string",
                                "enum": [
                                    "completed",
                                    "waiting_breakpoint",
                                    "failed",
                                    "cancelled",
                                ],
                            },
                            "usage": {
                                "type": "object",
                                "additionalProperties": {"type": "integer"},
                            },
                            "agent": {"type": "string"},
                            "kind": {"type": "string", "enum": ["text", "reasoning", "answer"]},
                            "delta": {"type": "string"},
                            "call_id": {"type": "string"},
                        },
                    },
                },
                "id": {"type": "string", "pattern": "^[0-9]+$"},
            },
        }
    }
}


class BreakpointTool(_Model):
    name: str
    description: str
    parameters: dict[str, Any] = Field(description="The JSON Schema of the tool's arguments")


class RootSwarm(_Model):
    name: str
    version: str
    description: str
    entrypoint: str
    keywords: list[str]
    public: bool
    breakpoint_tools: list[BreakpointTool] = Field(
        description="The tools that pause a task for the caller to answer (`[]` when none)"
    )


class RootResponse(_Model):
    name: Literal["mail"] = "mail"
    protocol_version: str
    version: str = Field(description="Same as protocol_version, for clients of protocol 1.1")
    swarm: RootSwarm
    status: Literal["running"] = "running"
    uptime: float


class HealthResponse(_Model):
    status: str
    swarm_name: str
    timestamp: str = Field(
        description="When the status last changed (ISO-8601 UTC): the server's start until "
        "an admin POSTs /health; not the time of this answer"
    )
    storage: str | None = Field(
        default=None, description='The task store: "ok" or why writes fail (absent without one)'
    )
    unsaved_tasks: int | None = Field(
        default=None,
        description="Tasks with changes the store has not got yet (absent without a store)",
    )
    replica_id: str | None = Field(
        default=None,
        description="This replica's id in cluster mode ([server.cluster]; absent otherwise)",
    )
    owned_tasks: int | None = Field(
        default=None,
        description="Unfinished tasks (running or paused) this replica runs (cluster mode only)",
    )


class WhoamiResponse(_Model):
    id: str
    role: str
    username: str = Field(description="Same as id, for clients of protocol 1.1")


class StatusSwarm(_Model):
    name: str | None
    status: str


class StatusResponse(_Model):
    swarm: StatusSwarm
    active_users: int
    user_mail_ready: bool
    user_task_running: bool


class MessageResponse(_Model):
    response: str = Field(description="The final answer, or what went wrong")
    events: list[dict[str, Any]] | None
    task_id: str
    status: str = Field(description="completed, waiting_breakpoint, failed or cancelled")


class SwarmEntry(_Model):
    swarm_name: str
    base_url: str
    version: str | None
    last_seen: str | None
    is_active: bool
    latency: float | None
    swarm_description: str
    keywords: list[str]
    metadata: dict[str, Any] | None


class SwarmsResponse(_Model):
    swarms: list[SwarmEntry]


class RegisterSwarmResponse(_Model):
    status: Literal["registered"]
    swarm_name: str


class DumpResponse(_Model):
    status: Literal["dumped"]
    swarm_name: str


class LoadSwarmResponse(_Model):
    status: Literal["success"]
    swarm_name: str


class UIAction(_Model):
    name: str
    description: str


class UIAgent(_Model):
    name: str
    comm_targets: list[str]
    enable_entrypoint: bool
    can_complete_tasks: bool
    enable_interswarm: bool
    actions: list[UIAction] = Field(default_factory=list, description="The agent's actions")
    prompt: str | None = Field(
        None, description="The agent's system prompt: told to admins only, else null"
    )


class UIAgentsResponse(_Model):
    agents: list[UIAgent]
    entrypoint: str
    breakpoint_tools: list[BreakpointTool]


# --- request bodies ---------------------------------------------------------------------------


class HealthUpdate(RequestModel):
    """``POST /health``: the new health status."""

    status: str = Field(
        description="Any non-blank text; peers read `healthy`", max_length=HEALTH_STATUS_MAX
    )

    @field_validator("status", mode="before")
    @classmethod
    def _given(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError("status is required")
        return value


_SENDABLE = ("request", "broadcast")
_RESUMABLE = ("user_response", "breakpoint_tool_call")
#: kwargs the route interprets itself or that would collide with named arguments
_RESERVED_KWARGS = frozenset(
    {
        "body",
        "subject",
        "msg_type",
        "entrypoint",
        "task_id",
        "resume_from",
        "show_events",
        "stream",
        "message",
        "ping_interval",
        "budget",
    }
)


class BudgetRequest(RequestModel):
    """A task's budget: limits it may not spend past (each at most the swarm's; absent:
    the swarm's). See docs/budgets.md."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid")

    input_tokens: int | None = Field(None, ge=0, description="Input (prompt) tokens")
    output_tokens: int | None = Field(None, ge=0, description="Output (completion) tokens")
    total_tokens: int | None = Field(None, ge=0, description="Input plus output tokens")
    cost_usd: float | None = Field(
        None, ge=0, description="USD, from the models' prices (mail.toml or LiteLLM's table)"
    )
    agent_turns: int | None = Field(None, ge=0, description="Agent turns (agent function calls)")
    actions: int | None = Field(None, ge=0, description="Action calls")
    seconds: float | None = Field(None, ge=0, description="Seconds the task runs")
    warn_at: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Tell the supervisor to finish once this fraction of a limit is spent",
    )

    @field_validator("cost_usd", "seconds", "warn_at", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        # strict mode takes no int for a float: 10 seconds is 10.0
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class MessageRequest(RequestModel):
    """``POST /message`` (and ``/chat``, ``/ui/message``): send a message to the swarm, as a
    new task or a follow-up."""

    body: str | None = Field(
        None, description="The message; required unless resuming from a breakpoint"
    )
    message: str | None = Field(None, description="Protocol 0.1 name of `body`")
    subject: str | None = Field(None, description="Default: `New Message`")
    msg_type: Literal["request", "broadcast"] = "request"
    entrypoint: str | None = Field(
        None, description="An agent with enable_entrypoint; default: the swarm's"
    )
    task_id: TaskId | None = Field(
        None, description="Omit (or send an empty string) for a new task; give it to continue one"
    )
    resume_from: Literal["user_response", "breakpoint_tool_call"] | None = None
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="breakpoint_tool_call_result, breakpoint_tool_caller, max_steps, timeout (seconds)",
    )
    show_events: bool | None = Field(
        None,
        description="Include the task's events in the answer (default: false; /ui/message: true)",
    )
    stream: bool | None = Field(
        None, description="Answer with server-sent events (default: false; /ui/message: true)"
    )
    budget: BudgetRequest | None = Field(
        None,
        description="Limits of this task, each at most the swarm's (a higher one is a 400 "
        "naming the ceiling); on a follow-up they lower the task's. See docs/budgets.md",
    )

    @field_validator("msg_type", mode="before")
    @classmethod
    def _sendable(cls, value: Any) -> Any:
        if not value:
            return "request"
        if not isinstance(value, str):
            raise ValueError(f"msg_type must be a string, got {type(value).__name__}")  # noqa: TRY004  # what pydantic reports
        if value not in MAIL_MESSAGE_TYPES:
            raise ValueError(f"invalid message type: {value}")
        if value not in _SENDABLE:
            raise ValueError(
                f"msg_type '{value}' cannot be sent to /message; use request or broadcast"
            )
        return value

    @field_validator("entrypoint")
    @classmethod
    def _stripped(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("task_id", mode="before")
    @classmethod
    def _task(cls, value: Any) -> Any:
        # a blank string asks for a new task (CONTRACT 5); other types are refused
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("resume_from", mode="before")
    @classmethod
    def _resumable(cls, value: Any) -> Any:
        if value is not None and value not in _RESUMABLE:
            raise ValueError(
                "resume_from must be 'user_response', 'breakpoint_tool_call' or null, "
                f"got {json.dumps(value)}"
            )
        return value

    @field_validator("kwargs", mode="before")
    @classmethod
    def _absent_is_empty(cls, value: Any) -> Any:
        return value or {}

    @field_validator("kwargs")
    @classmethod
    def _kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(_RESERVED_KWARGS.intersection(value))
        if clash:
            raise ValueError(
                f"kwargs may not contain {', '.join(clash)}: send them as top-level fields"
            )
        timeout = value.get("timeout")
        if "timeout" in value and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(
                f"kwargs.timeout must be a positive number of seconds, got {json.dumps(timeout)}"
            )
        return value

    @model_validator(mode="after")
    def _has_text(self) -> Self:
        if not self.text and self.resume_from != "breakpoint_tool_call":
            raise ValueError("no message provided")
        return self

    @property
    def text(self) -> str:
        """The message: ``body``, or its protocol 0.1 name ``message``."""
        return self.body or self.message or ""


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class RegisterSwarmRequest(RequestModel):
    """``POST /swarms``: register a remote swarm (``name`` and ``base_url`` are required)."""

    name: str | None = Field(
        None, description=f"The peer's name: {NAME_RULE}", examples=["weather-swarm"]
    )
    swarm_name: str | None = Field(None, description="Protocol 1.1 name of `name`")
    base_url: str | None = Field(
        None,
        description="The peer's http(s) base URL; its `GET /` is read to register it",
        examples=["http://localhost:8001"],
    )
    auth_token: str | None = None
    volatile: bool | None = Field(None, description="Forget the peer at shutdown (default: true)")
    metadata: dict[str, Any] | None = None

    @field_validator("metadata", mode="before")
    @classmethod
    def _object(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, dict):
            raise ValueError("metadata must be an object")
        return value

    @model_validator(mode="after")
    def _peer(self) -> Self:
        if not self.peer_name or not self.peer_url:
            raise ValueError("name and base_url are required")
        problem = name_problem(self.peer_name)
        if problem is not None:
            raise ValueError(f"name {problem}")
        if not _is_http_url(self.peer_url):
            raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        return self

    @property
    def peer_name(self) -> str:
        return (self.name or self.swarm_name or "").strip()

    @property
    def peer_url(self) -> str:
        """``base_url`` without surrounding spaces and trailing slashes."""
        return (self.base_url or "").strip().rstrip("/")


class LoadSwarmRequest(RequestModel):
    """``POST /swarms/load``: the swarm new callers get."""

    json_text: str = Field(alias="json", description="The JSON text of one swarm object")

    @model_validator(mode="before")
    @classmethod
    def _text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            text = data.get("json")
            if not isinstance(text, str) or not text.strip():
                raise ValueError("json is required: the JSON text of one swarm object")
        return data


class TaskQuery(RequestModel):
    """``GET /task``'s optional body (protocol 1.3 sends the task id this way)."""

    task_id: TaskId | None = None

    @field_validator("task_id", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError("task_id must be a string")
        return value


class CancelResponse(_Model):
    """``POST /tasks/{task_id}/cancel``: the task is cancelled (and stored as such)."""

    task_id: str
    status: Literal["cancelled"]


#: The largest page of ``GET /tasks``.
TASKS_PAGE_MAX = 1000


class JsonRpcRequest(BaseModel):
    """One JSON-RPC 2.0 request of ``POST /map`` (a batch is a list of them)."""

    jsonrpc: Literal["2.0"]
    id: str | int | None = None
    method: str = Field(description="map/connect, map/subscribe, map/unsubscribe or mail/*")
    params: dict[str, Any] | None = None


class JsonRpcError(BaseModel):
    """A JSON-RPC error: -32700/-32600/-32601/-32602/-32603, or MAP Mail's 10000-10010."""

    code: int
    message: str
    data: Any = None


class JsonRpcResponse(BaseModel):
    """One JSON-RPC 2.0 response: ``result`` or ``error``."""

    jsonrpc: Literal["2.0"]
    id: str | int | None
    result: Any = None
    error: JsonRpcError | None = None
