"""``a2a_agents`` of a swarm: remote A2A agents as members, each turned into an agent
object whose factory (:func:`mail.stdlib.a2a.a2a_agent`) asks the remote agent.

``{"name", "url", "auth": {"token": "${ENV}"}, "streaming": true, "timeout": 300}``:
``name`` and ``url`` (the agent card's URL, or the base URL it is served at) are
required. The agent answers the agents that list it in their ``comm_targets``.
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import urlsplit

from mail.errors import SwarmDefinitionError

__all__ = ["A2A_FACTORY", "a2a_agent_objects"]

A2A_FACTORY = "python::mail.stdlib.a2a:a2a_agent"
_FIELDS = frozenset({"name", "url", "auth", "streaming", "timeout"})


def a2a_agent_objects(
    entries: list[Any], agents: list[dict[str, Any]], swarm: str | None
) -> list[dict[str, Any]]:
    """The agent objects of ``entries`` (checked: :class:`SwarmDefinitionError` naming the
    entry and field); ``agents`` are the swarm's other agents."""
    names = {a["name"] for a in agents}
    objects = []
    for i, entry in enumerate(entries):
        where = f"a2a_agents[{i}]"
        params = _params(entry, where, swarm)
        name = params.pop("name")
        if name in names:
            raise SwarmDefinitionError(
                f"{where}: an agent named {name!r} exists already", swarm=swarm, field="name"
            )
        names.add(name)
        objects.append(
            {
                "name": name,
                "factory": A2A_FACTORY,
                # it answers whoever may ask it
                "comm_targets": [a["name"] for a in agents if name in a["comm_targets"]],
                "agent_params": params,
            }
        )
    return objects


def _params(entry: Any, where: str, swarm: str | None) -> dict[str, Any]:
    def refuse(problem: str, field: str) -> SwarmDefinitionError:
        return SwarmDefinitionError(f"{where}: {problem}", swarm=swarm, field=field)

    if not isinstance(entry, dict):
        raise refuse(f"must be a JSON object, got {type(entry).__name__}", "a2a_agents")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise refuse("unknown field", unknown[0])
    name, url = entry.get("name"), entry.get("url")
    if not isinstance(name, str) or not name.strip():
        raise refuse("must be a non-empty string", "name")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        raise refuse(f"must be an http(s) URL, got {json.dumps(url)[:80]}", "url")
    streaming = entry.get("streaming", True)
    if not isinstance(streaming, bool):
        raise refuse("must be true or false", "streaming")
    timeout = entry.get("timeout", 300)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not (math.isfinite(timeout) and timeout > 0)
    ):
        raise refuse("must be a positive number of seconds", "timeout")
    return {"name": name, "url": url, "streaming": streaming, "timeout": float(timeout)} | _auth(
        entry.get("auth"), refuse
    )


def _auth(auth: Any, refuse: Any) -> dict[str, Any]:
    if auth is None:
        return {}
    token = auth.get("token") if isinstance(auth, dict) else None
    if not isinstance(auth, dict) or set(auth) != {"token"} or not isinstance(token, str):
        raise refuse('must be {"token": "${ENV_NAME}"}', "auth")
    if not (token.startswith("${") and token.endswith("}")):
        raise refuse("token must be a ${ENV_NAME} reference, never the token itself", "auth")
    return {"token": token}
