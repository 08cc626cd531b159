"""Routes about the server and its swarm: ``/``, ``/health``, ``/whoami``, ``/status``, ``/swarms``."""

from __future__ import annotations

import copy
import logging
from typing import Any

from fastapi import APIRouter

from mail.api import MAILSwarmTemplate
from mail.core import cached_mail_tool_spec
from mail.errors import ConfigurationError, MAILError, SwarmDefinitionError
from mail.server._deps import Admin, AdminOrUser, AppState
from mail.server._routing import StrictJSONRoute
from mail.server._state import ServerState
from mail.server.models import (
    ERROR_RESPONSES,
    DumpResponse,
    HealthResponse,
    HealthUpdate,
    JSONBody,
    LoadSwarmRequest,
    LoadSwarmResponse,
    RegisterSwarmRequest,
    RegisterSwarmResponse,
    RootResponse,
    StatusResponse,
    SwarmsResponse,
    WhoamiResponse,
)
from mail.swarms_json.references import ReferencePolicy
from mail.version import PROTOCOL_VERSION

__all__ = ["breakpoint_tool_specs", "router"]

logger = logging.getLogger("mail.server")
router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)


def breakpoint_tool_specs(template: MAILSwarmTemplate) -> list[dict[str, Any]]:
    """The swarm's breakpoint tools as agents are offered them: ``name``, ``description``
    and the JSON Schema of their ``parameters`` (strict mode)."""
    actions = {a.name: a for a in template.actions}
    specs: list[dict[str, Any]] = []
    for name in template.breakpoint_tools:
        action = actions.get(name)
        if action is not None:
            spec = action.to_tool_dict("responses")
        else:  # a MAIL tool (checked when the swarm was built)
            spec = copy.deepcopy(cached_mail_tool_spec(name, "responses", (), False))
        specs.append(
            {
                "name": name,
                "description": spec.get("description") or "",
                "parameters": spec["parameters"],
            }
        )
    return specs


@router.get("/", response_model=RootResponse, summary="Server and swarm information")
async def root(state: AppState) -> dict[str, Any]:
    template = state.template
    return {
        "name": "mail",
        "protocol_version": PROTOCOL_VERSION,
        "version": PROTOCOL_VERSION,
        "swarm": {
            "name": template.name,
            "version": template.version,
            "description": template.description,
            "entrypoint": template.entrypoint,
            "keywords": template.keywords,
            "public": template.public,
            "breakpoint_tools": breakpoint_tool_specs(template),
        },
        "status": "running",
        "uptime": state.uptime,
    }


async def _health(state: ServerState) -> dict[str, Any]:
    health: dict[str, Any] = {
        "status": state.health,
        "swarm_name": state.template.name,
        "timestamp": state.health_updated.isoformat(),
    }
    storage = await state.storage_status()
    if storage is not None:
        health["storage"] = storage
        health["unsaved_tasks"] = state.swarms.unsaved_tasks()
        if storage != "ok" and health["status"] == "healthy":
            health["status"] = "degraded"
    health.update(state.tasks.health())
    return health


@router.get(
    "/health",
    response_model=HealthResponse,
    response_model_exclude_none=True,
    summary="Health probe",
)
async def get_health(state: AppState) -> dict[str, Any]:
    """The server's status and when it last changed (``timestamp``: the start, or the
    last ``POST /health``); with a task store, ``storage`` says whether writes work
    (``"ok"`` or the last failure: a write, a prune, the database), ``unsaved_tasks`` how
    many tasks have changes not stored yet, and ``status`` is ``degraded`` while writes
    fail. In cluster mode ``replica_id`` names the replica that answered and
    ``owned_tasks`` counts the unfinished tasks it runs."""
    return await _health(state)


@router.post(
    "/health",
    response_model=HealthResponse,
    response_model_exclude_none=True,
    summary="Set the health status (at most 256 characters); answers as GET /health does",
)
async def post_health(
    state: AppState, _caller: Admin, body: JSONBody[HealthUpdate]
) -> dict[str, Any]:
    state.set_health(body.status)
    return await _health(state)


@router.get("/whoami", response_model=WhoamiResponse, summary="Who the caller is")
async def whoami(caller: AdminOrUser) -> dict[str, Any]:
    return {"id": caller.id, "role": caller.role, "username": caller.id}


@router.get("/status", response_model=StatusResponse, summary="The caller's runtime status")
async def status(state: AppState, caller: AdminOrUser) -> dict[str, Any]:
    swarm = state.swarms.find(caller)
    return {
        "swarm": {"name": state.template.name, "status": "ready"},
        "active_users": state.swarms.count("user"),
        "user_mail_ready": swarm is not None,
        "user_task_running": swarm is not None and swarm.runtime.is_running,
    }


# --- swarms -------------------------------------------------------------------------------


@router.get("/swarms", response_model=SwarmsResponse, summary="Public swarms known to this server")
async def list_swarms(state: AppState) -> dict[str, Any]:
    registry = state.registry
    return {"swarms": [e.to_public_dict() for e in registry.get_public_endpoints().values()]}


class SwarmNameTakenError(MAILError):
    """A peer registered under the server's own swarm name (answered 409)."""


async def _register(state: ServerState, peer: RegisterSwarmRequest) -> dict[str, Any]:
    if peer.peer_name == state.registry.local_swarm_name:
        raise SwarmNameTakenError(
            f"'{peer.peer_name}' is this server's own swarm; register peers under their names"
        )
    await state.registry.register_swarm(
        peer.peer_name,
        peer.peer_url,
        auth_token=peer.auth_token or None,
        metadata=peer.metadata,
        volatile=peer.volatile is not False,
    )
    return {"status": "registered", "swarm_name": peer.peer_name}


@router.post("/swarms", response_model=RegisterSwarmResponse, summary="Register a remote swarm")
async def register_swarm(
    state: AppState, _caller: Admin, body: JSONBody[RegisterSwarmRequest]
) -> dict[str, Any]:
    return await _register(state, body)


@router.post(
    "/swarms/register",
    response_model=RegisterSwarmResponse,
    summary="Register a remote swarm (protocol 1.1 name)",
)
async def register_swarm_alias(
    state: AppState, _caller: Admin, body: JSONBody[RegisterSwarmRequest]
) -> dict[str, Any]:
    return await _register(state, body)


@router.get(
    "/swarms/dump", response_model=DumpResponse, summary="Log the loaded swarm's definition"
)
async def dump_swarm(state: AppState, _caller: Admin) -> dict[str, Any]:
    template = state.template
    logger.info("swarm %s: agents %s", template.name, ", ".join(template.agent_names))
    return {"status": "dumped", "swarm_name": template.name}


@router.post(
    "/swarms/load",
    response_model=LoadSwarmResponse,
    summary="Replace the swarm used for new callers",
)
async def load_swarm(
    state: AppState, _caller: Admin, body: JSONBody[LoadSwarmRequest]
) -> dict[str, Any]:
    # A definition sent over HTTP may only name what our own modules define, and may not
    # fetch URLs (read_untrusted_python_string).
    policy = ReferencePolicy.restricted()
    try:
        template = MAILSwarmTemplate.from_swarm_json(
            body.json_text, state.config.server.settings.task_message_limit, policy=policy
        )
        template.validate()  # a swarm that cannot be instantiated is refused here
    except SwarmDefinitionError as e:
        raise SwarmDefinitionError(f"error loading swarm from JSON: {e}") from e
    try:
        await template.start_mcp()  # its MCP servers (url ones only: see the policy)
    except ConfigurationError as e:
        raise SwarmDefinitionError(f"error loading swarm from JSON: {e}") from e
    state.replaced.append(state.template)
    state.template = template
    state.registry.register_local_swarm(
        description=template.description, keywords=template.keywords, public=template.public
    )
    return {"status": "success", "swarm_name": template.name}
