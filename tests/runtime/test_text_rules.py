"""The runtime holds text to the stores' rule (docs/http-api.md, "Text every store holds"):
a caller's message or arguments with a lone surrogate or a NUL character are refused before
anything happens; what agents, models and actions produce is cleaned (``U+FFFD``), so a task
never shows what its store would refuse. The memory store refuses such text exactly as
PostgreSQL does, so a task that slipped some through would be set aside here."""

from __future__ import annotations

from typing import Any

import pytest

from mail.core.actions import ActionCore
from mail.core.agents import AgentCore
from mail.db import MemoryStore
from mail.errors import InvalidMessageError
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


async def _store() -> MemoryStore:
    store = MemoryStore()
    await store.open()
    return store


async def test_a_message_or_arguments_the_stores_refuse_are_refused_at_once(
    make_runtime: Any, user_message: Any
) -> None:
    sup = ScriptedAgent([tc("task_complete", finish_message="done")])
    rt = make_runtime(
        {"supervisor": AgentCore(sup, [], enable_entrypoint=True, can_complete_tasks=True)},
        store=await _store(),
    )
    with pytest.raises(InvalidMessageError, match=r"^body: contains the NUL character"):
        await rt.submit(user_message("a\x00b", "t1"))
    with pytest.raises(InvalidMessageError, match=r"^subject: contains a lone surrogate"):
        await rt.submit(user_message("fine", "t2", subject="\ud800"))
    with pytest.raises(InvalidMessageError, match=r"^kwargs\.notes\[1\]: contains the NUL"):
        await rt.submit(user_message("fine", "t3"), notes=["ok", "\x00"])
    assert [t.task_id for t in rt.tasks] == []  # nothing was opened
    assert sup.invocations == 0


async def test_what_agents_and_actions_produce_is_cleaned_and_stored(
    make_runtime: Any, user_message: Any
) -> None:
    def lookup(_args: dict[str, Any]) -> str:
        return "raw bytes: \x00\x01 and half a pair: \udc00"

    sup = ScriptedAgent(
        [
            tc("lookup", call_id="a1", query="nul \x00 here"),
            lambda incoming: tc("task_complete", finish_message=f"{incoming.body}\x00!"),
        ]
    )
    store = await _store()
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, [], actions=["lookup"], enable_entrypoint=True, can_complete_tasks=True
            )
        },
        {"lookup": ActionCore(lookup, "lookup", {})},
        store=store,
        enable_db_agent_histories=True,
    )
    final = await rt.submit_and_wait(user_message("go", "t-clean"), timeout=10)
    body = final["message"]["body"]
    assert "\x00" not in body
    assert body.endswith("\ufffd!")
    [output] = [
        item["output"]
        for item in rt.agent_histories["t-clean::supervisor"]
        if item.get("type") == "function_call_output" and item.get("call_id") == "a1"
    ]
    assert output == "SUCCESS: raw bytes: \ufffd\x01 and half a pair: \ufffd"
    task = rt.get_task("t-clean")
    assert task is not None
    assert task.state == "completed"
    assert (await rt.settled("t-clean", 0)).committed  # stored, not set aside
    calls = [e for e in rt.get_events("t-clean") if e.event == "tool_call"]
    assert calls[0].extra_data["tool_args"] == {"query": "nul \ufffd here"}
    stored = await store.load_task(rt.store_key, "t-clean")
    assert stored is not None
    assert stored.state == "completed"
