"""Manual mode (CONTRACT 4.13, issue 22 item 4): messages wait in the agents' buffers
until ``MAILSwarm.manual_step`` hands them over, as v1.3.6 users drive evaluations."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mail import MAILAction, MAILAgentTemplate, MAILSwarmTemplate
from mail.api import MAILSwarm
from mail.core.events import EventName
from mail.core.tasks import MAILTask
from mail.errors import InvalidMessageError, TaskNotFoundError, TaskStateError
from mail.testing import ScriptedAgent, tc


async def _look(args: dict[str, Any]) -> str:
    return f"found {args['q']}"


async def _until(swarm: MAILSwarm, task_id: str, holds: Any, timeout: float = 5.0) -> MAILTask:
    """The task once ``holds(task)`` is true, waiting on its event log (a buffered
    delivery logs its ``new_message`` event)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        task = swarm.get_task_by_id(task_id)
        if task is not None and holds(task):
            return task
        left = deadline - loop.time()
        assert left > 0, f"task {task_id} never reached the expected state"
        if task is None:
            await asyncio.sleep(0)  # the submission has not run yet: let it
        else:
            await task.log.wait(task.log.last_seq, left)


def _swarm(agents: dict[str, ScriptedAgent], slow: Any = None) -> MAILSwarm:
    look = MAILAction(
        "look",
        "Look.",
        {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        _look,
    )
    actions = (
        [look] if slow is None else [look, MAILAction("slow", "Slow.", {"type": "object"}, slow)]
    )
    template = MAILSwarmTemplate(
        "game",
        "1.0.0",
        [
            MAILAgentTemplate(
                name,
                lambda _agent=agent, **_params: _agent,
                [n for n in agents if n != name],
                actions,
                {},
                enable_entrypoint=name == "host",
                can_complete_tasks=name == "host",
            )
            for name, agent in agents.items()
        ],
        actions,
        "host",
    )
    return template.instantiate({}, user_id="judge")


def _last_turn(agent: ScriptedAgent) -> tuple[str, Any]:
    history, tool_choice = agent.calls[-1]
    return history[-1]["content"], tool_choice


async def test_messages_wait_for_manual_steps() -> None:
    host = ScriptedAgent(
        [
            tc("text_output", content="Night falls. Who is the wolf?"),
            tc("task_complete", finish_message="the village wins"),
        ]
    )
    alice = ScriptedAgent([tc("text_output", content="I suspect bob & co")])
    bob = ScriptedAgent([tc("text_output", content="not me")])
    swarm = _swarm({"host": host, "alice": alice, "bob": bob})
    loop = asyncio.create_task(swarm.run_continuous(mode="manual"))
    try:
        answer = asyncio.create_task(swarm.post_message("Play a round", task_id="t-game"))
        task = await _until(swarm, "t-game", lambda t: "host" in t.manual_buffer)
        # the user's message waits for the host's step: no agent ran
        assert host.invocations == 0
        assert [m["message"]["body"] for m in task.manual_buffer["host"]] == ["Play a round"]

        sent = await swarm.manual_step("t-game", "host", payload="Open the round.")
        assert sent is not None and sent["msg_type"] == "broadcast"
        content, tool_choice = _last_turn(host)
        assert tool_choice == "auto"
        assert content == (
            "<private_message>\n<from>judge</from>\n<to>host</to>\nPlay a round\n"
            "</private_message>\n\nOpen the round."
        )
        step = host.calls[-1][0][-1]
        assert step["role"] == "user"
        # the broadcast waits in the buffers of alice and bob, not of its sender
        assert host.invocations == 1 and alice.invocations == 0 and bob.invocations == 0
        assert set(task.manual_buffer) == {"alice", "bob"}

        vote = await swarm.manual_step(
            "t-game", "alice", response_targets=["host"], response_type="response"
        )
        assert vote is not None and vote["msg_type"] == "response"
        assert vote["message"]["recipient"]["address"] == "host"  # type: ignore[typeddict-item]
        assert _last_turn(alice)[0] == (
            "<public_message>\n<from>host</from>\nNight falls. Who is the wolf?\n</public_message>"
        )
        assert "bob" in task.manual_buffer and "alice" not in task.manual_buffer

        assert await swarm.manual_step("t-game", "host") is None  # task_complete: no text
        assert _last_turn(host)[0] == (
            "<private_message>\n<from>alice</from>\n<to>host</to>\n"
            "I suspect bob &amp; co\n</private_message>"
        )
        final, _ = await asyncio.wait_for(answer, 5)
        assert final["message"]["body"] == "the village wins"
        assert bob.invocations == 0  # never stepped
        with pytest.raises(TaskStateError):
            await swarm.manual_step("t-game", "bob")
        steps = [
            e
            for e in swarm.get_events("t-game")
            if e.event == EventName.NEW_MESSAGE
            and e.extra_data["full_message"]["message"]["subject"] == "::manual_step::"
        ]
        assert len(steps) == 3
        assert all(e.extra_data["full_message"]["msg_type"] == "buffered" for e in steps)
    finally:
        await swarm.shutdown()
        await asyncio.wait_for(loop, 5)


async def test_system_notices_run_agents_at_once() -> None:
    # a step answered with an action returns None; the ::action_complete:: notice runs the
    # agent at once (not buffered), and its text then goes to everyone's buffer
    host = ScriptedAgent(
        [tc("look", q="clues"), tc("text_output", content="clues found")],
    )
    alice = ScriptedAgent()
    swarm = _swarm({"host": host, "alice": alice})
    loop = asyncio.create_task(swarm.run_continuous(mode="manual"))
    try:
        await swarm.submit_message_nowait(
            swarm.build_message("Go", "start", ["host"], task_id="t-notice")
        )
        assert await swarm.manual_step("t-notice", "host") is None
        task = await _until(swarm, "t-notice", lambda t: "alice" in t.manual_buffer)
        assert host.invocations == 2
        assert host.calls[-1][0][-1]["content"].count("::action_complete::") == 1
        assert [m["message"]["body"] for m in task.manual_buffer["alice"]] == ["clues found"]
        assert alice.invocations == 0
    finally:
        await swarm.shutdown()
        await asyncio.wait_for(loop, 5)


async def test_manual_step_refusals() -> None:
    swarm = _swarm({"host": ScriptedAgent(), "alice": ScriptedAgent()})
    try:
        with pytest.raises(TaskNotFoundError):
            await swarm.manual_step("nope", "host")
        await swarm.submit_message_nowait(
            swarm.build_message("Go", "start", ["host"], task_id="t-refuse")
        )
        with pytest.raises(InvalidMessageError) as info:
            await swarm.manual_step("t-refuse", "carol")
        assert info.value.field == "target"
        with pytest.raises(InvalidMessageError) as info:
            await swarm.manual_step("t-refuse", "host", response_type="shout")  # type: ignore[arg-type]
        assert info.value.field == "response_type"
        with pytest.raises(InvalidMessageError) as info:
            await swarm.manual_step("t-refuse", "host", dynamic_ctx_ratio=0.5)
        assert info.value.field == "dynamic_ctx_ratio"
    finally:
        await swarm.shutdown()


async def test_a_step_waits_for_the_agents_running_turn() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(_args: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        return "slow done"

    host = ScriptedAgent(
        [tc("slow"), tc("text_output", content="first"), tc("text_output", content="second")]
    )
    swarm = _swarm({"host": host, "alice": ScriptedAgent()}, slow)
    loop = asyncio.create_task(swarm.run_continuous(mode="manual"))
    try:
        await swarm.submit_message_nowait(
            swarm.build_message("Go", "start", ["host"], task_id="t-serial")
        )
        first = asyncio.create_task(swarm.manual_step("t-serial", "host"))
        await asyncio.wait_for(started.wait(), 5)  # the host's turn runs its action
        second = asyncio.create_task(swarm.manual_step("t-serial", "host", payload="again"))
        # the second step is delivered (and logged) while the host's turn still runs
        await _until(
            swarm,
            "t-serial",
            lambda t: any("again" in e.description for e in t.log.all()),
        )
        assert host.invocations == 1 and not first.done() and not second.done()
        release.set()
        assert await asyncio.wait_for(first, 5) is None  # the action's turn
        sent = await asyncio.wait_for(second, 5)
        assert host.max_running == 1
        assert sent is not None and sent["message"]["body"] in ("first", "second")
    finally:
        await swarm.shutdown()
        await asyncio.wait_for(loop, 5)
