"""Fixtures for driving a real MAILRuntime with scripted agents.

Test modules are imported with ``--import-mode=importlib``, so they cannot import this
file: every helper is handed out through a fixture.

* ``make_runtime(agents, actions=None, *, start=True, max_steps=None,
  action_override=None, **kw)`` builds a :class:`MAILRuntime` (user ``u1``, swarm
  ``demo``, entrypoint ``supervisor`` unless overridden), starts its loop and shuts it
  down after the test.
* ``user_message(body, task_id=None, ...)`` builds the request a user sends.
* ``wait_event(rt, task_id, predicate, timeout=5)`` follows a task's event log until an
  event matches (never polls, never sleeps).
* ``probe(agent_fn)`` wraps an agent function so a test can await each turn's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from mail.core.actions import ActionCore, ActionOverrideFunction
from mail.core.agents import AgentCore
from mail.core.events import MAILEvent
from mail.core.message import (
    MAILMessage,
    create_agent_address,
    create_user_address,
    make_request,
)
from mail.core.runtime import MAILRuntime
from mail.testing import parse_incoming

USER = "u1"
SWARM = "demo"

MakeRuntime = Callable[..., MAILRuntime]
UserMessage = Callable[..., MAILMessage]
WaitEvent = Callable[..., Awaitable[MAILEvent]]


@pytest.fixture
async def make_runtime() -> AsyncIterator[MakeRuntime]:
    runtimes: list[MAILRuntime] = []

    def build(
        agents: dict[str, AgentCore],
        actions: dict[str, ActionCore] | None = None,
        *,
        start: bool = True,
        max_steps: int | None = None,
        action_override: ActionOverrideFunction | None = None,
        **kw: Any,
    ) -> MAILRuntime:
        kw.setdefault("user_id", USER)
        kw.setdefault("swarm_name", SWARM)
        kw.setdefault("entrypoint", "supervisor")
        rt = MAILRuntime(agents, actions or {}, **kw)
        runtimes.append(rt)
        if start:
            rt.start(max_steps=max_steps, action_override=action_override)
        return rt

    yield build
    for rt in runtimes:
        await rt.shutdown(timeout=1.0)


@pytest.fixture
def user_message() -> UserMessage:
    def build(
        body: str,
        task_id: str | None = None,
        *,
        recipient: str = "supervisor",
        subject: str = "New Message",
        user: str = USER,
    ) -> MAILMessage:
        return make_request(
            task_id=task_id or str(uuid.uuid4()),
            sender=create_user_address(user),
            recipient=create_agent_address(recipient),
            subject=subject,
            body=body,
            sender_swarm=SWARM,
            recipient_swarm=SWARM,
        )

    return build


@pytest.fixture
def wait_event() -> WaitEvent:
    async def wait(
        rt: MAILRuntime,
        task_id: str,
        predicate: Callable[[MAILEvent], bool],
        timeout: float = 5.0,
        after: int = 0,
    ) -> MAILEvent:
        task = rt.get_task(task_id)
        assert task is not None, f"no task {task_id}"

        async def scan() -> MAILEvent:
            async with contextlib.aclosing(task.log.follow(after)) as events:
                async for event in events:
                    if predicate(event):
                        return event
            raise AssertionError("unreachable: follow() never ends")

        return await asyncio.wait_for(scan(), timeout)

    return wait


class Probe:
    """An agent function that reports the start of each turn, then runs ``inner``.

    ``entered`` receives the body of the message that started each turn as soon as the
    turn begins; with a gated ``ScriptedAgent`` inside, the turn is then parked at the
    gate.
    """

    def __init__(self, inner: Callable[..., Awaitable[Any]]) -> None:
        self.inner = inner
        self.entered: asyncio.Queue[str] = asyncio.Queue()

    async def __call__(self, messages: list[dict[str, Any]], tool_choice: Any) -> Any:
        self.entered.put_nowait(parse_incoming(messages).body)
        return await self.inner(messages, tool_choice)

    async def next_entry(self, timeout: float = 5.0) -> str:
        return await asyncio.wait_for(self.entered.get(), timeout)


@pytest.fixture
def probe() -> type[Probe]:
    return Probe
