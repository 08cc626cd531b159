"""Interswarm actions: ``ping_swarm``, ``get_swarm_health`` and ``get_swarm_registry``, as
``swarms.json`` imports them (``python::mail.stdlib.interswarm.actions:ping_swarm``).

Each takes ``{url}``, the base URL of a MAIL server, and is a
:class:`~mail.api.MAILAction` that can also be awaited as a function of its arguments.
Requests go through the outbound guard with the ``[stdlib.http]`` settings, like the HTTP
actions (see :mod:`mail.stdlib.http.actions`).

Results, always a string:

* ``ping_swarm``: ``pong`` when ``GET url`` answers like a MAIL server (``name`` ``"mail"``,
  ``status`` ``"running"``, ``swarm.name`` and ``swarm.entrypoint`` strings), else
  ``Error: URL does not look like a MAIL server (...)``;
* ``get_swarm_health``: the ``status`` of ``GET url/health`` (``healthy``, ...);
* ``get_swarm_registry``: one ``swarm_name@base_url`` line per swarm of ``GET url/swarms``
  (empty when it lists none);
* ``Error: ...`` for a refusal, a failure, a non-2xx status or an answer of the wrong shape.
"""

from __future__ import annotations

import json
from typing import Any

from mail.stdlib._kit import ActionFailed, define, schema, text_arg
from mail.stdlib._outbound import fetch
from mail.stdlib._settings import current

__all__ = ["SWARM_URL_PARAMETERS", "get_swarm_health", "get_swarm_registry", "ping_swarm"]

#: ``{url}``: the base URL of a MAIL server, the arguments of every interswarm action.
SWARM_URL_PARAMETERS = schema(
    {"url": {"type": "string", "description": "The base URL of a MAIL server."}}, ["url"]
)


async def _get_json(args: dict[str, Any], path: str) -> tuple[str, Any]:
    base = text_arg(args, "url").strip().rstrip("/")
    url = f"{base}{path}"
    response = await fetch("GET", url, current().http, headers={"Accept": "application/json"})
    if not response.ok:
        raise ActionFailed(f"GET {url} answered HTTP {response.status} {response.reason}")
    try:
        return url, json.loads(response.text)
    except ValueError:
        raise ActionFailed(f"GET {url} did not answer with JSON") from None


def _mail_mismatch(info: Any) -> str | None:
    if not isinstance(info, dict):
        return "the answer is not a JSON object"
    if info.get("name") != "mail":
        return "its 'name' is not 'mail'"
    if info.get("status") != "running":
        return "its 'status' is not 'running'"
    swarm = info.get("swarm")
    if not isinstance(swarm, dict) or not all(
        isinstance(swarm.get(key), str) for key in ("name", "entrypoint")
    ):
        return "it names no swarm with a name and an entrypoint"
    return None


async def _ping(args: dict[str, Any]) -> str:
    url, info = await _get_json(args, "")
    mismatch = _mail_mismatch(info)
    if mismatch is not None:
        raise ActionFailed(f"{url} does not look like a MAIL server ({mismatch})")
    return "pong"


async def _health(args: dict[str, Any]) -> str:
    url, health = await _get_json(args, "/health")
    status = health.get("status") if isinstance(health, dict) else None
    if not isinstance(status, str):
        raise ActionFailed(f"GET {url} answered without a 'status'")
    return status


async def _registry(args: dict[str, Any]) -> str:
    url, listing = await _get_json(args, "/swarms")
    swarms = listing.get("swarms") if isinstance(listing, dict) else None
    if not isinstance(swarms, list):
        raise ActionFailed(f"GET {url} answered without a 'swarms' list")
    return "\n".join(
        f"{swarm.get('swarm_name')}@{swarm.get('base_url')}"
        for swarm in swarms
        if isinstance(swarm, dict)
    )


ping_swarm = define(
    "ping_swarm",
    "Check that a URL is a running MAIL server; returns 'pong'.",
    SWARM_URL_PARAMETERS,
    _ping,
)
get_swarm_health = define(
    "get_swarm_health",
    "Return the health status of the MAIL server at a URL.",
    SWARM_URL_PARAMETERS,
    _health,
)
get_swarm_registry = define(
    "get_swarm_registry",
    "List the swarms the MAIL server at a URL knows, one 'name@base_url' per line.",
    SWARM_URL_PARAMETERS,
    _registry,
)
