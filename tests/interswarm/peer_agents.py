"""Agents of the peer swarm that :mod:`tests.interswarm.peer_process` serves in a real
``mail server`` process (``python::tests.interswarm.peer_agents:...`` in its swarms.json)."""

from __future__ import annotations

import asyncio
from typing import Any

from mail.testing._scripted import Incoming, ScriptedCall, scripted_agent, tc


def _answer(incoming: Incoming) -> ScriptedCall:
    if "slow" in incoming.body:
        return tc("await_message", reason="never answers")
    return tc(
        "send_response", target=incoming.sender, subject="Re", body=f"sunny in {incoming.body}"
    )


def weather(**params: Any) -> Any:
    """Answers whoever asked with ``sunny in <body>``; a body with ``hang`` makes its
    turn last until the process dies."""
    answer = scripted_agent(rule=_answer, **params)

    async def turn(history: list[dict[str, Any]], tool_choice: Any) -> Any:
        if any("hang" in str(item.get("content", "")) for item in history[-1:]):
            await asyncio.sleep(3600)
        return await answer(history, tool_choice)

    return turn


def supervisor(**params: Any) -> Any:
    """Completes whatever it gets."""
    return scripted_agent(rule=lambda _m: tc("task_complete", finish_message="-"), **params)


def _ask(incoming: Incoming) -> ScriptedCall:
    if incoming.sender_type == "user":
        return tc("send_request", target="weather@beta", subject="Forecast", body=incoming.body)
    if incoming.sender_type == "system":
        return tc("task_complete", finish_message=f"failed: {incoming.body}")
    return tc("task_complete", finish_message=f"{incoming.sender} says: {incoming.body}")


def asking(**params: Any) -> Any:
    """Asks ``weather@beta`` for the user's body; completes with the answer (or the error)."""
    return scripted_agent(rule=_ask, **params)
