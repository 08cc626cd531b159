"""The shipped ``offline-slow`` swarm: scripted agents whose turns take time the way a
model's do, streaming their reasoning and the answer as ``token_delta`` events meanwhile
(so a task can be watched, and stopped, without an LLM). Asserted on the order of the
events of one streamed task, not on the clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests._servers import Server, clean_env, start_server

pytestmark = pytest.mark.timeout(120)

SWARMS = Path(__file__).parents[2] / "swarms.json"


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = clean_env() | {"MAIL_LOG_LEVEL": "WARNING"}
    with start_server("offline-slow", SWARMS, env, tmp_path_factory.mktemp("slow") / "data") as s:
        yield s


def streamed(server: Server, body: str) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of one task sent with ``stream`` and ``show_events``."""
    events: list[tuple[str, dict[str, Any]]] = []
    name = ""
    request = {"body": body, "stream": True, "show_events": True}
    headers = {"Authorization": f"Bearer {server.keys['user']}"}
    with (
        httpx.Client(timeout=60, trust_env=False) as http,
        http.stream("POST", f"{server.url}/message", json=request, headers=headers) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name != "ping":
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


def test_each_turn_streams_its_reasoning_before_its_calls_and_the_answer_before_the_end(
    slow: Server,
) -> None:
    events = streamed(slow, "What's the weather in Tokyo, and what is 2 * 3 * 4?")
    names = [name for name, _ in events]
    closing = events[-1][1]
    assert names[-1] == "task_complete" and closing["status"] == "completed"

    calls = [(i, data) for i, (name, data) in enumerate(events) if name == "tool_call"]
    assert {"supervisor", "weather", "math"} <= {d["description"].split()[1] for _, d in calls}
    previous: dict[str, int] = {}  # agent -> where its last turn ended
    for i, data in calls:
        agent = data["description"].split()[1]
        if "reasoning" not in data["extra_data"]:
            continue  # the second call of a turn: the first carries the turn's reasoning
        # the turn took time: its reasoning went out piece by piece before the call was made
        pieces = [
            d["delta"]
            for name, d in events[previous.get(agent, 0) : i]
            if name == "token_delta" and d["agent"] == agent and d["kind"] == "reasoning"
        ]
        assert len(pieces) > 1, (agent, data["extra_data"]["tool_name"])
        assert "".join(pieces) == data["extra_data"]["reasoning"]
        previous[agent] = i

    answer = [d["delta"] for name, d in events if name == "token_delta" and d["kind"] == "answer"]
    assert len(answer) > 1 and "".join(answer) == closing["response"]
    last_delta = max(i for i, (name, _) in enumerate(events) if name == "token_delta")
    final_call = next(i for i, d in calls if d["extra_data"]["tool_name"] == "task_complete")
    assert last_delta < final_call  # streamed while the supervisor's last turn ran
