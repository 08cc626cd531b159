"""``map/send``: a message to a registered agent, or into the caller's swarm.

``to`` is one of the official SDK's addresses: an agent id (``"a1"``, ``"agent:a1"``),
``{agent}`` or ``{agents: [...]}`` (other kinds, scopes, roles, broadcast, hierarchy,
are refused with -32602). An address naming registered agents delivers
``{id, from, to, timestamp, payload, meta}`` (the SDK's ``Message``) to each as a
``map/message`` notification on the socket that registered it, and answers ``{messageId,
delivered}``; ``from`` is the sender's participant id. An address naming an agent of the
swarm (or none: its entrypoint) runs ``payload`` as a ``POST /message`` would (a user or
admin key): a JSON object with a ``/message`` field is such a body, text is its
``body``, any other JSON value is sent as its JSON text. An id no agent has: 2001.

``meta.mail`` records the message as a turn of that conversation: by the sender, before
delivery, for a registered agent; by the swarm's interception for a task.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from typing import Any

from pydantic import ValidationError

from mail.conversations import (
    Actor,
    InvalidParamsError,
    MapSend,
    check_params,
    describe,
    problems,
)
from mail.conversations.models import now_ms
from mail.core.message import new_task_id
from mail.server._map_registry import AGENT_PREFIX, swarm_agents
from mail.server._map_rpc import AGENT_NOT_FOUND, AUTH_PERMISSION_DENIED, INTERNAL, RpcError
from mail.server._routes_message import send_message
from mail.server._state import ServerState
from mail.server.auth import Caller
from mail.server.models import MessageRequest

__all__ = ["send"]

_ADDRESS_KEYS = ("agent", "agents")


async def send(state: ServerState, caller: Caller, actor: Actor, params: Any) -> Any:
    """Answer ``map/send`` (see the module docstring)."""
    check_params(MapSend, params)
    ids = _addressed(params.get("to"))
    if ids is None or (len(ids) == 1 and _in_swarm(state, ids[0])):
        return await _to_swarm(state, caller, actor, params, ids[0] if ids else None)
    return await _to_agents(state, actor, params, ids)


def _addressed(to: Any) -> list[str] | None:
    """The agent ids ``to`` names (``None``: the swarm's entrypoint)."""
    if to is None:
        return None
    if isinstance(to, str):
        return [to.removeprefix(AGENT_PREFIX)]
    unknown = sorted(set(to) - set(_ADDRESS_KEYS))
    if unknown:
        raise InvalidParamsError(
            f"params.to: addresses by {', '.join(unknown)} are not delivered here: give an "
            "agent id, {agent: id} or {agents: [ids]}",
            field="to",
        )
    named = [to["agent"]] if to.get("agent") is not None else to.get("agents") or []
    if not named:
        raise InvalidParamsError(
            "params.to: names no agent (agent: id, or agents: [ids])", field="to"
        )
    return [agent_id.removeprefix(AGENT_PREFIX) for agent_id in named]


def _in_swarm(state: ServerState, agent_id: str) -> bool:
    return agent_id not in state.map_agents.agents and any(
        a["id"] == agent_id for a in swarm_agents(state.template)
    )


async def _to_agents(
    state: ServerState, actor: Actor, params: dict[str, Any], ids: list[str]
) -> dict[str, Any]:
    registered = state.map_agents.agents
    missing = [agent_id for agent_id in ids if agent_id not in registered]
    if missing:
        raise RpcError(
            AGENT_NOT_FOUND,
            f"no agent {missing[0]!r} to deliver to: neither registered here (map/agents/list) "
            f"nor an agent of swarm {state.template.name!r}"
            + (" (a message to the swarm names one agent)" if len(ids) > 1 else ""),
            {"name": "AGENT_NOT_FOUND", "agentId": missing[0]},
        )
    meta = params.get("meta") or {}
    answer: dict[str, Any] = {"messageId": f"msg-{secrets.token_hex(8)}"}
    if meta.get("mail") is not None:
        answer["turnId"] = await _record(state, actor, params["payload"], meta["mail"])
    message = {
        "id": answer["messageId"],
        "from": actor.participant_id,
        "to": params["to"],
        "timestamp": now_ms(),
        "payload": params.get("payload"),
        "meta": meta,
    }
    note = {"jsonrpc": "2.0", "method": "map/message", "params": {"message": message}}
    for agent_id in dict.fromkeys(ids):
        await registered[agent_id].notify(note)
    return {**answer, "delivered": list(dict.fromkeys(ids))}


async def _record(state: ServerState, actor: Actor, payload: Any, mail: dict[str, Any]) -> str:
    """Record a message to agents as the sender's turn of ``mail.conversationId``."""
    service = state.conversations
    if service is None:
        raise RpcError(10010, "MAP Mail is not enabled on this server")
    text = isinstance(payload, str)
    turn = {
        **mail,
        "contentType": "text" if text else "data",
        "content": {"text": payload} if text else payload,
    }
    return str((await service.call("mail/turn", actor, turn))["turn"]["id"])


async def _to_swarm(
    state: ServerState, caller: Caller, actor: Actor, params: dict[str, Any], entrypoint: str | None
) -> dict[str, Any]:
    """``payload`` into the caller's swarm; ``meta.mail`` records it as a turn."""
    if caller.role == "agent":
        raise RpcError(
            AUTH_PERMISSION_DENIED,
            "an agent key sends to registered agents; a task of the swarm is started with a "
            "user or admin key",
        )
    checked = check_params(MapSend, params)
    request = _message(checked, entrypoint)
    task_id = str(request.task_id)
    mail = checked.meta.mail if checked.meta is not None else None
    interceptor = state.interceptor
    bound = interceptor.bound(actor.key, task_id) if interceptor is not None else []
    if interceptor is not None and mail is not None and mail.conversationId not in bound:
        # (bound: the binding records it)
        interceptor.expect(actor.key, task_id, mail.conversationId, params["meta"]["mail"])
    try:
        answer = await send_message(state, caller, request)
    finally:
        if interceptor is not None:
            interceptor.forget(actor.key, task_id)
    if mail is not None and interceptor is not None:
        with contextlib.suppress(TimeoutError):  # the turn is late: the answer is not
            await asyncio.wait_for(interceptor.drain(), timeout=5.0)
    if not isinstance(answer, dict):
        raise RpcError(INTERNAL, "the server is shutting down")
    return {"taskId": task_id, "response": answer["response"], "status": answer["status"]}


def _message(checked: MapSend, entrypoint: str | None) -> MessageRequest:
    """The ``POST /message`` request of a ``map/send`` (its ``payload``, the addressed
    agent as the entrypoint unless it names one, a new task id unless it has one)."""
    given = checked.payload
    if isinstance(given, dict) and (not given or set(given) & set(MessageRequest.model_fields)):
        payload: dict[str, Any] = dict(given)
    elif isinstance(given, str):
        payload = {"body": given}
    elif given is None:
        payload = {}
    else:
        payload = {"body": json.dumps(given, ensure_ascii=False)}
    payload |= {"stream": False, "show_events": False}
    if entrypoint is not None:
        payload.setdefault("entrypoint", entrypoint)
    payload["task_id"] = payload.get("task_id") or new_task_id()
    try:
        return MessageRequest.model_validate(payload)
    except ValidationError as e:
        found = problems(e)
        field = f"payload.{found[0][0]}".rstrip(".")
        raise InvalidParamsError(describe(found, "params.payload"), field=field) from None
