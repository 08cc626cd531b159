"""The checks a swarm definition goes through, for templates and running swarms alike."""

from __future__ import annotations

from collections.abc import Sequence

from mail.api._actions import MAILAction
from mail.api._agents import MAILAgent, MAILAgentTemplate
from mail.swarms_json import check_swarm, check_swarm_structure

__all__ = ["check_structure", "check_whole"]


def _action_names(
    agents: Sequence[MAILAgent | MAILAgentTemplate], actions: Sequence[MAILAction]
) -> list[str]:
    return [a.name for a in actions] + [x.name for a in agents for x in a.actions]


def check_structure(
    name: str,
    agents: Sequence[MAILAgent | MAILAgentTemplate],
    actions: Sequence[MAILAction],
    breakpoint_tools: Sequence[str],
    exclude_tools: Sequence[str],
) -> None:
    """What a definition says on its own (checked at load); see ``check_swarm_structure``."""
    check_swarm_structure(
        name=name,
        agents=[a.shape() for a in agents],
        action_names=_action_names(agents, actions),
        breakpoint_tools=breakpoint_tools,
        exclude_tools=exclude_tools,
    )


def check_whole(
    name: str,
    agents: Sequence[MAILAgent | MAILAgentTemplate],
    actions: Sequence[MAILAction],
    entrypoint: str,
    enable_interswarm: bool,
    breakpoint_tools: Sequence[str],
    exclude_tools: Sequence[str],
) -> None:
    """Everything, wiring included (checked when a swarm is instantiated)."""
    check_swarm(
        name=name,
        agents=[a.shape() for a in agents],
        action_names=_action_names(agents, actions),
        entrypoint=entrypoint,
        enable_interswarm=enable_interswarm,
        breakpoint_tools=breakpoint_tools,
        exclude_tools=exclude_tools,
    )
