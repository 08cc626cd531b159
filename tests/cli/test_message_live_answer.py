"""``mail message --stream`` against a real ``mail server`` process whose LiteLLM agent
streams from the stub LLM: the answer is printed as it streams, and only once."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests._servers import clean_env, start_server

from mail.testing.llm import StubLLMServer, StubReply

pytestmark = pytest.mark.timeout(60)

ANSWER = 'The "answer", streamed:\nforty-two — 42.'


def swarm_file(directory: Path, api_base: str) -> Path:
    agent = {
        "name": "supervisor",
        "factory": "python::mail.factories.base:LiteLLMAgentFunction",
        "comm_targets": [],
        "enable_entrypoint": True,
        "can_complete_tasks": True,
        "tool_format": "completions",
        "agent_params": {
            "llm": "openai/stub-model",
            "system": "Answer the question.",
            "use_proxy": False,
            "api_base": api_base,
            "api_key": "test-key",
            "stream_tokens": True,
        },
    }
    swarm = {
        "name": "live",
        "version": "1.0.0",
        "description": "one LiteLLM agent that streams",
        "entrypoint": "supervisor",
        "agents": [agent],
        "actions": [],
    }
    path = directory / "swarms.json"
    path.write_text(json.dumps([swarm]), encoding="utf-8")
    return path


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    async with StubLLMServer(
        rule=lambda _body: StubReply.tool_calls(
            ("task_complete", {"finish_message": ANSWER}), reasoning="Easy."
        )
    ) as server:
        yield server


async def test_message_stream_prints_the_streamed_answer_once(
    llm: StubLLMServer, tmp_path: Path, empty_toml: Path
) -> None:
    env = clean_env() | {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "MAIL_LOG_LEVEL": "WARNING"}
    source = swarm_file(tmp_path, llm.base_url)
    server = await asyncio.to_thread(start_server, "live", source, env, tmp_path / "data")
    try:
        command = [sys.executable, "-m", "mail.cli", "message", "what is it?", "--stream"]
        command += ["--url", server.url, "--api-key", server.keys["user"], "-c", str(empty_toml)]
        child = await asyncio.create_subprocess_exec(
            *command,
            env=clean_env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(child.communicate(), 45)
    finally:
        await asyncio.to_thread(server.stop)

    text = out.decode()
    assert child.returncode == 0, err.decode() + server.output()[-2000:]
    assert text.count(ANSWER) == 1, text
    assert f"Answer\n{ANSWER}\n" in text
    assert "╭─ Answer" not in text  # the streamed answer is not repeated in a panel
    assert "✓ completed · task " in text
    assert llm.requests[0].stream
