"""Request and response bodies of the HTTP API, as documented in the OpenAPI description.

Request bodies are read by the routes themselves so that bad input gets the protocol's
error texts; these models describe them for clients and for ``spec/openapi.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

__all__ = [
    "DumpResponse",
    "ERROR_RESPONSES",
    "EVENT_STREAM",
    "ErrorResponse",
    "HealthResponse",
    "HealthUpdate",
    "LoadSwarmRequest",
    "LoadSwarmResponse",
    "MessageRequest",
    "MessageResponse",
    "RegisterSwarmRequest",
    "RegisterSwarmResponse",
    "RootResponse",
    "RootSwarm",
    "StatusResponse",
    "SwarmEntry",
    "SwarmsResponse",
    "TaskQuery",
    "UIAgentsResponse",
    "WhoamiResponse",
    "body_schema",
    "expand_body_schemas",
]


#: Config of the models that only document a request body (see :func:`body_schema`): their
#: validators are built if ever needed, not at import.
_DOC_ONLY = ConfigDict(defer_build=True)


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorResponse(BaseModel):
    """Every error answer: `{"detail": "what went wrong"}`."""

    detail: str


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
            "(data `{timestamp, task_id, response}`); `ping` events keep it alive.",
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
                        },
                    },
                },
                "id": {"type": "string", "pattern": "^[0-9]+$"},
            },
        }
    }
}


class RootSwarm(_Model):
    name: str
    version: str
    description: str
    entrypoint: str
    keywords: list[str]
    public: bool


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
    timestamp: str
    storage: str | None = Field(
        default=None, description='The task store: "ok" or why writes fail (absent without one)'
    )
    unsaved_tasks: int | None = Field(
        default=None,
        description="Tasks with changes the store has not got yet (absent without a store)",
    )


class HealthUpdate(BaseModel):
    model_config = _DOC_ONLY

    status: str = Field(min_length=1)


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


class MessageRequest(BaseModel):
    """``POST /message``: send a message to the swarm (a new task or a follow-up)."""

    model_config = _DOC_ONLY
    body: str = Field("", description="The message; required unless resuming from a breakpoint")
    subject: str = Field("New Message")
    msg_type: Literal["request", "broadcast"] = Field("request")
    entrypoint: str | None = Field(
        None, description="An agent with enable_entrypoint; default: the swarm's"
    )
    task_id: str | None = Field(None, description="Omit for a new task; give it to continue one")
    resume_from: Literal["user_response", "breakpoint_tool_call"] | None = None
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="breakpoint_tool_call_result, breakpoint_tool_caller, max_steps, timeout (seconds)",
    )
    show_events: bool = Field(False, description="Include the task's events in the answer")
    stream: bool = Field(False, description="Answer with server-sent events")


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


class RegisterSwarmRequest(BaseModel):
    model_config = _DOC_ONLY

    name: str = Field(min_length=1)
    base_url: str = Field(
        min_length=1,
        description="The peer's http(s) base URL; its `GET /` is read to register it",
        examples=["http://localhost:8001"],
    )
    auth_token: str | None = None
    volatile: bool = True
    metadata: dict[str, Any] | None = None


class RegisterSwarmResponse(_Model):
    status: Literal["registered"]
    swarm_name: str


class DumpResponse(_Model):
    status: Literal["dumped"]
    swarm_name: str


class LoadSwarmRequest(BaseModel):
    model_config = _DOC_ONLY

    json_text: str = Field(alias="json", description="The JSON text of one swarm object")


class LoadSwarmResponse(_Model):
    status: Literal["success"]
    swarm_name: str


class TaskQuery(BaseModel):
    model_config = _DOC_ONLY

    task_id: str


class UIAgent(_Model):
    name: str
    comm_targets: list[str]
    enable_entrypoint: bool
    can_complete_tasks: bool
    enable_interswarm: bool


class UIAgentsResponse(_Model):
    agents: list[UIAgent]
    entrypoint: str


#: ``openapi_extra`` key standing for a request body until the OpenAPI document is built.
_DEFERRED_BODY = "x-mail-deferred-body"


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting ``model`` as a route's JSON request body.

    The schema is written when the OpenAPI document is first built (by
    :func:`expand_body_schemas`, which ``create_app`` runs then), not when the route is
    declared: a JSON schema per body is work that serving requests never needs.
    """
    return {_DEFERRED_BODY: model}


def expand_body_schemas(routes: Iterable[BaseRoute]) -> None:
    """Write the request bodies :func:`body_schema` left in ``routes``' ``openapi_extra``.

    Each dict is rewritten in place, keys in their order: FastAPI hands the same dict to
    the routes it derives when a router is included in an app.
    """
    for route in routes:
        extra = getattr(route, "openapi_extra", None)
        if not extra or _DEFERRED_BODY not in extra:
            continue
        items = list(extra.items())
        extra.clear()
        for key, value in items:
            extra.update(_request_body(value) if key == _DEFERRED_BODY else {key: value})


def _request_body(model: type[BaseModel]) -> dict[str, Any]:
    # Nested models are written in place: in an OpenAPI document a ``#/$defs/...``
    # reference would point at the document's root, not at the body schema.
    schema = model.model_json_schema(by_alias=True)
    definitions: dict[str, Any] = schema.pop("$defs", {})
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _inline(schema, definitions, ())}},
        }
    }


def _inline(node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"recursive model {name} cannot be inlined")
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**_inline(definitions[name], definitions, (*seen, name)), **siblings}
    return {key: _inline(value, definitions, seen) for key, value in node.items()}
