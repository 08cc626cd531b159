"""Two LiteLLM agents in a real MAILRuntime, answered by the stub LLM: a supervisor on the
Responses API delegates to a worker on chat completions, then completes the task."""

from __future__ import annotations

import json
from typing import Any

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.message import create_agent_address, create_user_address, make_request
from mail.core.runtime import MAILRuntime
from mail.factories import LiteLLMAgentFunction, LiteLLMSupervisorFunction
from mail.testing.llm import StubLLMServer, StubReply

SUPERVISOR_PROMPT = "You are the supervisor."
WORKER_PROMPT = "You are the worker."


def last_user_text(items: list[dict[str, Any]]) -> str:
    return next(str(i["content"]) for i in reversed(items) if i.get("role") == "user")


def answer(request: dict[str, Any]) -> StubReply:
    """Play both agents, telling them apart by their system prompt."""
    if request.get("instructions") == SUPERVISOR_PROMPT:
        incoming = last_user_text(request["input"])
        if '<from type="user">' in incoming:
            return StubReply.tool_calls(
                ("send_request", {"target": "worker", "subject": "Sum", "body": "2 + 40?"}),
                reasoning="The worker does arithmetic.",
            )
        body = incoming.split("<body>")[1].split("</body>")[0]
        return StubReply.tool_calls(("task_complete", {"finish_message": f"The sum is {body}."}))
    assert request["messages"][0] == {"role": "system", "content": WORKER_PROMPT}
    return StubReply.tool_calls(
        ("send_response", {"target": "supervisor", "subject": "Re: Sum", "body": "42"}),
        text="Easy.",
    )


async def test_supervisor_and_worker_complete_a_task_through_the_stub() -> None:
    async with StubLLMServer(rule=answer) as llm:
        direct = {"use_proxy": False, "api_base": llm.base_url, "api_key": "k"}
        supervisor = LiteLLMSupervisorFunction(
            "supervisor", ["worker"], [], "openai/stub-model", SUPERVISOR_PROMPT, **direct
        )
        worker = LiteLLMAgentFunction(
            "worker",
            ["supervisor"],
            [],
            "openai/stub-model",
            WORKER_PROMPT,
            tool_format="completions",
            **direct,
        )
        runtime = MAILRuntime(
            agents={
                "supervisor": AgentCore(
                    supervisor, ["worker"], enable_entrypoint=True, can_complete_tasks=True
                ),
                "worker": AgentCore(worker, ["supervisor"], tool_format="completions"),
            },
            actions={},
            user_id="alice",
            swarm_name="demo",
            entrypoint="supervisor",
        )
        runtime.start()
        try:
            question = make_request(
                task_id="t-llm",
                sender=create_user_address("alice"),
                recipient=create_agent_address("supervisor"),
                subject="New Message",
                body="What is 2 + 40?",
            )
            final = await runtime.submit_and_wait(question, timeout=30)
        finally:
            await runtime.shutdown(timeout=5.0)

    assert final["message"]["body"] == "The sum is 42."
    assert [r.api for r in llm.requests] == ["responses", "chat", "responses"]
    assert llm.unscripted == 0

    # the supervisor's second request carries its first turn and the tool result
    items = llm.requests[2].json["input"]
    call = next(i for i in items if i.get("type") == "function_call")
    result = next(i for i in items if i.get("type") == "function_call_output")
    assert call["name"] == "send_request"
    assert result == {
        "type": "function_call_output",
        "call_id": call["call_id"],
        "output": "SUCCESS: message sent",
    }

    # histories hold the conversation only: the system prompt is sent, never stored
    sup_history = runtime.agent_histories["t-llm::supervisor"]
    work_history = runtime.agent_histories["t-llm::worker"]
    assert sup_history[0]["role"] == "user"
    assert [m.get("role") for m in work_history] == ["user", "assistant", "tool"]
    assert work_history[1]["tool_calls"][0]["function"]["name"] == "send_response"
    assert work_history[2]["tool_call_id"] == work_history[1]["tool_calls"][0]["id"]

    # reasoning from the model reaches the event log
    events = runtime.get_events("t-llm")
    tool_calls = [e for e in events if e.event == EventName.TOOL_CALL]
    first = tool_calls[0].extra_data
    assert (first["tool_name"], first["reasoning"]) == (
        "send_request",
        "The worker does arithmetic.",
    )
    assert json.loads(json.dumps(first["tool_args"]))["target"] == "worker"
    assert any(e.extra_data.get("preamble") == "Easy." for e in tool_calls)
