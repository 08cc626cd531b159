"""A2A agents inside a swarm (``a2a_agents`` in ``swarms.json``): a MAIL supervisor asks a
real ``a2a-sdk`` server process on loopback by name, which answers, fails, asks for input,
is slow and cancelled, or dies; a wrong token and the definitions' checks."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests._servers import Server, clean_env, free_port, serve
from tests.a2a.conftest import USER_KEY, Start
from tests.persistence.conftest import eventually
from tests.server.conftest import KEYS, SWARMS_JSON, WAIT

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.cli._doctor import run_checks
from mail.config import MAILConfig, load_config
from mail.errors import SwarmDefinitionError
from mail.server import create_app
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, StaticAuth, tc

pytestmark = pytest.mark.timeout(90)

TOKEN = "remote-token"  # the test server's


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    events = tmp_path / "remote-events.txt"
    events.touch()
    port = free_port()
    script = Path(__file__).with_name("_remote_agent.py")
    server = Server(
        [sys.executable, str(script), str(port), TOKEN, str(events)],
        env=clean_env(),
        cwd=tmp_path,
        log=tmp_path / "remote.log",
        url=f"http://127.0.0.1:{port}",
    )
    with server.start():
        yield server, events


async def noted(events: Path, word: str) -> str:
    """The remote's events file once ``word`` is in it (the remote process writes it)."""

    async def written() -> bool:
        return word in await asyncio.to_thread(events.read_text, encoding="utf-8")

    await eventually(written, timeout=WAIT, what=f"{word!r} in the remote's events")
    return await asyncio.to_thread(events.read_text, encoding="utf-8")


def supervise(incoming: Incoming) -> ScriptedCall:
    if incoming.sender == "remote":
        return tc("task_complete", finish_message=f"remote answered: {incoming.body}")
    return tc("send_request", target="remote", subject="Question", body=incoming.body)


def swarm(url: str, **remote: Any) -> MAILSwarmTemplate:
    """A scripted supervisor that asks the A2A agent ``remote`` and completes with its
    answer."""
    template = MAILSwarmTemplate.from_swarms_json(
        {
            "name": "a2a-members",
            "version": "1.0.0",
            "entrypoint": "supervisor",
            "agents": [
                {
                    "name": "supervisor",
                    "factory": "python::mail.testing:scripted_agent",
                    "comm_targets": ["remote"],
                    "agent_params": {},
                    "enable_entrypoint": True,
                    "can_complete_tasks": True,
                }
            ],
            "actions": [],
            "a2a_agents": [
                {"name": "remote", "url": f"{url}/.well-known/agent-card.json", **remote}
            ],
        }
    )
    agent = ScriptedAgent(rule=supervise)
    template.agents[0] = MAILAgentTemplate(
        "supervisor",
        lambda **_params: agent,
        ["remote"],
        [],
        {},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    return template


async def start_swarm(
    a2a_start: Start, tmp_path: Path, url: str, *, loopback: bool = True, **remote: Any
) -> str:
    config = member_config(tmp_path, loopback=loopback)
    return await a2a_start(template=swarm(url, **remote), config=config)


def member_config(tmp_path: Path, *, loopback: bool = True) -> MAILConfig:
    """The server's configuration: tasks in SQLite in ``tmp_path``; the outbound guard
    lets loopback through when ``loopback``."""
    overrides = {
        "server": {
            "swarm": {"name": "a2a-members", "source": str(SWARMS_JSON)},
            "settings": {"print_llm_streams": False},
        },
        # the remote agent is on loopback, which the outbound guard refuses by default
        "stdlib": {"http": {"allow_loopback": loopback}},
    }
    return load_config(
        None,
        env={"MAIL_DATA_DIR": str(tmp_path), "SWARM_REGISTRY_FILE": str(tmp_path / "r.json")},
        search=False,
        overrides=overrides,
    )


async def ask(url: str, body: str, **fields: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT
    ) as http:
        answer = await http.post(f"{url}/message", json={"body": body, **fields})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("A2A_TEST_TOKEN", TOKEN)
    return {"auth": {"token": "${A2A_TEST_TOKEN}"}}


@pytest.mark.parametrize("streaming", [True, False])
async def test_the_swarm_asks_the_a2a_agent_by_name(
    a2a_start: Start,
    tmp_path: Path,
    remote: tuple[Server, Path],
    token: dict[str, Any],
    streaming: bool,
) -> None:
    url = await start_swarm(a2a_start, tmp_path, remote[0].url, streaming=streaming, **token)

    answer = await ask(url, "hello there")

    assert answer["status"] == "completed"
    assert answer["response"] == "remote answered: remote says: hello there"


async def test_a_failed_a2a_task_is_a_clear_error_to_the_asking_agent(
    a2a_start: Start, tmp_path: Path, remote: tuple[Server, Path], token: dict[str, Any]
) -> None:
    url = await start_swarm(a2a_start, tmp_path, remote[0].url, **token)

    answer = await ask(url, "fail please")

    assert answer["response"] == (
        "remote answered: error: A2A agent remote ended the task failed: remote failure"
    )


async def test_input_required_is_answered_by_the_next_request(
    a2a_start: Start, tmp_path: Path, remote: tuple[Server, Path], token: dict[str, Any]
) -> None:
    url = await start_swarm(a2a_start, tmp_path, remote[0].url, **token)

    first = await ask(url, "ask me", task_id="t-input")
    second = await ask(url, "Lisbon", task_id="t-input", resume_from="user_response")

    assert "A2A agent remote needs more input: Which city?" in first["response"]
    assert second["response"] == "remote answered: remote answer for Lisbon"


async def test_input_required_is_answered_after_the_server_restarted(
    tmp_path: Path, remote: tuple[Server, Path], token: dict[str, Any]
) -> None:
    # the remote task waiting for input is found again from the remote's own task list
    config = member_config(tmp_path)

    def app() -> FastAPI:
        template = swarm(remote[0].url, **token)
        return create_app(config, template=template, authenticator=StaticAuth(KEYS))

    async with serve(app()) as url:
        first = await ask(url, "ask me", task_id="t-restart")
    async with serve(app()) as url:  # the same store, a new swarm: nothing in memory
        second = await ask(url, "Lisbon", task_id="t-restart", resume_from="user_response")

    assert "A2A agent remote needs more input: Which city?" in first["response"]
    assert second["response"] == "remote answered: remote answer for Lisbon"


async def test_a_wrong_token_is_a_clear_error(
    a2a_start: Start,
    tmp_path: Path,
    remote: tuple[Server, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("A2A_TEST_TOKEN", "wrong")
    url = await start_swarm(a2a_start, tmp_path, remote[0].url, auth={"token": "${A2A_TEST_TOKEN}"})

    answer = await ask(url, "hello")

    assert answer["response"].startswith("remote answered: error: A2A agent remote failed:")
    assert "401" in answer["response"]


async def test_the_outbound_guard_refuses_an_address_it_does_not_allow(
    a2a_start: Start, tmp_path: Path, remote: tuple[Server, Path], token: dict[str, Any]
) -> None:
    url = await start_swarm(a2a_start, tmp_path, remote[0].url, loopback=False, **token)

    answer = await ask(url, "hello")

    assert answer["response"].startswith("remote answered: error: A2A agent remote failed:")
    assert "[stdlib.http]" in answer["response"]


async def test_a_slow_a2a_task_is_cancelled_with_the_mail_task(
    a2a_start: Start, tmp_path: Path, remote: tuple[Server, Path], token: dict[str, Any]
) -> None:
    server, events = remote
    url = await start_swarm(a2a_start, tmp_path, server.url, **token)
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT
    ) as http:
        running = asyncio.create_task(
            http.post(f"{url}/message", json={"body": "slow job", "task_id": "t-slow"})
        )

        await noted(events, "started")
        cancel = await http.post(f"{url}/tasks/t-slow/cancel")
        answered = await asyncio.wait_for(running, WAIT)

    assert cancel.status_code == 200
    assert answered.json()["status"] == "cancelled"

    lines = (await noted(events, "cancelled")).splitlines()
    started, cancelled = lines[0].split()[1], lines[1].split()[1]
    assert cancelled == started  # the remote task the slow job started


async def test_a_remote_that_dies_mid_task_is_a_clear_error(
    a2a_start: Start, tmp_path: Path, remote: tuple[Server, Path], token: dict[str, Any]
) -> None:
    url = await start_swarm(a2a_start, tmp_path, remote[0].url, **token)

    answer = await ask(url, "die now")

    assert answer["response"].startswith("remote answered: error: A2A agent remote failed:")


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"url": "http://x"}, "a2a_agents[0]: must be a non-empty string"),
        ({"name": "r", "url": "ftp://x"}, "a2a_agents[0]: must be an http(s) URL"),
        ({"name": "r", "url": "http://x", "auth": {"token": "secret"}}, "never the token"),
        ({"name": "r", "url": "http://x", "timeout": 0}, "positive number of seconds"),
        ({"name": "r", "url": "http://x", "retries": 3}, "unknown field"),
        ({"name": "supervisor", "url": "http://x"}, "an agent named 'supervisor' exists"),
    ],
)
def test_a2a_agent_definitions_are_checked(entry: dict[str, Any], says: str) -> None:
    with pytest.raises(SwarmDefinitionError, match=re.escape(says)):
        MAILSwarmTemplate.from_swarms_json(
            {
                "name": "s",
                "version": "1",
                "entrypoint": "supervisor",
                "agents": [
                    {
                        "name": "supervisor",
                        "factory": "python::mail.testing:scripted_agent",
                        "comm_targets": [],
                        "agent_params": {},
                    }
                ],
                "actions": [],
                "a2a_agents": [entry],
            }
        )


def test_mail_doctor_reads_each_a2a_agents_card(
    tmp_path: Path, remote: tuple[Server, Path]
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    swarms = tmp_path / "swarms.json"
    swarm = {
        "name": "doctored",
        "version": "1.0.0",
        "entrypoint": "supervisor",
        "agents": [
            {
                "name": "supervisor",
                "factory": "python::mail.testing:scripted_agent",
                "comm_targets": ["remote", "gone"],
                "agent_params": {},
                "enable_entrypoint": True,
                "can_complete_tasks": True,
            }
        ],
        "actions": [],
        "a2a_agents": [{"name": "remote", "url": remote[0].url}, {"name": "gone", "url": down}],
    }
    swarms.write_text(json.dumps([swarm]), encoding="utf-8")
    overrides = {
        "server": {"data_dir": str(tmp_path), "swarm": {"name": "doctored", "source": str(swarms)}},
        "database": {"persist": False},
        "stdlib": {"http": {"allow_loopback": True}},
    }

    checks = {c.name: c for c in run_checks(None, {}, search=False, overrides=overrides)}

    assert checks["a2a agent remote"].status == "ok"
    assert checks["a2a agent remote"].message == "remote 1.0.0: 0 skill(s), streams"
    assert checks["a2a agent gone"].status == "fail"
    assert checks["a2a agent gone"].message.startswith(f"cannot read its card at {down}")
