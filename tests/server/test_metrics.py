"""``GET /metrics`` (``[server.metrics]``): real servers run real tasks, and the scrape is
read with prometheus_client's own text parser."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests._servers import free_port
from tests.server.conftest import (
    Running,
    Start,
    frames,
    gated_swarm,
    make_config,
    scripted_template,
    within,
)
from tests.server.test_token_stream import USAGE_OF_TWO_CALLS, llm_swarm

from mail.api import MAILAction
from mail.factories._litellm import import_litellm
from mail.testing import ScriptedAgent, tc
from mail.testing.llm import StubLLMServer

pytestmark = pytest.mark.timeout(40)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape: (name, labels) -> value."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def scrape(server: Running) -> Samples:
    response = await (await server.admin()).get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return parse(response.text)


async def metered(start: Start, tmp_path: Path, **options: Any) -> Running:
    return await start(make_config(tmp_path, metrics={"enabled": True}), **options)


async def test_a_task_moves_the_task_action_agent_and_store_counters(
    start: Start, tmp_path: Path
) -> None:
    server = await metered(start, tmp_path)
    before = await scrape(server)

    answer = await (await server.user()).post("/message", json={"body": "what is 6*7?"})
    assert answer.status_code == 200, answer.text
    after = await scrape(server)

    swarm = {"swarm": "offline"}
    assert value(before, "mail_tasks_started_total", **swarm) == 0
    assert value(after, "mail_tasks_started_total", **swarm) == 1
    assert value(after, "mail_tasks_finished_total", status="completed", **swarm) == 1
    assert value(after, "mail_task_duration_seconds_count", status="completed", **swarm) == 1
    assert value(after, "mail_tasks_running", **swarm) == 0
    assert value(after, "mail_action_calls_total", action="calculate_expression", **swarm) == 1
    assert value(after, "mail_action_errors_total", action="calculate_expression", **swarm) == 0
    # the supervisor, then math (its action, then its answer), then the supervisor again
    assert value(after, "mail_agent_turn_duration_seconds_count", agent="math", **swarm) >= 2
    assert value(after, "mail_agent_turn_duration_seconds_count", agent="supervisor", **swarm) >= 2
    assert value(after, "mail_store_commit_seconds_count") >= 1
    assert ("mail_tasks_unsaved", frozenset()) in after
    assert after[("mail_queue_depth", frozenset())] == 0  # every message routed


async def test_running_tasks_and_open_streams_while_a_task_waits(
    start: Start, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await metered(start, tmp_path, template=template)
    swarm = {"swarm": "scripted"}
    user = await server.user()
    payload = {"body": "job", "stream": True, "task_id": "t-gated"}
    async with user.stream("POST", "/message", json=payload) as response:
        assert response.status_code == 200
        stream = frames(response)
        await within(anext(stream))  # the task runs, its stream is open
        during = await scrape(server)
        gate.set()
        async for _frame in stream:
            pass  # to the end: the task completed
    after = await scrape(server)

    assert value(during, "mail_tasks_running", **swarm) == 1
    assert value(during, "mail_streams_open", kind="sse") == 1
    assert value(after, "mail_tasks_running", **swarm) == 0
    assert value(after, "mail_tasks_finished_total", status="completed", **swarm) == 1


async def test_an_action_that_raises_and_an_unknown_action_count_as_errors(
    start: Start, tmp_path: Path
) -> None:
    def boom(_args: dict[str, Any]) -> str:
        raise RuntimeError("boom")

    schema = {"type": "object", "properties": {}}
    supervisor = ScriptedAgent(
        [tc("boom"), tc("invented_action"), tc("task_complete", finish_message="done")]
    )
    template = scripted_template(
        {"supervisor": supervisor}, actions=[MAILAction("boom", "Fails.", schema, boom)]
    )
    server = await metered(start, tmp_path, template=template)

    answer = await (await server.user()).post("/message", json={"body": "go"})
    assert answer.status_code == 200, answer.text
    after = await scrape(server)

    swarm = {"swarm": "scripted"}
    assert value(after, "mail_action_calls_total", action="boom", **swarm) == 1
    assert value(after, "mail_action_errors_total", action="boom", **swarm) == 1
    # a name the swarm does not define is no label value of its own
    assert value(after, "mail_action_errors_total", action="(unknown)", **swarm) == 1


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    import_litellm()  # not on the server's event loop during the test
    async with StubLLMServer() as server:
        yield server


async def test_model_calls_and_tokens_by_model(
    start: Start, tmp_path: Path, llm: StubLLMServer
) -> None:
    async def metered_start(**options: Any) -> Running:
        return await metered(start, tmp_path, **options)

    server = await llm_swarm(metered_start, llm, tool_format="completions", stream=False)

    answer = await (await server.user()).post("/message", json={"body": "answer please"})
    assert answer.status_code == 200, answer.text
    after = await scrape(server)

    model = {"model": "openai/stub-model"}
    assert value(after, "mail_llm_calls_total", **model) == 2
    for key, kind in (("input_tokens", "input"), ("output_tokens", "output")):
        assert value(after, "mail_llm_tokens_total", kind=kind, **model) == USAGE_OF_TWO_CALLS[key]
    assert value(after, "mail_action_calls_total", action="double", swarm="scripted") == 1


async def test_only_an_admin_reads_the_metrics(start: Start, tmp_path: Path) -> None:
    server = await metered(start, tmp_path)

    user = await (await server.user()).get("/metrics")
    anon = await (await server.anon()).get("/metrics")

    # a key of another role is a 401 too, as on every route (CONTRACT 1.4: never 403)
    assert (user.status_code, user.json()["detail"]) == (
        401,
        "invalid role: this route needs admin",
    )
    assert anon.status_code == 401
    assert anon.json()["detail"]


async def test_metrics_off_is_a_404_that_says_how_to_turn_them_on(offline: Running) -> None:
    response = await (await offline.admin()).get("/metrics")

    assert response.status_code == 404
    assert "[server.metrics] enabled = true" in response.json()["detail"]
    assert offline.state.metrics is None


async def test_the_separate_listener_serves_them_without_a_key(
    start: Start, tmp_path: Path
) -> None:
    port = free_port()
    config = make_config(tmp_path, metrics={"enabled": True, "port": port})
    server = await start(config)
    await (await server.user()).post("/message", json={"body": "what is 6*7?"})

    async with httpx.AsyncClient() as client:
        response = await within(client.get(f"http://127.0.0.1:{port}/metrics"))

    assert response.status_code == 200
    samples = parse(response.text)
    assert value(samples, "mail_tasks_started_total", swarm="offline") == 1
    assert ("mail_tasks_unsaved", frozenset()) in samples
    assert ("mail_queue_depth", frozenset()) in samples  # read on the loop from the thread


async def test_an_undelivered_interswarm_message_counts_by_peer_and_outcome(
    start: Start, tmp_path: Path
) -> None:
    supervisor = ScriptedAgent(
        [
            tc("send_request", target="helper@nowhere", subject="q", body="hello?"),
            tc("task_complete", finish_message="done without it"),
        ]
    )
    template = scripted_template(
        {"supervisor": supervisor}, targets={"supervisor": ["helper@nowhere"]}
    )
    template.enable_interswarm = True
    server = await metered(start, tmp_path, template=template)

    answer = await (await server.user()).post("/message", json={"body": "go"})
    assert answer.status_code == 200, answer.text
    after = await scrape(server)

    # no registered swarm of that name: its name is no label value
    unknown = {"peer": "(unknown)", "outcome": "unavailable"}
    assert value(after, "mail_interswarm_deliveries_total", **unknown) == 1
