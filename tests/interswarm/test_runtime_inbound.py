"""``MAILRuntime.receive_interswarm`` and the two interswarm tools, without HTTP.

A recording router stands in for ``mail.net.InterswarmRouter`` (the process boundary).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.message import (
    MAILInterswarmMessage,
    MAILMessage,
    create_agent_address,
    create_user_address,
    make_interswarm_message,
    make_request,
    make_response,
    new_task_id,
)
from mail.core.runtime import MAILRuntime
from mail.core.tasks import MAILTask, TaskState
from mail.errors import (
    InvalidMessageError,
    RemoteSwarmUnavailableError,
    TaskNotFoundError,
    TaskStateError,
)
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc

WAIT = 5.0


class RecordingRouter:
    """Implements ``RemoteRouter``: records what the runtime asks of it."""

    def __init__(self, swarms: list[str] | None = None) -> None:
        self.sent: list[tuple[MAILMessage, list[str]]] = []
        self.notices: list[tuple[str, str, str, list[str]]] = []
        self.swarms = swarms or []
        self.discovered: list[list[str]] = []
        self.sent_event = asyncio.Event()

    def send(
        self, runtime: MAILRuntime, task: MAILTask, message: MAILMessage, targets: list[str]
    ) -> None:
        self.sent.append((message, targets))
        for target in targets:
            runtime.remote.spoke_to(task.task_id, target)
        self.sent_event.set()

    def notify_completion(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        agent: str,
        body: str,
        swarms: Collection[str],
    ) -> None:
        for swarm in swarms:
            contact = runtime.remote.contact(task.task_id, swarm) or "?"
            self.notices.append((swarm, contact, body, [agent]))

    def known_swarms(self) -> list[str]:
        return list(self.swarms)

    async def discover_swarms(self, discovery_urls: list[str]) -> list[str]:
        self.discovered.append(discovery_urls)
        if "http://down" in discovery_urls:
            raise RemoteSwarmUnavailableError("http://down is down")
        return ["delta"] if discovery_urls else []


MakeRuntime = Callable[..., MAILRuntime]


@pytest.fixture
async def make_runtime() -> AsyncIterator[MakeRuntime]:
    runtimes: list[MAILRuntime] = []

    def build(
        agents: dict[str, Any],
        *,
        router: Any = None,
        user_id: str = "alpha",
        user_role: str = "swarm",
        **kw: Any,
    ) -> MAILRuntime:
        cores = {
            name: AgentCore(
                fn,
                comm_targets=["supervisor@alpha", "boss@alpha", "calc@gamma", "supervisor"],
                enable_entrypoint=name == "supervisor",
                enable_interswarm=True,
                can_complete_tasks=name == "supervisor",
            )
            for name, fn in agents.items()
        }
        runtime = MAILRuntime(
            cores,
            {},
            user_id=user_id,
            user_role=user_role,
            swarm_name="beta",
            entrypoint="supervisor",
            enable_interswarm=True,
            router=router if router is not None else RecordingRouter(),
            **kw,
        )
        runtime.start()
        runtimes.append(runtime)
        return runtime

    yield build
    for runtime in runtimes:
        await runtime.shutdown(timeout=1.0)


def inbound(
    task_id: str | None = None,
    *,
    recipient: str = "supervisor@beta",
    sender: str = "supervisor@alpha",
    source: str = "alpha",
    owner: str = "user:u1@alpha",
    contributors: list[str] | None = None,
    response: bool = False,
    subject: str = "Hello",
    body: str = "hi",
) -> MAILInterswarmMessage:
    make = make_response if response else make_request
    message = make(
        task_id=task_id or new_task_id(),
        sender=create_agent_address(sender),
        recipient=create_agent_address(recipient),
        subject=subject,
        body=body,
    )
    return make_interswarm_message(
        message=message,
        source_swarm=source,
        target_swarm="beta",
        task_owner=owner,
        task_contributors=contributors if contributors is not None else [owner],
    )


def echo() -> ScriptedAgent:
    def rule(incoming: Incoming) -> ScriptedCall:
        return tc("send_response", target=incoming.sender, subject="Re", body=incoming.body)

    return ScriptedAgent(rule=rule)


async def next_send(router: RecordingRouter) -> tuple[MAILMessage, list[str]]:
    await asyncio.wait_for(router.sent_event.wait(), WAIT)
    router.sent_event.clear()
    return router.sent[-1]


# --- receiving ------------------------------------------------------------------------------------


async def test_a_forward_opens_a_task_owned_by_the_remote_caller(make_runtime: MakeRuntime) -> None:
    router = RecordingRouter()
    agent = echo()
    rt = make_runtime({"supervisor": agent}, router=router)
    message = inbound()

    task = rt.receive_interswarm(message, "forward")

    assert task.task_owner == "user:u1@alpha"
    assert task.task_contributors == ["user:u1@alpha", "swarm:alpha@beta"]
    reply, targets = await next_send(router)
    assert targets == ["supervisor@alpha"]
    assert reply["message"]["body"] == "hi"
    incoming = agent.calls[0][0][-1]["content"]
    assert '<from type="agent">supervisor@alpha</from>' in incoming
    assert [e.event for e in task.log.all()][:2] == ["interswarm_message_received", "new_message"]


async def test_the_same_message_id_is_queued_once(make_runtime: MakeRuntime) -> None:
    router = RecordingRouter()
    agent = echo()
    rt = make_runtime({"supervisor": agent}, router=router)
    message = inbound()

    first = rt.receive_interswarm(message, "forward")
    again = rt.receive_interswarm(message, "forward")
    await next_send(router)

    assert again is first
    assert [e.event for e in first.log.all()].count("interswarm_message_received") == 1
    assert agent.invocations == 1


async def test_remembered_ids_are_bounded(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"supervisor": echo()})
    rt.remote._seen_limit = 3
    for _ in range(10):
        rt.receive_interswarm(inbound(), "forward")

    assert len(rt.remote._seen) == 3


async def test_a_remote_sender_cannot_pose_as_system_or_admin(make_runtime: MakeRuntime) -> None:
    router = RecordingRouter()
    agent = echo()
    rt = make_runtime({"supervisor": agent}, router=router)
    message = inbound()
    message["payload"]["sender"] = {"address_type": "system", "address": "boss"}

    rt.receive_interswarm(message, "forward")
    _, targets = await next_send(router)

    assert targets == ["boss@alpha"]
    assert '<from type="agent">boss@alpha</from>' in agent.calls[0][0][-1]["content"]


@pytest.mark.parametrize(
    ("change", "error", "text"),
    [
        ({"recipient": "nobody@beta"}, InvalidMessageError, "agent 'nobody' is not known"),
        ({"recipient": "supervisor"}, InvalidMessageError, "names no agent of swarm 'beta'"),
        ({"recipient": "supervisor@gamma"}, InvalidMessageError, "names no agent"),
    ],
)
async def test_recipients_must_be_local_agents(
    make_runtime: MakeRuntime, change: dict[str, str], error: type[Exception], text: str
) -> None:
    rt = make_runtime({"supervisor": echo()})

    with pytest.raises(error, match=text):
        rt.receive_interswarm(inbound(**change), "forward")
    assert len(rt.tasks) == 0


async def test_wrong_target_swarm_is_refused(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"supervisor": echo()})
    message = inbound()
    message["target_swarm"] = "gamma"

    with pytest.raises(InvalidMessageError, match="target_swarm: is 'gamma'"):
        rt.receive_interswarm(message, "forward")


async def test_back_needs_a_known_task_with_the_same_owner_from_a_swarm_involved(
    make_runtime: MakeRuntime,
) -> None:
    rt = make_runtime({"supervisor": echo()})
    with pytest.raises(TaskNotFoundError):
        rt.receive_interswarm(inbound(), "back")
    task = rt.receive_interswarm(inbound(), "forward")

    with pytest.raises(TaskStateError, match="has another owner"):
        rt.receive_interswarm(inbound(task.task_id, owner="user:eve@alpha"), "back")
    with pytest.raises(TaskNotFoundError):
        rt.receive_interswarm(inbound(task.task_id, source="gamma"), "back")
    later = rt.receive_interswarm(inbound(task.task_id), "back")
    assert later is task


async def test_a_response_counts_as_the_answer_to_a_remote_request(
    make_runtime: MakeRuntime,
) -> None:
    router = RecordingRouter()
    supervisor = ScriptedAgent(
        [
            tc("send_request", target="supervisor@alpha", subject="Q", body="q"),
            tc("await_message"),
            tc("task_complete", finish_message="done"),
        ]
    )
    rt = make_runtime({"supervisor": supervisor}, router=router, user_id="u1", user_role="user")
    user = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="go",
        body="go",
    )
    waiting = asyncio.ensure_future(rt.submit_and_wait(user, timeout=WAIT))
    sent, _ = await next_send(router)
    task = rt.tasks.get(user["message"]["task_id"])
    assert task is not None and task.outstanding["supervisor"] == 1

    rt.receive_interswarm(
        inbound(
            task.task_id,
            response=True,
            owner="user:u1@beta",
            contributors=["user:u1@beta", "swarm:beta@alpha"],
        ),
        "back",
    )
    final = await waiting

    assert final["message"]["body"] == "done"
    assert task.outstanding.get("supervisor", 0) == 0
    assert sent["message"]["recipient"] == create_agent_address("supervisor@alpha")


async def test_a_reply_to_the_caller_ends_the_turn(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"supervisor": echo()}, user_id="u1", user_role="user")
    task = rt.open_remote_task(new_task_id(), "alpha")
    turn = task.wait_turn()

    rt.receive_interswarm(
        inbound(task.task_id, recipient="u1@beta", owner="user:u1@beta", response=True), "back"
    )

    answer = await asyncio.wait_for(turn, WAIT)
    assert answer["message"]["body"] == "hi"
    assert task.state is TaskState.COMPLETED
    with pytest.raises(TaskStateError, match="already exists"):
        rt.open_remote_task(task.task_id, "alpha")


# --- completion notices ---------------------------------------------------------------------------


async def test_a_notice_from_upstream_closes_the_copy_and_is_passed_on(
    make_runtime: MakeRuntime,
) -> None:
    router = RecordingRouter()
    helper = ScriptedAgent(
        [tc("send_request", target="calc@gamma", subject="Sub", body="sub")], record=False
    )
    rt = make_runtime({"supervisor": helper}, router=router)
    task = rt.receive_interswarm(inbound(), "forward")
    await next_send(router)  # our agent reached calc@gamma

    rt.receive_interswarm(
        inbound(task.task_id, response=True, subject="::task_complete::", body="all done"),
        "back",
    )

    assert task.state is TaskState.COMPLETED
    assert task.response is not None and task.response["message"]["body"] == "all done"
    assert router.notices == [("gamma", "calc", "all done", ["supervisor"])]


async def test_completing_locally_notifies_the_swarms_involved(make_runtime: MakeRuntime) -> None:
    router = RecordingRouter()
    supervisor = ScriptedAgent(
        [
            tc("send_request", target="supervisor@alpha", subject="Q", body="q"),
            tc("task_complete", finish_message="finished"),
        ]
    )
    rt = make_runtime({"supervisor": supervisor}, router=router, user_id="u1", user_role="user")
    user = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="go",
        body="go",
    )
    waiting = asyncio.ensure_future(rt.submit_and_wait(user, timeout=WAIT))
    await next_send(router)
    rt.receive_interswarm(
        inbound(
            user["message"]["task_id"],
            sender="helper@alpha",
            response=True,
            owner="user:u1@beta",
            contributors=["user:u1@beta"],
        ),
        "back",
    )

    assert (await waiting)["message"]["body"] == "finished"
    assert router.notices == [("alpha", "helper", "finished", ["supervisor"])]


# --- the tools ------------------------------------------------------------------------------------


async def test_interswarm_broadcast_reaches_every_known_swarm(make_runtime: MakeRuntime) -> None:
    router = RecordingRouter(swarms=["alpha", "gamma"])
    supervisor = ScriptedAgent(
        [tc("send_interswarm_broadcast", subject="S", body="B", target_swarms=[])]
    )
    rt = make_runtime({"supervisor": supervisor}, router=router, user_id="u1", user_role="user")
    user = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="go",
        body="go",
    )
    await rt.submit(user)

    message, targets = await next_send(router)

    assert message["msg_type"] == "broadcast"
    assert targets == ["all@alpha", "all@gamma"]
    task = rt.tasks.get(user["message"]["task_id"])
    assert task is not None
    assert task.remote_swarms == {"alpha", "gamma"}
    assert task.outstanding["supervisor"] == 2


@pytest.mark.parametrize(
    ("args", "swarms", "error"),
    [
        ({"subject": "S", "body": "B", "target_swarms": []}, [], "no remote swarm is known"),
        ({"subject": "S", "target_swarms": []}, ["alpha"], "needs string arguments"),
        ({"subject": "S", "body": "B", "target_swarms": "alpha"}, ["alpha"], "must be a list"),
    ],
)
async def test_interswarm_broadcast_errors_reach_the_agent(
    make_runtime: MakeRuntime, args: dict[str, Any], swarms: list[str], error: str
) -> None:
    supervisor = ScriptedAgent(
        [tc("send_interswarm_broadcast", **args), tc("task_complete", finish_message="x")]
    )
    rt = make_runtime(
        {"supervisor": supervisor},
        router=RecordingRouter(swarms=swarms),
        user_id="u1",
        user_role="user",
    )
    user = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="go",
        body="go",
    )

    await rt.submit_and_wait(user, timeout=WAIT)

    second_prompt = supervisor.calls[1][0][-1]["content"]
    assert "::tool_call_error::" in second_prompt
    assert error in second_prompt


async def test_discover_swarms_reports_what_it_registered(make_runtime: MakeRuntime) -> None:
    router = RecordingRouter()
    supervisor = ScriptedAgent(
        [
            tc("discover_swarms", discovery_urls=["http://up"]),
            tc("discover_swarms", discovery_urls=["http://down"]),
            tc("task_complete", finish_message="x"),
        ]
    )
    rt = make_runtime({"supervisor": supervisor}, router=router, user_id="u1", user_role="user")
    user = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="go",
        body="go",
    )

    await rt.submit_and_wait(user, timeout=WAIT)

    outputs = [
        item["output"]
        for item in supervisor.calls[-1][0]
        if item.get("type") == "function_call_output"
    ]
    assert outputs[0] == "SUCCESS: registered 1 new swarm(s): delta"
    assert outputs[1] == "ERROR: swarm discovery failed: http://down is down"
    assert router.discovered == [["http://up"], ["http://down"]]


async def test_interswarm_tools_need_interswarm(make_runtime: MakeRuntime) -> None:
    supervisor = ScriptedAgent(
        [
            tc("discover_swarms", discovery_urls=["http://up"]),
            tc("task_complete", finish_message="x"),
        ]
    )
    rt = make_runtime({"supervisor": supervisor}, user_id="u1", user_role="user")
    rt.enable_interswarm = False
    user = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="go",
        body="go",
    )

    await rt.submit_and_wait(user, timeout=WAIT)

    assert (
        "interswarm messaging is not enabled in swarm beta" in supervisor.calls[1][0][-1]["content"]
    )
