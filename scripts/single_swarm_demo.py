"""Run the offline demo swarm in-process and print its conversation.

    uv run python scripts/single_swarm_demo.py

The swarm comes from the repository's ``swarms.json`` (found next to this script, so the
demo runs from any directory). Its agents are scripted: no LLM, no network. The demo asks
a weather question and an arithmetic question and prints, for each, the messages the
agents exchange, the tools they call and the final answer.

The other demos import :func:`describe_event` from here to print events the same way.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mail import MAILSwarmTemplate

REPO = Path(__file__).resolve().parents[1]
SWARMS_JSON = REPO / "swarms.json"
QUESTIONS = (
    "What's the weather in Tokyo tomorrow?",
    "What is 12 * (3 + 4)?",
)
_PREVIEW = 90


def preview(text: str, limit: int = _PREVIEW) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _address(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("address", "?"))
    if isinstance(value, list):
        return ", ".join(_address(v) for v in value)
    return str(value)


def _message_line(extra: dict[str, Any]) -> str | None:
    message = (extra.get("full_message") or {}).get("message")
    if not isinstance(message, dict):
        return None
    sender = _address(message.get("sender"))
    recipient = _address(message.get("recipient") or message.get("recipients"))
    subject = str(message.get("subject", ""))
    body = preview(str(message.get("body", "")), _PREVIEW - len(subject))
    return f"✉  {sender} → {recipient}: [{subject}] {body}"


def _arguments(args: Any) -> str:
    if not isinstance(args, dict):
        return preview(json.dumps(args, ensure_ascii=False))
    return preview(", ".join(f"{k}={v!r}" for k, v in args.items()), _PREVIEW - 20)


def describe_event(event: str, data: dict[str, Any] | None) -> str | None:
    """One line a user wants to read about an event, or ``None`` to skip it.

    ``data`` is the event's ``{timestamp, description, task_id, extra_data}`` object.
    """
    data = data or {}
    description = str(data.get("description", ""))
    extra = data.get("extra_data") or {}
    if event == "new_message":
        return _message_line(extra) or f"✉  {preview(description)}"
    if event == "tool_call":
        agent = description.removeprefix("agent ").split(" called ")[0]
        name = extra.get("tool_name", "?")
        return f"🔧 {agent} calls {name}({_arguments(extra.get('tool_args', {}))})"
    if event == "action_complete":
        return f"⚙  {preview(description.replace(':', ' →', 1))}"
    if event in {"interswarm_message_sent", "interswarm_message_received"}:
        return f"🌐 {preview(description.split(':', maxsplit=1)[0])}"
    if event in {"interswarm_message_error", "agent_error", "task_error"}:
        return f"⚠  {event}: {preview(description)}"
    if event == "task_complete":
        response = data.get("response")
        return f"✅ task complete: {preview(str(response))}" if response is not None else None
    return None


async def main() -> int:
    template = MAILSwarmTemplate.from_swarm_json_file("offline", SWARMS_JSON)
    swarm = template.instantiate({}, user_id="alice")
    print(f"Swarm {template.name!r} from {SWARMS_JSON}")
    print(f"Agents: {', '.join(agent.name for agent in template.agents)}\n")
    try:
        for question in QUESTIONS:
            print(f"alice asks: {question}")
            answer, events = await swarm.post_message(question, show_events=True, timeout=30)
            for event in events or []:
                line = describe_event(str(event.event), event.data())
                if line:
                    print(f"  {line}")
            print(f"Answer: {answer['message']['body']}\n")
    finally:
        await swarm.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
