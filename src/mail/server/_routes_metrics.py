"""``GET /metrics``: the server's metrics in the Prometheus text format (admin)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from mail.server._deps import Admin, AppState
from mail.server.models import ERROR_RESPONSES

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)

_OFF = (
    "metrics are off: set [server.metrics] enabled = true in mail.toml "
    "(or MAIL_METRICS=1) and install mail-swarms[metrics]"
)


@router.get(
    "/metrics",
    response_class=Response,
    summary="Metrics in the Prometheus text format",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def get_metrics(state: AppState, _caller: Admin) -> Response:
    """This server's (replica's) metrics, for Prometheus to scrape with an admin key;
    404 while ``[server.metrics]`` is off. docs/observability.md lists them."""
    metrics = state.metrics
    if metrics is None:
        raise HTTPException(status_code=404, detail=_OFF)
    return Response(metrics.exposition(), media_type=metrics.content_type)
