"""Fail-over in the runtime (cluster mode's :func:`mail.server._cluster_failover.take_over`): a task
whose runtime "died" (its writes dropped from then on, its turns cancelled) is loaded from
the store by another runtime, which runs its turn again from the caller's message when
nothing in it cannot be done twice, and ends it ``interrupted`` otherwise, as a restart
would; a paused task is loaded as it was. The cluster's own tests kill real replicas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.persistence.conftest import CutStore
from tests.server.conftest import ask_human_action, scripted_template

from mail.api import MAILAction, MAILSwarm, MAILSwarmTemplate
from mail.core.tasks import TaskState
from mail.db import MemoryStore
from mail.server._cluster_failover import checkpoint, take_over
from mail.testing import ScriptedAgent, tc
from mail.testing._scripted import Incoming, ScriptedCall

pytestmark = pytest.mark.timeout(30)


def _lookup() -> MAILAction:
    def run(args: dict[str, Any]) -> str:
        return f"looked up {args.get('what')}"

    schema = {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]}
    return MAILAction("lookup", "Look something up.", schema, run)


@dataclass
class Pair:
    """Runtime A (writes through ``cut``), runtime B (same store), the worker's gate."""

    template: MAILSwarmTemplate
    inner: MemoryStore
    cut: CutStore
    gate: asyncio.Event
    built: list[MAILSwarm]

    def swarm(self, *, dying: bool) -> MAILSwarm:
        store = self.cut if dying else self.inner
        swarm = self.template.instantiate({}, user_id="u1", print_llm_streams=False, store=store)
        self.built.append(swarm)
        swarm.runtime.start()
        return swarm


def _template(gate: asyncio.Event, *, act_first: bool) -> MAILSwarmTemplate:
    def supervise(incoming: Incoming) -> ScriptedCall:
        if incoming.sender == "worker":
            return tc("task_complete", finish_message=f"done: {incoming.body}")
        if act_first and incoming.sender_type == "user":
            return tc("lookup", what=incoming.body)
        if "ask" in incoming.body and incoming.sender_type == "user":
            return tc("ask_human", question="which one?")
        return tc("send_request", target="worker", subject="job", body=incoming.body)

    def work(_incoming: Incoming) -> ScriptedCall:
        return tc("send_response", target="supervisor", subject="Re: job", body="worked")

    agents = {
        "supervisor": ScriptedAgent(rule=supervise),
        "worker": ScriptedAgent(rule=work, gate=gate),
    }
    return scripted_template(
        agents, actions=[_lookup(), ask_human_action()], breakpoint_tools=["ask_human"]
    )


@pytest.fixture
async def pair(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    gate = asyncio.Event()
    inner = MemoryStore()
    await inner.open()
    act_first = getattr(request, "param", False)
    built: list[MAILSwarm] = []
    yield Pair(_template(gate, act_first=act_first), inner, CutStore(inner), gate, built)
    for swarm in built:
        await swarm.runtime.shutdown(timeout=0.2)
    await inner.close()


async def _die(a: MAILSwarm, cut: CutStore) -> None:
    """A's process is gone: nothing more it does reaches the store."""
    await a.runtime.persisted()
    cut.cut = True
    await a.runtime.shutdown(timeout=0.0)


async def _start(a: MAILSwarm, body: str, task_id: str) -> dict[str, Any]:
    """Submit ``body`` on A as a route would: the checkpoint first."""
    message = a._user_message(body, "s", "request", None, task_id)
    point = checkpoint(a.runtime, message, None)
    await a.submit_message_nowait(message)
    return point


async def _worker_asked(a: MAILSwarm, task_id: str) -> None:
    task = a.runtime.tasks.get(task_id)
    assert task is not None
    async with asyncio.timeout(5):
        async for event in task.log.follow(0):
            if event.event == "new_message" and "worker" in event.description:
                return


async def test_a_turn_with_nothing_done_twice_runs_again_elsewhere(pair: Pair) -> None:
    a = pair.swarm(dying=True)
    point = await _start(a, "build it", "t-1")
    await _worker_asked(a, "t-1")  # the worker's turn waits at the gate
    await _die(a, pair.cut)
    seen = len(await pair.inner.load_events(a.runtime.store_key, "t-1"))

    b = pair.swarm(dying=False)
    outcome = await take_over(b.runtime, "t-1", point, by="b", was="a")
    pair.gate.set()
    final = await b.runtime.wait_for_task("t-1", timeout=5)

    assert outcome == "rerun"
    assert final["message"]["body"] == "done: worked"
    task = b.runtime.tasks.get("t-1")
    assert task is not None and task.state is TaskState.COMPLETED
    events = task.log.all()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    taken = events[seen]  # right after what A had stored
    assert taken.event == "task_taken_over"
    assert taken.extra_data == {"replica_id": "b", "previous_replica_id": "a", "from_seq": 0}
    # the caller's message is delivered again, and the supervisor's history starts over
    assert [e.event for e in events[seen + 1 : seen + 2]] == ["new_message"]
    history = b.runtime.agent_histories["t-1::supervisor"]
    assert sum(1 for m in history if "build it" in str(m.get("content", ""))) == 1


@pytest.mark.parametrize("pair", [True], indirect=True)
async def test_a_turn_whose_action_already_ran_ends_interrupted(pair: Pair) -> None:
    a = pair.swarm(dying=True)
    point = await _start(a, "the index", "t-2")
    await _worker_asked(a, "t-2")  # after the lookup action ran
    await _die(a, pair.cut)

    b = pair.swarm(dying=False)
    outcome = await take_over(b.runtime, "t-2", point, by="b", was="a")
    final = await b.runtime.wait_for_task("t-2", timeout=5)

    assert outcome == "interrupted"
    task = b.runtime.tasks.get("t-2")
    assert task is not None and task.state is TaskState.INTERRUPTED
    last = task.log.all()[-1]
    assert last.event == "task_interrupted"
    assert "replica a stopped while this task was running" in last.description
    assert "action_call" in last.description
    assert "replica a stopped" in final["message"]["body"]
    await b.runtime.persisted()
    stored = await pair.inner.load_task(b.runtime.store_key, "t-2")
    assert stored is not None and stored.state == "interrupted"


async def test_a_paused_task_is_loaded_as_it_was_and_resumes(pair: Pair) -> None:
    a = pair.swarm(dying=True)
    point = await _start(a, "ask me", "t-3")
    paused = await a.runtime.wait_for_task("t-3", timeout=5)
    assert "ask_human" in paused["message"]["body"]
    await _die(a, pair.cut)

    b = pair.swarm(dying=False)
    outcome = await take_over(b.runtime, "t-3", point, by="b", was="a")
    task = b.runtime.tasks.get("t-3")

    assert outcome == "loaded"
    assert task is not None and task.state is TaskState.WAITING_BREAKPOINT
    assert not any(e.event == "task_taken_over" for e in task.log.all())


async def test_a_task_the_store_does_not_have_is_missing(pair: Pair) -> None:
    b = pair.swarm(dying=False)
    assert await take_over(b.runtime, "nope", None, by="b", was="a") == "missing"
    assert b.runtime.tasks.get("nope") is None
