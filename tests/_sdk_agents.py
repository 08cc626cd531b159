"""Helpers of the tests of the SDK-based agent functions (mail.factories.openai, .anthropic)."""

from __future__ import annotations

import asyncio
import os
import sys
from asyncio.subprocess import PIPE
from typing import Any

from mail.api import MAILSwarmTemplate

USER = {"role": "user", "content": "<incoming_message>hello</incoming_message>"}
REQUEST = {"target": "supervisor", "subject": "Re", "body": "42"}


class AgentMaker:
    """Builds agent functions with ``defaults`` (a worker answering to a supervisor);
    :meth:`aclose` closes their SDK clients."""

    def __init__(self, **defaults: Any) -> None:
        self.defaults = {
            "name": "worker",
            "comm_targets": ["supervisor"],
            "tools": [],
            "api_key": "test-key",
            "timeout": 10.0,
            **defaults,
        }
        self.built: list[Any] = []

    def __call__(self, cls: type[Any], **params: Any) -> Any:
        agent = cls(**{**self.defaults, **params})
        self.built.append(agent)
        return agent

    async def aclose(self) -> None:
        for agent in self.built:
            await agent.aclose()


async def run_child(script: str, env: dict[str, str]) -> str:
    """Run ``script`` in a child Python with ``env`` added to ours; return its output.

    The SDKs read their variables from ``os.environ``: a child gets them without touching
    the test process's."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, env={**os.environ, **env}, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(child.communicate(), 30)
    assert child.returncode == 0, err.decode()
    return out.decode().strip()


async def run_task(template: MAILSwarmTemplate, question: str) -> tuple[dict[str, Any], Any]:
    """Run one task on a swarm of ``template``; return ``(final message, events)``."""
    swarm = template.instantiate({"user_token": "ignored"}, user_id="alice")
    try:
        final, events = await swarm.post_message(question, show_events=True, timeout=30)
    finally:
        await swarm.shutdown()
        for agent in swarm.agents:
            await agent.function.aclose()
    assert events is not None and events[-1].event == "task_complete"
    return final, events
