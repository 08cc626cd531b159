"""``POST /keys``: an admin creates an API key (embedded and cluster modes)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from mail.errors import InvalidMessageError
from mail.server._auth_types import KeyIssuer, Role
from mail.server._deps import Admin, AppState
from mail.server._routing import StrictJSONRoute
from mail.server.models import ERROR_RESPONSES, JSONBody, RequestModel, _Model

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)


class CreateKeyRequest(RequestModel):
    """``POST /keys``: the role and id of the new key."""

    role: Role = Field(description="What the key may do: admin, user or agent (a peer swarm)")
    id: str = Field(
        min_length=1, max_length=200, description="Who holds it (the caller id of its tasks)"
    )


class CreateKeyResponse(_Model):
    role: str
    id: str
    key: str = Field(description="The new API key; shown once, the server keeps only its hash")


@router.post(
    "/keys",
    response_model=CreateKeyResponse,
    status_code=201,
    summary="Create an API key (admin)",
)
async def create_key(
    state: AppState, _caller: Admin, body: JSONBody[CreateKeyRequest]
) -> dict[str, Any]:
    """A new API key for ``role`` and ``id``. With embedded auth it is added to the
    credentials file; in cluster mode to the database, so every replica accepts it at
    once. Remote auth manages its keys itself: 400."""
    issuer = state.authenticator
    if not isinstance(issuer, KeyIssuer):
        raise InvalidMessageError(
            "this server does not create API keys (with remote auth, the auth service does)"
        )
    key = await issuer.create_key(body.role, body.id)
    return {"role": body.role, "id": body.id, "key": key}
