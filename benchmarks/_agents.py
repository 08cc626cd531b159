"""The benchmarks' agents: a supervisor that hands each question to a worker and completes
the task with the worker's answer, answering as an LLM would (one tool call per turn, in
the Responses API's shape), optionally after waiting as an LLM call would.

Defined here, not taken from ``mail.testing``, so that two checkouts compared run the very
same agents: only the runtime and the server differ between them.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import json
from collections.abc import Callable
from typing import Any

from mail.core.tools import AgentToolCall

#: a rule: (sender type, body) of the incoming message -> (tool name, arguments)
Rule = Callable[[str, str], tuple[str, dict[str, str]]]

# one counter for every agent of the process, so call ids never collide
_CALL_IDS = itertools.count(1)


def incoming(history: list[dict[str, Any]]) -> tuple[str, str]:
    """``(sender type, body)`` of the message that started the turn: the newest history
    item, the XML the runtime renders (the protocol's format; since the runtime escapes
    ``&``, ``<`` and ``>`` in its text, the body is unescaped, a no-op for older ones)."""
    content = history[-1]["content"]
    sender_type = content[content.index('<from type="') + 12 :].split('"', 1)[0]
    body = content[content.index("<body>") + 6 : content.rindex("</body>")]
    return sender_type, html.unescape(body)


def supervisor(sender_type: str, body: str) -> tuple[str, dict[str, str]]:
    if sender_type in ("user", "admin"):
        return "send_request", {"target": "worker", "subject": "job", "body": body}
    return "task_complete", {"finish_message": body}


def worker(sender_type: str, body: str) -> tuple[str, dict[str, str]]:
    return "send_response", {"target": "supervisor", "subject": "done", "body": "answer:" + body}


def agent(rule: Rule, delay: float = 0.0) -> Any:
    """An agent function answering by ``rule`` after waiting ``delay`` seconds (none: no
    wait)."""

    async def turn(history: list[dict[str, Any]], tool_choice: Any) -> Any:
        if delay:
            await asyncio.sleep(delay)
        name, args = rule(*incoming(history))
        call_id = f"call_{next(_CALL_IDS)}"
        item = {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(args),
            "status": "completed",
        }
        call = AgentToolCall(
            tool_name=name, tool_args=args, tool_call_id=call_id, completion={}, responses=[item]
        )
        return None, [call]

    return turn


def paced(role: str, **_params: Any) -> Any:
    """An agent factory for swarms.json (``python::benchmarks._agents:paced`` with
    ``agent_params`` ``{"role": "supervisor"}`` or ``"worker"``, the repository root on
    ``PYTHONPATH``): the agent of that rule, each turn waiting the milliseconds its task's
    body starts with (``"200:question"`` waits 200 ms per turn, ``"0:question"`` none), so
    one server runs tasks of any pace. benchmarks/cluster.py runs it."""
    rule = {"supervisor": supervisor, "worker": worker}[role]
    plain = agent(rule)

    async def turn(history: list[dict[str, Any]], tool_choice: Any) -> Any:
        _, body = incoming(history)
        delay_ms = body.removeprefix("answer:").split(":", 1)[0]
        if delay_ms.isdigit() and int(delay_ms):
            await asyncio.sleep(int(delay_ms) / 1e3)
        return await plain(history, tool_choice)

    return turn
