"""``POST /responses``: the swarm behind an OpenAI Responses-style call (debug mode only).

The request's ``input`` items become a message to the swarm, or, when they end with
``function_call_output`` items, the results of the breakpoint calls the swarm paused on;
the task id is the response id, so ``previous_response_id`` continues a task. The body is
a JSON string containing the Response JSON, as the reference server sends it.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import model_validator

from mail.core import Subject
from mail.core.message import MAILMessage, new_id, new_task_id
from mail.errors import InvalidMessageError, TaskNotFoundError
from mail.server._deps import AdminOrUser, AppState, DebugOnly
from mail.server._routing import StrictJSONRoute
from mail.server.models import JSONBody, RequestModel, TaskId

if TYPE_CHECKING:
    from mail.api import MAILSwarm

__all__ = ["create_response", "router"]

router = APIRouter(route_class=StrictJSONRoute)


class ResponsesRequest(RequestModel):
    """The parts of an OpenAI Responses request the swarm reads (``tools`` are its own)."""

    input: list[Any]
    tools: list[Any]
    previous_response_id: TaskId | None = None

    @model_validator(mode="before")
    @classmethod
    def _parameters(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for name in ("input", "tools"):
            if name not in data:
                raise ValueError(f"parameter '{name}' is required")
            if not isinstance(data[name], list):
                raise ValueError(  # noqa: TRY004  # what pydantic reports
                    f"parameter '{name}' must be a list, got {type(data[name]).__name__}"
                )
        previous = data.get("previous_response_id")
        if previous is not None and not isinstance(previous, str):
            raise ValueError("parameter 'previous_response_id' must be a string")
        return data


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _trailing(items: list[Any], kind: str) -> list[dict[str, Any]]:
    tail: list[dict[str, Any]] = []
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("type") != kind:
            break
        tail.append(item)
    return tail[::-1]


def _new_input(items: list[Any]) -> str:
    tail: list[str] = []
    for item in reversed(items):
        if (
            not isinstance(item, dict)
            or item.get("role") == "assistant"
            or item.get("type") == "function_call"
        ):
            break
        tail.append(_text(item))
    return "\n\n".join(t for t in reversed(tail) if t)


def _response(task_id: str, model: str, final: MAILMessage) -> dict[str, Any]:
    payload = final["message"]
    if payload["subject"] == Subject.BREAKPOINT_TOOL_CALL:
        output: list[dict[str, Any]] = [
            {k: call.get(k) for k in ("type", "id", "call_id", "name", "arguments", "status")}
            for call in json.loads(payload["body"])
        ]
    else:
        output = [
            {
                "type": "message",
                "id": f"msg_{new_id().replace('-', '')}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": payload["body"], "annotations": []}],
            }
        ]
    return {
        "id": task_id,
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


@router.post("/responses", include_in_schema=False)
async def responses(
    state: AppState,
    caller: AdminOrUser,
    _debug: DebugOnly,
    body: JSONBody[ResponsesRequest],
) -> JSONResponse:
    # held: an idle-runtime sweep cannot shut the swarm down under this request
    async with state.swarms.hold(caller) as swarm:
        answer = await create_response(
            swarm,
            body.input,
            previous_response_id=body.previous_response_id,
            model=state.template.name,
            timeout=state.config.server.settings.task_timeout,
        )
    return JSONResponse(json.dumps(answer))


async def create_response(
    swarm: MAILSwarm,
    input: list[Any],  # the OpenAI parameter name
    *,
    previous_response_id: str | None = None,
    model: str,
    timeout: float,
) -> dict[str, Any]:
    """Answer one OpenAI Responses-style call with ``swarm``, as ``POST /responses`` does.

    When ``input`` ends with ``function_call_output`` items they answer the breakpoint
    calls the task ``previous_response_id`` paused on; otherwise the new user text at the
    end of ``input`` is sent to the swarm, continuing that task when one is named. Waits
    at most ``timeout`` seconds and returns the Response JSON as a dict: its ``id`` is the
    task id, its ``model`` is ``model``.

    Raises :class:`~mail.errors.TaskNotFoundError` when ``previous_response_id`` names no
    task of ``swarm`` (or outputs come without it), and
    :class:`~mail.errors.InvalidMessageError` when ``input`` holds no new user text.
    """
    outputs = _trailing(input, "function_call_output")
    known = previous_response_id is not None and (
        swarm.get_task_by_id(previous_response_id) is not None
    )
    if (previous_response_id is not None or outputs) and not known:
        # someone else's response id is reported exactly like an unknown one
        raise TaskNotFoundError(previous_response_id or "<no previous_response_id>")
    task_id = previous_response_id or new_task_id()
    final = await _run(swarm, input, outputs, task_id, timeout, resume=known)
    return _response(task_id, model, final)


async def _run(
    swarm: MAILSwarm,
    items: list[Any],
    outputs: list[dict[str, Any]],
    task_id: str,
    timeout: float,
    *,
    resume: bool,
) -> MAILMessage:
    """Answer the breakpoint calls with ``outputs``, or send the new user text of ``items``
    (continuing the task when ``resume``)."""
    if outputs:
        results = [{"call_id": o.get("call_id"), "content": o.get("output", "")} for o in outputs]
        final, _ = await swarm.post_message(
            "",
            task_id=task_id,
            resume_from="breakpoint_tool_call",
            timeout=timeout,
            breakpoint_tool_call_result=results,
        )
        return final
    body = _new_input(items)
    if not body:
        raise InvalidMessageError("parameter 'input' holds no new user text")
    final, _ = await swarm.post_message(
        body,
        subject="Task Request",
        task_id=task_id,
        resume_from="user_response" if resume else None,
        timeout=timeout,
    )
    return final
