"""``DirectRoute``: the busiest routes hand requests straight to their endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from mail.config import load_config
from mail.errors import InvalidMessageError
from mail.server import _routes_message, create_app
from mail.server._deps import DirectRoute


def test_the_message_routes_are_direct() -> None:
    paths = {r.path: type(r) for r in _routes_message.router.routes}  # type: ignore[attr-defined]
    assert paths == {"/message": DirectRoute, "/chat": DirectRoute, "/ui/message": DirectRoute}


def test_the_message_routes_are_the_apps_own_and_come_first(tmp_path: Path) -> None:
    config = load_config(
        None,
        env={},
        search=False,
        overrides={"server": {"data_dir": str(tmp_path)}, "database": {"persist": False}},
    )
    routes = [r for r in create_app(config).router.routes if type(r).__name__ != "Route"]
    first = routes[:3]
    assert [r.path for r in first] == ["/message", "/chat", "/ui/message"]  # type: ignore[attr-defined]
    assert all(type(r) is DirectRoute for r in first)
    assert not any(isinstance(r, APIRoute) for r in routes[3:])  # the rest: included routers


def test_an_endpoint_that_takes_more_than_the_request_is_refused() -> None:
    router = APIRouter(route_class=DirectRoute)

    with pytest.raises(TypeError, match="takes only the Request"):

        @router.get("/items/{item_id}")
        async def item(request: Request, item_id: int) -> Response:
            return JSONResponse({"id": item_id})


def test_errors_of_a_direct_endpoint_reach_the_apps_handlers() -> None:
    router = APIRouter(route_class=DirectRoute)

    @router.post("/boom")
    async def boom(request: Request) -> Response:
        raise InvalidMessageError("no message provided")

    app = FastAPI()

    async def handler(_request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=400)

    app.add_exception_handler(InvalidMessageError, handler)
    app.include_router(router)
    response = TestClient(app).post("/boom")
    assert response.status_code == 400
    assert response.json() == {"detail": "no message provided"}
