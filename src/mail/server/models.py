"""Request and response bodies of the HTTP API, as documented in the OpenAPI description.

Request bodies are read by the routes themselves so that bad input gets the protocol's
error texts; these models describe them for clients and for ``spec/openapi.yaml``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DumpResponse",
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
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


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


class HealthUpdate(BaseModel):
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
    name: str = Field(min_length=1)
    base_url: str = Field(min_length=1)
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
    json_text: str = Field(alias="json", description="The JSON text of one swarm object")


class LoadSwarmResponse(_Model):
    status: Literal["success"]
    swarm_name: str


class TaskQuery(BaseModel):
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


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting ``model`` as a route's JSON request body."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema(by_alias=True)}},
        }
    }
