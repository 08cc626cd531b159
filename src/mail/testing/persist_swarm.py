"""A scripted swarm for persistence tests, reachable from a swarms.json by ``python::`` paths.

The supervisor (``python::mail.testing.persist_swarm:supervisor``) answers a body containing
``pause`` with the breakpoint tool ``ask_human``, ``slow`` by handing the job to ``worker``
(``python::mail.testing.persist_swarm:slow_worker``, whose turn never ends), and anything
else (or a resumed breakpoint) with ``task_complete``. :func:`swarm_definition` returns the
swarms.json entry.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mail.api import MAILAction
from mail.testing._scripted import Incoming, ScriptedCall, scripted_agent, tc

__all__ = ["ask_human", "slow_worker", "supervisor", "supervisor_rule", "swarm_definition"]


def supervisor_rule(incoming: Incoming) -> ScriptedCall:
    if "pause" in incoming.body:
        return tc("ask_human", question="What is your name?")
    if "slow" in incoming.body:
        return tc("send_request", target="worker", subject="job", body=incoming.body)
    return tc("task_complete", finish_message=f"done: {incoming.body}")


def supervisor(**params: Any) -> Any:
    """The supervisor: :func:`supervisor_rule`, and ``task_complete`` once a breakpoint
    call has its result (the last history item is the tool's output)."""
    main = scripted_agent(rule=supervisor_rule, **params)
    after = scripted_agent(
        rule=lambda _incoming: tc("task_complete", finish_message="resumed after the breakpoint"),
        **params,
    )

    async def turn(history: list[dict[str, Any]], tool_choice: Any) -> Any:
        last = history[-1] if history else {}
        if last.get("type") == "function_call_output" or last.get("role") == "tool":
            return await after(history, tool_choice)
        return await main(history, tool_choice)

    return turn


def slow_worker(**_params: Any) -> Any:
    """An agent whose turns never end (until the process dies)."""

    async def turn(_history: list[dict[str, Any]], _tool_choice: Any) -> Any:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    return turn


def _never(_args: dict[str, Any]) -> str:
    raise AssertionError("a breakpoint tool is answered by the caller, not run")


ask_human = MAILAction(
    "ask_human",
    "Ask the human a question.",
    {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    _never,
)


def swarm_definition(name: str = "persist", *, histories: bool = True) -> dict[str, Any]:
    """The swarms.json entry of this swarm (``histories``: its
    ``enable_db_agent_histories``)."""
    module = "python::mail.testing.persist_swarm"
    return {
        "name": name,
        "version": "1.3.6",
        "entrypoint": "supervisor",
        "enable_db_agent_histories": histories,
        "breakpoint_tools": ["ask_human"],
        "agents": [
            {
                "name": "supervisor",
                "factory": f"{module}:supervisor",
                "comm_targets": ["worker"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "actions": ["ask_human"],
                "agent_params": {},
            },
            {
                "name": "worker",
                "factory": f"{module}:slow_worker",
                "comm_targets": ["supervisor"],
                "agent_params": {},
            },
        ],
        "actions": [],
        "action_imports": [f"{module}:ask_human"],
    }
