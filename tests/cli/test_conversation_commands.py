"""``mail conversations`` and ``mail conversation ID`` against a real server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.cli.conftest import LiveServer

from mail.cli import main
from mail.client import MAILClient

pytestmark = pytest.mark.timeout(60)


def conn(server: LiveServer, config: Path) -> list[str]:
    return ["--url", server.url, "--api-key", server.user_key, "-c", str(config)]


async def _create(server: LiveServer) -> str:
    async with MAILClient(server.url, api_key=server.user_key) as client:
        created = await client.mail_create(
            subject="release",
            taskId="cli-task",
            initialTurn={"contentType": "text", "content": {"text": "Ship it?"}},
        )
        cid = str(created["conversation"]["id"])
        await client.mail_thread_create(
            conversationId=cid, rootTurnId=created["initialTurn"]["id"], subject="why"
        )
        return cid


def test_list_and_show(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cid = asyncio.run(_create(live_server))
    args = conn(live_server, empty_toml)
    assert main(["conversations", *args]) == 0
    (line,) = [row for row in capsys.readouterr().out.splitlines() if row.startswith(cid)]
    assert "active" in line and line.endswith("release  task cli-task")
    assert main(["conversations", "--json", *args]) == 0
    page = json.loads(capsys.readouterr().out)
    assert cid in [c["id"] for c in page["conversations"]]
    assert main(["conversation", cid, *args]) == 0
    out = capsys.readouterr().out
    assert f"conversation: {cid}" in out
    assert "participants: user:" in out
    assert "(depth 1): why" in out
    assert out.rstrip().endswith("text: Ship it?")


async def _redacted(server: LiveServer) -> str:
    async with MAILClient(server.url, api_key=server.user_key) as client:
        created = await client.mail_create(
            initialTurn={"contentType": "text", "content": {"text": "the secret"}}
        )
        cid = str(created["conversation"]["id"])
        await client.mail_turn_redact(conversationId=cid, turnId=created["initialTurn"]["id"])
        return cid


def test_a_redacted_turn_shows_as_redacted(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cid = asyncio.run(_redacted(live_server))
    assert main(["conversation", cid, *conn(live_server, empty_toml)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("text: [redacted]") and "secret" not in out


def test_an_unknown_conversation_fails(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["conversation", "conv-nope", *conn(live_server, empty_toml)]) == 1
    assert "10000" in capsys.readouterr().err
