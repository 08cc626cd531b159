"""v1.3.6's ``mail.utils`` helpers: auth over the embedded keys, serialization, help text,
the lazy re-exports."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import HTTPException
from starlette.requests import Request

from mail.api import MAILAction, MAILAgentTemplate, MAILSwarmTemplate
from mail.errors import TaskNotFoundError
from mail.server._auth_embedded import EmbeddedAuth
from mail.testing import ScriptedAgent, tc
from mail.utils import auth
from mail.utils.openai import SwarmOAIClient
from mail.utils.parsing import read_url_string
from mail.utils.serialize import dump_mail_result, export, extract_task_body, serialize_mail_value
from mail.utils.string_builder import build_mail_help_string


def _request(key: str | None) -> Request:
    headers = [] if key is None else [(b"authorization", f"Bearer {key}".encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedAuth:
    credentials = tmp_path / "credentials.json"
    (tmp_path / "mail.toml").write_text(
        f'[auth]\ncredentials_file = "{credentials}"\n', encoding="utf-8"
    )
    monkeypatch.setenv("MAIL_CONFIG_PATH", str(tmp_path / "mail.toml"))
    monkeypatch.setattr(auth, "_authenticator", None)
    embedded, _ = EmbeddedAuth.load_or_create(credentials)
    return embedded


def test_auth_helpers_check_keys_and_roles(keys: EmbeddedAuth) -> None:
    admin, agent = keys.key_for("admin"), keys.key_for("agent")

    async def run() -> None:
        assert await auth.login(admin) == admin
        assert (await auth.get_token_info(admin))["role"] == "admin"
        with pytest.raises(HTTPException) as refused:
            await auth.login("mail-admin-wrong")
        assert refused.value.status_code == 401
        assert await auth.caller_is_admin(_request(admin))
        assert await auth.caller_is_admin_or_user(_request(admin))
        assert not await auth.caller_is_user(_request(admin), raise_on_false=False)
        with pytest.raises(HTTPException):
            await auth.caller_is_admin(_request(agent))
        assert await auth.caller_is_agent(_request(agent))
        assert (await auth.extract_token_info(_request(agent)))["role"] == "agent"
        await auth.check_auth_endpoints()

    asyncio.run(run())
    with pytest.raises(HTTPException) as missing:
        auth.extract_token(_request(None))
    assert missing.value.status_code == 401


@dataclass
class _Point:
    when: datetime
    tags: set[str]


def test_serialize_helpers() -> None:
    when = datetime(2025, 1, 1, tzinfo=UTC)
    value = {"p": _Point(when, {"a"}), "secret": 1, "nested": [{"secret": 2, "x": (1, 2)}]}
    assert serialize_mail_value(value, exclude_keys=["secret"]) == {
        "p": {"when": "2025-01-01T00:00:00+00:00", "tags": ["a"]},
        "nested": [{"x": [1, 2]}],
    }
    result = {"message": {"body": "done", "subject": "Task complete"}}
    assert extract_task_body(result) == "done"
    assert json.loads(dump_mail_result(result, [{"event": "e"}], verbose=True))["events"] == [
        {"event": "e"}
    ]
    assert "events" not in json.loads(dump_mail_result(result, []))
    assert json.loads(export([_Point(when, set())])) == [
        {"when": "2025-01-01T00:00:00+00:00", "tags": []}
    ]


def test_help_string_has_the_sections_asked_for() -> None:
    text = build_mail_help_string("weather", "example", get_tool_help=["send_request"])
    assert "weather" in text and "example" in text and "send_request" in text
    assert "SUMMARY" not in build_mail_help_string("a", "s", get_summary=False)


def test_read_url_string_may_return_the_string_on_error() -> None:
    # url:: is refused by the default policy: v1.3.6's raise_on_error=False keeps the text
    assert read_url_string("url::http://127.0.0.1:1/x.json", False) == (
        "url::http://127.0.0.1:1/x.json"
    )


def test_mail_utils_stays_cheap_and_loads_reexports_on_use() -> None:
    code = (
        "import sys, mail.utils\n"
        "assert 'fastapi' not in sys.modules, 'fastapi'\n"
        "assert callable(mail.utils.login) and 'fastapi' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _asks_a_human() -> MAILSwarmTemplate:
    ask = MAILAction(
        "ask_human",
        "Ask the person running the task.",
        {"type": "object", "properties": {"question": {"type": "string"}}},
        lambda _args: "never called: the caller answers breakpoint tools",
    )
    agent = MAILAgentTemplate(
        "supervisor",
        lambda **_p: ScriptedAgent(
            [tc("ask_human", question="ok?"), tc("task_complete", finish_message="said yes")]
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


async def test_swarm_oai_client_runs_the_swarm_as_post_responses_does() -> None:
    template = _asks_a_human()
    swarm = template.instantiate({}, user_id="u")
    responses = SwarmOAIClient(template, swarm, validate_responses=False).responses
    try:
        paused = await responses.create(input=[{"role": "user", "content": "go"}], tools=[])
        call = paused["output"][0]
        done = await responses.create(
            input=[{"type": "function_call_output", "call_id": call["call_id"], "output": "y"}],
            previous_response_id=paused["id"],
        )
        with pytest.raises(TaskNotFoundError):
            await responses.create(input=[], previous_response_id="no-such-task")
    finally:
        await swarm.shutdown()

    assert (paused["model"], call["type"], call["name"]) == ("bp", "function_call", "ask_human")
    assert done["id"] == paused["id"]
    assert done["output"][0]["content"][0]["text"] == "said yes"
