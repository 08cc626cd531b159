"""Routes about the server and its swarm: ``/``, ``/health``, ``/whoami``, ``/status``, ``/swarms``."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request

from mail.api import MAILSwarmTemplate
from mail.errors import InvalidMessageError, SwarmDefinitionError
from mail.server._deps import as_bool, as_str, caller_with, read_json, state_of
from mail.server.auth import Caller
from mail.server.models import (
    ERROR_RESPONSES,
    DumpResponse,
    HealthResponse,
    HealthUpdate,
    LoadSwarmRequest,
    LoadSwarmResponse,
    RegisterSwarmRequest,
    RegisterSwarmResponse,
    RootResponse,
    StatusResponse,
    SwarmsResponse,
    WhoamiResponse,
    body_schema,
)
from mail.utils.parsing import ReferencePolicy
from mail.version import PROTOCOL_VERSION

__all__ = ["router"]

logger = logging.getLogger("mail.server")
router = APIRouter(responses=ERROR_RESPONSES)
#: Modules that ``python::`` references of swarms loaded over HTTP may import.
HTTP_PYTHON_PREFIXES = ("mail.",)
admin = caller_with("admin")
admin_or_user = caller_with("admin", "user")


@router.get("/", response_model=RootResponse, summary="Server and swarm information")
async def root(request: Request) -> dict[str, Any]:
    state = state_of(request)
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
        },
        "status": "running",
        "uptime": state.uptime,
    }


def _health(request: Request) -> dict[str, Any]:
    state = state_of(request)
    return {
        "status": state.health,
        "swarm_name": state.template.name,
        "timestamp": state.health_updated.isoformat(),
    }


@router.get(
    "/health",
    response_model=HealthResponse,
    response_model_exclude_none=True,
    summary="Health probe",
)
async def get_health(request: Request) -> dict[str, Any]:
    """The server's status; with a task store, ``storage`` says whether writes work
    (``"ok"`` or the last failure: a write, a prune, the database), ``unsaved_tasks`` how
    many tasks have changes not stored yet, and ``status`` is ``degraded`` while writes
    fail."""
    health = _health(request)
    state = state_of(request)
    storage = await state.storage_status()
    if storage is not None:
        health["storage"] = storage
        health["unsaved_tasks"] = state.swarms.unsaved_tasks()
        if storage != "ok" and health["status"] == "healthy":
            health["status"] = "degraded"
    return health


@router.post(
    "/health",
    response_model=HealthResponse,
    summary="Set the health status",
    openapi_extra=body_schema(HealthUpdate),
)
async def post_health(request: Request, _caller: Caller = Depends(admin)) -> dict[str, Any]:
    data = await read_json(request)
    status = as_str(data, "status")
    if not status.strip():
        raise InvalidMessageError("status is required")
    state_of(request).set_health(status)
    return _health(request)


@router.get("/whoami", response_model=WhoamiResponse, summary="Who the caller is")
async def whoami(caller: Caller = Depends(admin_or_user)) -> dict[str, Any]:
    return {"id": caller.id, "role": caller.role, "username": caller.id}


@router.get("/status", response_model=StatusResponse, summary="The caller's runtime status")
async def status(request: Request, caller: Caller = Depends(admin_or_user)) -> dict[str, Any]:
    state = state_of(request)
    swarm = state.swarms.find(caller)
    return {
        "swarm": {"name": state.template.name, "status": "ready"},
        "active_users": state.swarms.count("user"),
        "user_mail_ready": swarm is not None,
        "user_task_running": swarm is not None and swarm.runtime.is_running,
    }


# --- swarms -------------------------------------------------------------------------------


@router.get("/swarms", response_model=SwarmsResponse, summary="Public swarms known to this server")
async def list_swarms(request: Request) -> dict[str, Any]:
    registry = state_of(request).registry
    return {"swarms": [e.to_public_dict() for e in registry.get_public_endpoints().values()]}


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


async def _register(request: Request) -> dict[str, Any]:
    data = await read_json(request)
    name = as_str(data, "name") or as_str(data, "swarm_name")
    base_url = as_str(data, "base_url")
    if not name.strip() or not base_url.strip():
        raise InvalidMessageError("name and base_url are required")
    if not _is_http_url(base_url.strip()):
        raise InvalidMessageError(f"base_url must be an http(s) URL, got {base_url!r}")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidMessageError("metadata must be an object")
    await state_of(request).registry.register_swarm(
        name.strip(),
        base_url.strip().rstrip("/"),
        auth_token=as_str(data, "auth_token") or None,
        metadata=metadata,
        volatile=as_bool(data, "volatile", True),
    )
    return {"status": "registered", "swarm_name": name.strip()}


@router.post(
    "/swarms",
    response_model=RegisterSwarmResponse,
    summary="Register a remote swarm",
    openapi_extra=body_schema(RegisterSwarmRequest),
)
async def register_swarm(request: Request, _caller: Caller = Depends(admin)) -> dict[str, Any]:
    return await _register(request)


@router.post(
    "/swarms/register",
    response_model=RegisterSwarmResponse,
    summary="Register a remote swarm (protocol 1.1 name)",
    openapi_extra=body_schema(RegisterSwarmRequest),
)
async def register_swarm_alias(
    request: Request, _caller: Caller = Depends(admin)
) -> dict[str, Any]:
    return await _register(request)


@router.get(
    "/swarms/dump", response_model=DumpResponse, summary="Log the loaded swarm's definition"
)
async def dump_swarm(request: Request, _caller: Caller = Depends(admin)) -> dict[str, Any]:
    template = state_of(request).template
    logger.info("swarm %s: agents %s", template.name, ", ".join(template.agent_names))
    return {"status": "dumped", "swarm_name": template.name}


@router.post(
    "/swarms/load",
    response_model=LoadSwarmResponse,
    summary="Replace the swarm used for new callers",
    openapi_extra=body_schema(LoadSwarmRequest),
)
async def load_swarm(request: Request, _caller: Caller = Depends(admin)) -> dict[str, Any]:
    data = await read_json(request)
    text = data.get("json")
    if not isinstance(text, str) or not text.strip():
        raise InvalidMessageError("json is required: the JSON text of one swarm object")
    state = state_of(request)
    # A definition sent over HTTP may only import our own modules and may not fetch URLs.
    policy = ReferencePolicy.restricted(HTTP_PYTHON_PREFIXES)
    try:
        template = MAILSwarmTemplate.from_swarm_json(
            text, state.config.server.settings.task_message_limit, policy=policy
        )
        template.validate()  # a swarm that cannot be instantiated is refused here
    except SwarmDefinitionError as e:
        raise SwarmDefinitionError(f"error loading swarm from JSON: {e}") from e
    state.template = template
    state.registry.register_local_swarm(
        description=template.description, keywords=template.keywords, public=template.public
    )
    return {"status": "success", "swarm_name": template.name}
