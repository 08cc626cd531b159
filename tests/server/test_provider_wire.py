"""The wire additions for the AI SDK provider, over a real server: the closing event's
``status`` (S1), the pending calls of ``breakpoint_tool_call`` (S2), the call data of the
action events (S3), ``breakpoint_tools`` in ``GET /`` and ``/ui/agents`` (S4) and CORS
origins from the configuration (S6). Cancellation (S5) is in test_cancel.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import (
    Frame,
    Running,
    Start,
    ask_human_action,
    make_config,
    read_stream,
    scripted_template,
)

from mail.api import MAILAction
from mail.config import load_config
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)

ASK = {"question": "What is your name?"}
DONE = tc("task_complete", finish_message="hello Ada")


def double_action() -> MAILAction:
    def double(args: dict[str, Any]) -> str:
        return str(2 * int(args["n"]))

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return MAILAction("double", "Double a number.", schema, double)


@pytest.fixture
async def wired(start: Start) -> Running:  # one task per test: the script is used once
    """supervisor: runs ``double``, then asks the human (a breakpoint), then completes."""

    supervisor = ScriptedAgent(
        [tc("double", call_id="a-1", n=21), tc("ask_human", call_id="bp-1", **ASK), DONE]
    )
    template = scripted_template(
        {"supervisor": supervisor},
        breakpoint_tools=["ask_human"],
        actions=[double_action(), ask_human_action()],
    )
    return await start(template=template)


async def _stream(server: Running, payload: dict[str, Any]) -> list[Frame]:
    user = await server.user()
    async with user.stream("POST", "/message", json={**payload, "stream": True}) as response:
        assert response.status_code == 200
        return await read_stream(response)


def _one(stream: list[Frame], name: str) -> Frame:
    [frame] = [f for f in stream if f.event == name]
    return frame


async def test_action_and_breakpoint_events_carry_their_calls(wired: Running) -> None:
    stream = await _stream(wired, {"body": "hi", "task_id": "t-wire"})

    call = {"tool_name": "double", "tool_call_id": "a-1", "tool_args": {"n": 21}}
    assert _one(stream, "action_call").data["extra_data"] == call
    assert _one(stream, "action_complete").data["extra_data"] == {
        **call,
        "content": "42",
        "status": "success",
    }
    assert _one(stream, "breakpoint_tool_call").data["extra_data"] == {
        "calls": [{"call_id": "bp-1", "name": "ask_human", "arguments": json.dumps(ASK)}]
    }
    final = stream[-1]
    assert (final.event, final.id, final.data["status"]) == (
        "task_complete",
        None,
        "waiting_breakpoint",
    )
    assert "usage" not in final.data  # scripted agents report no tokens
    [pending] = json.loads(final.data["response"])
    assert (pending["call_id"], pending["name"], pending["arguments"]) == (
        "bp-1",
        "ask_human",
        json.dumps(ASK),
    )

    resumed = await _stream(
        wired,
        {
            "body": "",
            "task_id": "t-wire",
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": [{"call_id": "bp-1", "content": "Ada"}]},
        },
    )
    assert (resumed[-1].event, resumed[-1].data["status"]) == ("task_complete", "completed")
    assert resumed[-1].data["response"] == "hello Ada"


async def test_json_answer_status_matches_the_closing_event(wired: Running) -> None:
    user = await wired.user()

    paused = (await user.post("/message", json={"body": "hi", "task_id": "t-json"})).json()
    done = (
        await user.post(
            "/message",
            json={
                "body": "",
                "task_id": "t-json",
                "resume_from": "breakpoint_tool_call",
                "kwargs": {"breakpoint_tool_call_result": "Ada"},
            },
        )
    ).json()

    assert paused["status"] == "waiting_breakpoint"
    assert (done["status"], done["response"]) == ("completed", "hello Ada")
    task = (await user.get("/task", params={"task_id": "t-json"})).json()
    assert "usage" not in task


async def test_failed_turn_closes_with_status_failed(start: Start) -> None:
    def boom(_incoming: Any) -> Any:
        raise RuntimeError("boom")

    supervisor = ScriptedAgent([boom, boom, boom, boom, boom, boom])
    server = await start(template=scripted_template({"supervisor": supervisor}))

    stream = await _stream(server, {"body": "hi", "task_id": "t-fail"})
    answer = (await (await server.user()).post("/message", json={"body": "hi"})).json()

    assert (stream[-1].event, stream[-1].data["status"]) == ("task_error", "failed")
    assert answer["status"] == "failed"


async def test_breakpoint_tools_in_root_and_ui_agents(wired: Running, offline: Running) -> None:
    user = await wired.user()
    expected = [
        {
            "name": "ask_human",
            "description": "Ask the human a question.",
            "parameters": ask_human_action().to_tool_dict("responses")["parameters"],
        }
    ]

    root = (await user.get("/")).json()
    ui = (await user.get("/ui/agents")).json()

    assert root["swarm"]["breakpoint_tools"] == expected
    assert ui["breakpoint_tools"] == expected
    assert expected[0]["parameters"]["properties"]["question"] == {"type": "string"}
    assert expected[0]["parameters"]["required"] == ["question"]
    plain = await offline.user()
    assert (await plain.get("/")).json()["swarm"]["breakpoint_tools"] == []
    assert (await plain.get("/ui/agents")).json()["breakpoint_tools"] == []


# --- S6: CORS --------------------------------------------------------------------------------


def _preflight(origin: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }


async def test_cors_preflight_allows_configured_origins_only(start: Start, tmp_path: Path) -> None:
    server = await start(make_config(tmp_path, cors_origins=["https://app.example"]))
    anon = await server.anon()

    allowed = await anon.options("/message", headers=_preflight("https://app.example"))
    refused = await anon.options("/message", headers=_preflight("https://evil.example"))
    former = await anon.options("/message", headers=_preflight("http://localhost:3000"))

    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert allowed.headers["access-control-allow-credentials"] == "true"
    assert "POST" in allowed.headers["access-control-allow-methods"]
    for answer in (refused, former):
        assert answer.status_code == 400
        assert "access-control-allow-origin" not in answer.headers


async def test_cors_defaults_to_the_local_ui(offline: Running) -> None:
    anon = await offline.anon()

    local = await anon.options("/", headers=_preflight("http://127.0.0.1:3000"))
    other = await anon.options("/", headers=_preflight("https://app.example"))

    assert local.headers["access-control-allow-origin"] == "http://127.0.0.1:3000"
    assert other.status_code == 400


def test_cors_origins_from_the_environment(tmp_path: Path) -> None:
    config = load_config(
        None,
        env={"MAIL_DATA_DIR": str(tmp_path), "MAIL_CORS_ORIGINS": " https://a.example, ,https://b"},
        search=False,
    )
    default = load_config(None, env={"MAIL_DATA_DIR": str(tmp_path)}, search=False)

    assert config.server.cors_origins == ["https://a.example", "https://b"]
    assert default.server.cors_origins == ["http://localhost:3000", "http://127.0.0.1:3000"]
