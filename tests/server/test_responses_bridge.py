"""POST /responses against a real server: the swarm behind an OpenAI Responses-style call
(debug mode only), its auth (401 for no token and the wrong role) and its isolation (another
caller's ``previous_response_id`` is 404, like an unknown one) (CONTRACT 1.3, 1.4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import Running, Start, make_config

from mail.api import MAILAction, MAILAgentTemplate, MAILSwarmTemplate
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


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


@pytest.fixture
async def debug_server(start: Start, tmp_path: Path) -> Running:
    return await start(make_config(tmp_path, debug=True))


def decode(response: httpx.Response) -> dict[str, Any]:
    # the body is a JSON string holding the Response JSON, as the reference server sends it
    assert response.status_code == 200, response.text
    outer = response.json()
    assert isinstance(outer, str)
    result: dict[str, Any] = json.loads(outer)
    return result


def ask(text: str, previous: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"input": [{"role": "user", "content": text}], "tools": []}
    if previous is not None:
        body["previous_response_id"] = previous
    return body


def answer_calls(previous: str | None, call_id: str = "c", output: str = "x") -> dict[str, Any]:
    body: dict[str, Any] = {
        "input": [{"type": "function_call_output", "call_id": call_id, "output": output}],
        "tools": [],
    }
    if previous is not None:
        body["previous_response_id"] = previous
    return body


async def test_a_message_and_its_continuation(debug_server: Running) -> None:
    user = await debug_server.user()

    first = decode(await user.post("/responses", json=ask("what is 2+3?")))
    second = decode(
        await user.post(
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

    assert first["object"] == "response"
    assert first["model"] == "offline"
    assert first["output"][0]["content"][0]["text"] == "2+3 = 5"
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
            {"input": [], "tools": [], "previous_response_id": 7},
            "parameter 'previous_response_id' must be a string",
        ),
        (
            {"input": [{"role": "assistant", "content": "x"}], "tools": []},
            "parameter 'input' holds no new user text",
        ),
    ],
)
async def test_bad_requests(debug_server: Running, body: dict[str, Any], detail: str) -> None:
    response = await (await debug_server.user()).post("/responses", json=body)

    assert (response.status_code, response.json()) == (400, {"detail": detail})


async def test_function_call_outputs_resume_a_breakpoint(start: Start, tmp_path: Path) -> None:
    server = await start(make_config(tmp_path, debug=True), template=swarm_with_breakpoint())
    user = await server.user()

    paused = decode(await user.post("/responses", json=ask("ok?")))
    call = paused["output"][0]
    done = decode(
        await user.post("/responses", json=answer_calls(paused["id"], call["call_id"], "yes"))
    )

    assert call["type"] == "function_call"
    assert call["name"] == "ask_human"
    assert json.loads(call["arguments"]) == {"question": "ok?"}
    assert done["id"] == paused["id"]
    assert done["output"][0]["content"][0]["text"] == "human said yes"


@pytest.mark.parametrize(
    "body",
    [answer_calls(None), answer_calls("nope"), ask("hi", previous="nope")],
    ids=["outputs-without-id", "outputs-unknown-id", "text-unknown-id"],
)
async def test_unknown_previous_response_is_404(debug_server: Running, body: Any) -> None:
    response = await (await debug_server.user()).post("/responses", json=body)

    assert response.status_code == 404
    assert response.json()["detail"].endswith("not found")


async def test_someone_elses_previous_response_id_is_404(start: Start, tmp_path: Path) -> None:
    server = await start(make_config(tmp_path, debug=True), template=swarm_with_breakpoint())
    owner, other = await server.user(), await server.user2()
    paused = decode(await owner.post("/responses", json=ask("ok?")))
    call_id = paused["output"][0]["call_id"]

    as_text = await other.post("/responses", json=ask("hijack", previous=paused["id"]))
    as_outputs = await other.post("/responses", json=answer_calls(paused["id"], call_id, "no"))

    expected = {"detail": f"task '{paused['id']}' not found"}
    assert (as_text.status_code, as_text.json()) == (404, expected)
    assert (as_outputs.status_code, as_outputs.json()) == (404, expected)
    # the other caller neither answered the owner's breakpoint nor opened a task of that id
    assert (await other.get("/task", params={"task_id": paused["id"]})).status_code == 404
    task = (await owner.get("/task", params={"task_id": paused["id"]})).json()
    assert task["state"] == "waiting_breakpoint"
    done = decode(await owner.post("/responses", json=answer_calls(paused["id"], call_id, "yes")))
    assert done["output"][0]["content"][0]["text"] == "human said yes"


async def test_no_token_is_401(debug_server: Running) -> None:
    response = await (await debug_server.anon()).post("/responses", json=ask("hi"))

    assert (response.status_code, response.json()) == (401, {"detail": "no API key provided"})


async def test_wrong_role_is_401(debug_server: Running) -> None:
    response = await (await debug_server.agent()).post("/responses", json=ask("hi"))

    assert (response.status_code, response.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )


async def test_not_served_outside_debug_mode(offline: Running) -> None:
    response = await (await offline.user()).post("/responses", json=ask("hi"))

    assert (response.status_code, response.json()) == (404, {"detail": "Not found"})


async def test_not_served_outside_debug_mode_whatever_the_body(offline: Running) -> None:
    # FastAPI parses the body before the route's dependencies; the debug gate still comes first
    response = await (await offline.user()).post(
        "/responses", content=b"{bad", headers={"Content-Type": "application/json"}
    )

    assert (response.status_code, response.json()) == (404, {"detail": "Not found"})
