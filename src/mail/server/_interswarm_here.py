"""Running a peer's ``/interswarm/forward`` or ``/interswarm/back`` message in this
server's runtimes (the task services call these; :mod:`mail.server._routes_interswarm`
validates the messages).

A forward runs in the runtime of the calling peer (``swarm:<token id>@<local>``); a back
message in the runtime of the task's local contributor that holds the task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mail.core.message import format_task_contributor, parse_task_contributor
from mail.db.store import CallerKey
from mail.errors import InvalidMessageError, TaskNotFoundError

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core.message import MAILInterswarmMessage
    from mail.core.tasks import MAILTask
    from mail.server._state import ServerState
    from mail.server.auth import Caller

__all__ = ["back_here", "forward_here", "local_contributors"]

#: role in a ``role:id@swarm`` contributor -> role of the caller whose runtime it is
RUNTIME_ROLES = {"admin": "admin", "user": "user", "swarm": "agent", "agent": "agent"}


def _ack(state: ServerState, caller: Caller, task: MAILTask) -> dict[str, Any]:
    # v1.3.6 names the calling peer's runner on both routes, also when /back continues a
    # task that a local user's runtime holds
    local = state.registry.local_swarm_name
    return {
        "swarm": local,
        "task_id": task.task_id,
        "status": "success",
        "local_runner": format_task_contributor("swarm", caller.id, local),
    }


async def forward_here(
    state: ServerState, caller: Caller, message: MAILInterswarmMessage
) -> dict[str, Any]:
    """Queue a forwarded message in the calling peer's runtime of this server."""
    swarm = await state.swarms.get(caller)
    return _ack(state, caller, swarm.runtime.receive_interswarm(message, "forward"))


async def back_here(
    state: ServerState, caller: Caller, message: MAILInterswarmMessage
) -> dict[str, Any]:
    """Queue a returned message in the runtime of this server that holds its task."""
    swarm = _contributor_swarm(state, message)
    return _ack(state, caller, swarm.runtime.receive_interswarm(message, "back"))


def local_contributors(state: ServerState, message: MAILInterswarmMessage) -> list[CallerKey]:
    """The runtimes (caller keys) of the task's contributors of this swarm, in order."""
    local = state.registry.local_swarm_name
    keys = []
    for contributor in message["task_contributors"]:
        role, caller_id, swarm_name = parse_task_contributor(contributor)
        if swarm_name != local:
            continue
        if role not in RUNTIME_ROLES:
            raise InvalidMessageError(f"invalid role: {role}", field="task_contributors")
        runtime_role = "swarm" if RUNTIME_ROLES[role] == "agent" else role
        keys.append(CallerKey(swarm=state.template.name, role=runtime_role, id=caller_id))
    return keys


def _contributor_swarm(state: ServerState, message: MAILInterswarmMessage) -> MAILSwarm:
    """The runtime of the task's first local contributor that holds the task."""
    local = state.registry.local_swarm_name
    task_id = message["payload"]["task_id"]
    for contributor in message["task_contributors"]:
        role, caller_id, swarm_name = parse_task_contributor(contributor)
        if swarm_name != local:
            continue
        runtime_role = RUNTIME_ROLES.get(role)
        if runtime_role is None:
            raise InvalidMessageError(f"invalid role: {role}", field="task_contributors")
        found = state.swarms.lookup(runtime_role, caller_id)
        if found is not None and task_id in found.runtime.tasks:
            return found
    raise TaskNotFoundError(task_id)
