"""POST /responses: the swarm behind an OpenAI Responses-style call (debug mode only)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from mail.api import MAILAction, MAILAgentTemplate, MAILSwarmTemplate
from mail.config import load_config
from mail.server import create_app
from mail.testing import ScriptedAgent, StaticAuth, tc

ROOT = Path(__file__).resolve().parents[2]


def swarm_with_breakpoint() -> MAILSwarmTemplate:
    ask = MAILAction(
        "ask_human",
        "Ask the person running the task.",
        {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
        lambda _args: "never called: the caller answers breakpoint tools",
    )
    agent = MAILAgentTemplate(
        "supervisor",
        lambda **_p: ScriptedAgent(
            [
                lambda incoming: tc("ask_human", question=incoming.body),
                tc("task_complete", finish_message="human said yes"),
            ]
        ),
        [],
        [ask],
        {},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    return MAILSwarmTemplate(
        "bp", "1.0.0", [agent], [ask], "supervisor", breakpoint_tools=["ask_human"]
    )


@asynccontextmanager
async def client_for(
    tmp_path: Path, *, debug: bool, template: MAILSwarmTemplate | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    config = load_config(
        ROOT / "mail.toml",
        env={"MAIL_DATA_DIR": str(tmp_path)},
        overrides={"server": {"debug": debug}},
    )
    app = create_app(config, template=template, authenticator=StaticAuth({"k": ("user", "u1")}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers={"Authorization": "Bearer k"}
        ) as client:
            yield client


@pytest.fixture
async def debug_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(tmp_path, debug=True) as client:
        yield client


def decode(response: httpx.Response) -> dict[str, Any]:
    # the body is a JSON string holding the Response JSON, as the reference server sends it
    outer = response.json()
    assert isinstance(outer, str)
    result: dict[str, Any] = json.loads(outer)
    return result


async def test_a_message_and_its_continuation(debug_client: httpx.AsyncClient) -> None:
    first = decode(
        await debug_client.post(
            "/responses", json={"input": [{"role": "user", "content": "what is 2+3?"}], "tools": []}
        )
    )
    assert first["object"] == "response" and first["model"] == "offline"
    assert first["output"][0]["content"][0]["text"] == "2+3 = 5"
    second = decode(
        await debug_client.post(
            "/responses",
            json={
                "input": [
                    {"role": "user", "content": "what is 2+3?"},
                    {"role": "assistant", "content": "2+3 = 5"},
                    {"role": "user", "content": [{"type": "input_text", "text": "and 4*4?"}]},
                ],
                "tools": [],
                "previous_response_id": first["id"],
            },
        )
    )
    # regression: continuing a finished task hung in the reference server
    assert second["id"] == first["id"]
    assert second["output"][0]["content"][0]["text"] == "4*4 = 16"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"tools": []}, "parameter 'input' is required"),
        ({"input": {}, "tools": []}, "parameter 'input' must be a list, got dict"),
        ({"input": []}, "parameter 'tools' is required"),
        (
            {"input": [{"role": "assistant", "content": "x"}], "tools": []},
            "parameter 'input' holds no new user text",
        ),
    ],
)
async def test_bad_requests(
    debug_client: httpx.AsyncClient, body: dict[str, Any], detail: str
) -> None:
    response = await debug_client.post("/responses", json=body)
    assert response.status_code == 400
    assert response.json() == {"detail": detail}


async def test_function_call_outputs_resume_a_breakpoint(tmp_path: Path) -> None:
    async with client_for(tmp_path, debug=True, template=swarm_with_breakpoint()) as client:
        paused = decode(
            await client.post(
                "/responses", json={"input": [{"role": "user", "content": "ok?"}], "tools": []}
            )
        )
        call = paused["output"][0]
        assert call["type"] == "function_call" and call["name"] == "ask_human"
        assert json.loads(call["arguments"]) == {"question": "ok?"}
        done = decode(
            await client.post(
                "/responses",
                json={
                    "input": [
                        {
                            "type": "function_call_output",
                            "call_id": call["call_id"],
                            "output": "yes",
                        }
                    ],
                    "tools": [],
                    "previous_response_id": paused["id"],
                },
            )
        )
        assert done["output"][0]["content"][0]["text"] == "human said yes"
        unknown = await client.post(
            "/responses",
            json={
                "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}],
                "tools": [],
            },
        )
        assert unknown.status_code == 404


async def test_not_served_outside_debug_mode(tmp_path: Path) -> None:
    async with client_for(tmp_path, debug=False) as client:
        response = await client.post(
            "/responses", json={"input": [{"role": "user", "content": "hi"}], "tools": []}
        )
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found"}
