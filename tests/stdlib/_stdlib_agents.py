"""A scripted agent for the swarms.json test, named there as
``python::tests.stdlib._stdlib_agents:fetch_and_save``: it fetches the URL the user sent
(``http_get``), saves the page (``write_file``), then completes the task with both results,
read from the ``function_call_output`` items of its history."""

from __future__ import annotations

from typing import Any

from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc


def _outputs(agent: ScriptedAgent) -> list[str]:
    history = agent.calls[-1][0]
    return [
        str(item["output"]).removeprefix("SUCCESS: ")
        for item in history
        if item.get("type") == "function_call_output"
    ]


def fetch_and_save(**_params: Any) -> ScriptedAgent:
    """The agent factory (it ignores the wiring every factory receives)."""

    def step(incoming: Incoming) -> ScriptedCall:
        outputs = _outputs(agent)
        if not outputs:
            return tc("http_get", url=incoming.body.strip())
        if len(outputs) == 1:
            return tc("write_file", path="page.txt", content=outputs[0])
        return tc("task_complete", finish_message=" | ".join(outputs))

    agent = ScriptedAgent(rule=step, record=True)
    return agent
