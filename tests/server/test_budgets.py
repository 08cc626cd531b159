"""Per-task budgets through a real server: tokens and cost from a scripted LLM server on
loopback, agent turns and actions from scripted agents, wall time from an agent that never
answers; a request may only lower the swarm's limits; the stop is a metric."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import Running, Start, make_config, read_stream, scripted_template
from tests.server.test_metrics import scrape, value
from tests.server.test_token_stream import llm_swarm

from mail.api import MAILAction, MAILSwarmTemplate
from mail.core.message import Incoming
from mail.factories._litellm import import_litellm
from mail.testing import ScriptedAgent, tc
from mail.testing.llm import StubLLMServer

pytestmark = pytest.mark.timeout(40)

#: tokens of one call to the stub LLM server (10 input, 5 output)
CALL_TOKENS = 15


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    import_litellm()  # not on the server's event loop during the test
    async with StubLLMServer() as server:
        yield server


async def send(server: Running, body: dict[str, Any]) -> dict[str, Any]:
    response = await (await server.user()).post("/message", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def task_of(server: Running, task_id: str) -> dict[str, Any]:
    response = await (await server.user()).get("/task", params={"task_id": task_id})
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def budget_errors(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The data of the task's ``task_error`` events that a budget stop stored."""
    datas = [json.loads(e["data"]) for e in record["events"] if e["event"] == "task_error"]
    return [d for d in datas if "budget" in (d.get("extra_data") or {})]


# --- tokens and cost ----------------------------------------------------------------------


async def test_total_tokens_stop_the_task_after_the_call_that_goes_past(
    start: Start, tmp_path: Path, llm: StubLLMServer
) -> None:
    async def metered(**options: Any) -> Running:
        return await start(make_config(tmp_path, metrics={"enabled": True}), **options)

    server = await llm_swarm(metered, llm, tool_format="completions", stream=False)

    answer = await send(
        server, {"body": "answer please", "task_id": "t-tokens", "budget": {"total_tokens": 20}}
    )
    record = await task_of(server, "t-tokens")
    samples = await scrape(server)

    assert answer["status"] == "failed"
    assert "budget exceeded: total_tokens 30 > 20" in answer["response"]
    assert record["budget"]["limits"] == {"total_tokens": 20}
    assert record["budget"]["spent"]["total_tokens"] == 2 * CALL_TOKENS
    assert record["budget"]["remaining"] == {"total_tokens": 0}
    assert record["budget"]["stopped_by"] == "total_tokens"
    (error,) = budget_errors(record)
    assert error["extra_data"]["budget"] == {"limit": "total_tokens", "spent": 30, "max": 20}
    # the first call's action ran; the second call's task_complete did not
    assert [e["event"] for e in record["events"]].count("action_call") == 1
    assert value(samples, "mail_budget_stops_total", swarm="scripted", limit="total_tokens") == 1


async def test_cost_from_the_price_table_of_mail_toml(
    start: Start, tmp_path: Path, llm: StubLLMServer
) -> None:
    # USD per million tokens: one call (10 input, 5 output) costs 0.01 + 0.01 = 0.02
    prices = {"stub-model": {"input": 1000.0, "output": 2000.0}}
    config = make_config(tmp_path, budget={"prices": prices})

    async def priced(**options: Any) -> Running:
        return await start(config, **options)

    server = await llm_swarm(priced, llm, tool_format="completions", stream=False)

    answer = await send(
        server, {"body": "answer please", "task_id": "t-cost", "budget": {"cost_usd": 0.03}}
    )
    record = await task_of(server, "t-cost")

    assert answer["status"] == "failed"
    assert "budget exceeded: cost_usd 0.04 > 0.03" in answer["response"]
    assert record["budget"]["spent"]["cost_usd"] == pytest.approx(0.04)


async def test_a_budget_not_reached_lets_the_task_complete(
    start: Start, llm: StubLLMServer
) -> None:
    server = await llm_swarm(start, llm, tool_format="completions", stream=False)

    answer = await send(
        server,
        {"body": "answer please", "task_id": "t-enough", "budget": {"input_tokens": 20}},
    )
    record = await task_of(server, "t-enough")

    assert answer["status"] == "completed"
    assert record["budget"]["spent"]["input_tokens"] == 20  # 20 is not more than 20
    assert record["budget"]["remaining"] == {"input_tokens": 0}
    assert "stopped_by" not in record["budget"]


# --- agent turns, actions, wall time ----------------------------------------------------


def _relay() -> MAILSwarmTemplate:
    """supervisor -> worker -> supervisor -> task_complete (three agent turns)."""

    def supervise(incoming: Incoming) -> Any:
        if incoming.subject == "::budget_warning::":
            return tc("task_complete", finish_message="finishing early")
        if incoming.sender == "worker":
            return tc("task_complete", finish_message=f"done: {incoming.body}")
        return tc("send_request", target="worker", subject="job", body=incoming.body)

    def work(_incoming: Incoming) -> Any:
        return tc("send_response", target="supervisor", subject="Re: job", body="worked")

    return scripted_template(
        {"supervisor": ScriptedAgent(rule=supervise), "worker": ScriptedAgent(rule=work)}
    )


async def test_agent_turns_stop_the_task_before_the_turn_past_the_limit(start: Start) -> None:
    server = await start(template=_relay())

    stopped = await send(server, {"body": "go", "task_id": "t-turns", "budget": {"agent_turns": 2}})
    enough = await send(server, {"body": "go", "task_id": "t-three", "budget": {"agent_turns": 3}})

    assert stopped["status"] == "failed"
    assert "budget exceeded: agent_turns 3 > 2" in stopped["response"]
    assert enough["status"] == "completed", enough
    assert (await task_of(server, "t-three"))["budget"]["spent"]["agent_turns"] == 3


async def test_the_supervisor_is_warned_at_the_threshold_and_finishes(start: Start) -> None:
    server = await start(template=_relay())

    answer = await send(
        server,
        {"body": "go", "task_id": "t-warn", "budget": {"agent_turns": 4, "warn_at": 0.5}},
    )
    record = await task_of(server, "t-warn")

    assert answer["status"] == "completed"
    assert answer["response"] == "finishing early"
    assert record["budget"]["limits"] == {"agent_turns": 4, "warn_at": 0.5}
    assert budget_errors(record) == []


async def test_actions_stop_the_task_before_the_action_past_the_limit(start: Start) -> None:
    runs: list[int] = []

    def count(args: dict[str, Any]) -> str:
        runs.append(args["n"])
        return "counted"

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    supervisor = ScriptedAgent(
        [tc("count", n=1), tc("count", n=2), tc("task_complete", finish_message="done")]
    )
    template = scripted_template(
        {"supervisor": supervisor}, actions=[MAILAction("count", "Counts.", schema, count)]
    )
    server = await start(template=template)

    answer = await send(server, {"body": "go", "task_id": "t-actions", "budget": {"actions": 1}})

    assert answer["status"] == "failed"
    assert "budget exceeded: actions 2 > 1" in answer["response"]
    assert runs == [1]


async def test_wall_time_stops_a_task_whose_agent_never_answers(start: Start) -> None:
    never = asyncio.Event()
    template = scripted_template({"supervisor": ScriptedAgent(rule=lambda _m: None, gate=never)})
    server = await start(template=template)

    answer = await send(server, {"body": "go", "task_id": "t-slow", "budget": {"seconds": 0.3}})
    record = await task_of(server, "t-slow")

    assert answer["status"] == "failed"
    assert "budget exceeded: seconds " in answer["response"]
    assert "> 0.3" in answer["response"]
    assert record["budget"]["spent"]["seconds"] > 0.3
    assert record["budget"]["stopped_by"] == "seconds"


# --- the swarm's ceiling and the request's budget -----------------------------------------


def _capped(budget: dict[str, Any]) -> MAILSwarmTemplate:
    template = _relay()
    return MAILSwarmTemplate(
        template.name,
        template.version,
        template.agents,
        template.actions,
        template.entrypoint,
        budget=budget,
    )


async def test_the_swarm_budget_applies_to_every_task(start: Start) -> None:
    server = await start(template=_capped({"agent_turns": 2}))

    answer = await send(server, {"body": "go", "task_id": "t-swarm"})
    record = await task_of(server, "t-swarm")

    assert "budget exceeded: agent_turns 3 > 2" in answer["response"]
    assert record["budget"]["limits"] == {"agent_turns": 2}


async def test_mail_toml_fills_the_limits_the_swarm_leaves_out(
    start: Start, tmp_path: Path
) -> None:
    config = make_config(tmp_path, budget={"agent_turns": 2, "actions": 7})
    server = await start(config, template=_capped({"actions": 5}))

    await send(server, {"body": "go", "task_id": "t-merged"})
    record = await task_of(server, "t-merged")

    assert record["budget"]["limits"] == {"agent_turns": 2, "actions": 5}


async def test_a_request_above_the_swarm_ceiling_is_a_400_naming_it(start: Start) -> None:
    server = await start(template=_capped({"total_tokens": 10_000, "agent_turns": 5}))
    user = await server.user()

    response = await user.post(
        "/message", json={"body": "go", "budget": {"total_tokens": 20_000, "agent_turns": 4}}
    )

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "total_tokens 20,000 > 10,000" in detail
    assert "ceiling" in detail
    assert "agent_turns" not in detail  # 4 is below 5


@pytest.mark.parametrize(
    ("budget", "words"),
    [
        ({"total_tokens": -1}, "total_tokens"),
        ({"tokens": 5}, "tokens"),
        ({"agent_turns": 2.5}, "agent_turns"),
        ({"warn_at": 1.5}, "warn_at"),
        ("lots", "budget"),
    ],
)
async def test_a_malformed_budget_is_a_400_naming_the_field(
    start: Start, budget: Any, words: str
) -> None:
    server = await start(template=_relay())

    response = await (await server.user()).post("/message", json={"body": "go", "budget": budget})

    assert response.status_code == 400, response.text
    assert words in str(response.json()["detail"])


async def test_budget_in_kwargs_is_refused(start: Start) -> None:
    server = await start(template=_relay())

    response = await (await server.user()).post(
        "/message", json={"body": "go", "kwargs": {"budget": {"actions": 1}}}
    )

    assert response.status_code == 400
    assert "budget" in str(response.json()["detail"])


async def test_a_follow_up_counts_on_and_may_lower_the_limits(start: Start) -> None:
    server = await start(template=_relay())
    await send(server, {"body": "go", "task_id": "t-follow", "budget": {"agent_turns": 5}})

    again = await send(
        server,
        {
            "body": "again",
            "task_id": "t-follow",
            "resume_from": "user_response",
            "budget": {"agent_turns": 4},
        },
    )

    # three turns, then the follow-up's first is the fourth, its second the fifth > 4
    assert "budget exceeded: agent_turns 5 > 4" in again["response"]
    record = await task_of(server, "t-follow")
    assert record["budget"]["limits"] == {"agent_turns": 4}


async def test_the_closing_event_of_a_stream_carries_the_budget(start: Start) -> None:
    server = await start(template=_relay())
    payload = {"body": "go", "stream": True, "task_id": "t-stream", "budget": {"agent_turns": 2}}

    async with (await server.user()).stream("POST", "/message", json=payload) as response:
        assert response.status_code == 200
        stream = await read_stream(response)

    final = stream[-1]
    assert final.event == "task_error"
    assert final.data["status"] == "failed"
    assert "budget exceeded: agent_turns 3 > 2" in final.data["response"]
    assert final.data["budget"]["stopped_by"] == "agent_turns"
    assert final.data["budget"]["spent"]["agent_turns"] == 3
