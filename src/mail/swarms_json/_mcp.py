"""The ``mcp_servers`` of a swarm definition: MCP servers whose tools agents are offered.

A swarm lists servers (:class:`MCPServerSpec`, or the same as JSON objects in
``swarms.json``); an agent names the ones it uses. Each server is reached either over
streamable HTTP (``url``, with an optional bearer ``token`` given as a ``${VAR}``
reference) or by running a program that speaks MCP over stdio (``command``). Nothing here
imports the ``mcp`` SDK: see :mod:`mail.stdlib.mcp` for the sessions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, cast

from mail.errors import SwarmDefinitionError

__all__ = ["MCPServerSpec", "check_agent_mcp_servers", "env_reference", "parse_mcp_servers"]

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_FIELD = "mcp_servers"
_KEYS = frozenset(
    (
        "name",
        "url",
        "token",
        "command",
        "args",
        "env",
        "cwd",
        "allow_tools",
        "deny_tools",
        "optional",
        "timeout",
    )
)


def env_reference(value: str) -> str | None:
    """The variable ``VAR`` of a ``${VAR}`` reference, else ``None``."""
    found = _ENV_REF.match(value)
    return found.group(1) if found else None


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPServerSpec:
    """One MCP server of a swarm (a ``mcp_servers`` item of ``swarms.json``).

    Args:
        name: what agents call it (``^[A-Za-z0-9_-]+$``); its tools become the actions
            ``<name>__<tool>``.
        url: a streamable HTTP endpoint (``http://host:port/mcp``); or
        command: a program that serves MCP over stdio, run with ``args`` in ``cwd``, its
            environment the SDK's safe default plus ``env`` (values may be ``${VAR}``
            references). ``python``/``python3`` run the server's own interpreter.
        token: for ``url`` servers, a ``${VAR}`` reference to a bearer token (never the
            token itself).
        allow_tools: if given, only these tools are offered; deny_tools: never these.
        optional: a server that cannot be started is left out (warning) instead of
            failing the swarm's start.
        timeout: seconds allowed to start, and for each call.
        guarded: connect through the outbound guard of ``[stdlib.http]`` (set for the
            ``url`` servers of a swarm from an untrusted source).

    Raises :class:`SwarmDefinitionError` (from :func:`parse_mcp_servers`) when invalid.
    """

    name: str
    url: str | None = None
    token: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    allow_tools: tuple[str, ...] | None = None
    deny_tools: tuple[str, ...] = ()
    optional: bool = False
    timeout: float = 30.0
    guarded: bool = False

    def __post_init__(self) -> None:
        _check_spec(self)

    @property
    def transport(self) -> str:
        """``"http"`` or ``"stdio"``."""
        return "http" if self.url is not None else "stdio"

    def offers(self, tool: str) -> bool:
        """Whether the allow/deny lists let agents see ``tool``."""
        allowed = self.allow_tools is None or tool in self.allow_tools
        return allowed and tool not in self.deny_tools

    def to_json(self) -> dict[str, Any]:
        """The ``swarms.json`` object of this server (defaults left out)."""
        out: dict[str, Any] = {"name": self.name}
        if self.url is not None:
            out["url"] = self.url
        if self.token is not None:
            out["token"] = self.token
        if self.command is not None:
            out |= {"command": self.command, "args": list(self.args)}
        if self.env:
            out["env"] = dict(self.env)
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.allow_tools is not None:
            out["allow_tools"] = list(self.allow_tools)
        if self.deny_tools:
            out["deny_tools"] = list(self.deny_tools)
        if self.optional:
            out["optional"] = True
        if self.timeout != 30.0:  # noqa: PLR2004  # the default
            out["timeout"] = self.timeout
        return out


def _fail(reason: str, swarm: str | None, server: str | None, key: str | None = None) -> NoReturn:
    where = f"mcp_servers[{server}]" if server else _FIELD
    raise SwarmDefinitionError(reason, swarm=swarm, field=f"{where}.{key}" if key else where)


def _check_spec(spec: MCPServerSpec, swarm: str | None = None) -> None:
    name = spec.name
    if not isinstance(name, str) or not _NAME.match(name):
        _fail(f"name must match ^[A-Za-z0-9_-]+$, got {name!r}", swarm, None, "name")
    if (spec.url is None) == (spec.command is None):
        _fail("give exactly one of 'url' (streamable HTTP) or 'command' (stdio)", swarm, name)
    if spec.url is not None and not spec.url.startswith(("http://", "https://")):
        _fail("must be an http:// or https:// URL", swarm, name, "url")
    if spec.token is not None:
        if spec.url is None:
            _fail("a token is only for 'url' servers", swarm, name, "token")
        if env_reference(spec.token) is None:
            _fail("must be a ${VAR} reference, never the token itself", swarm, name, "token")
    if spec.command is None and (spec.args or spec.env or spec.cwd is not None):
        _fail("'args', 'env' and 'cwd' are only for 'command' servers", swarm, name)
    if spec.timeout <= 0:
        _fail("must be a positive number of seconds", swarm, name, "timeout")


def _strings(value: Any, swarm: str | None, server: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _fail("must be a list of strings", swarm, server, key)
    return tuple(cast(list[str], value))


def _parse_one(obj: Any, swarm: str | None) -> MCPServerSpec:
    if isinstance(obj, MCPServerSpec):
        return obj
    if not isinstance(obj, Mapping):
        _fail(f"items must be objects, got {json.dumps(obj)[:60]}", swarm, None)
    raw = cast(Mapping[str, Any], obj)
    name = raw.get("name")
    if not isinstance(name, str):
        _fail("is required (a string)", swarm, None, "name")
    unknown = sorted(k for k in raw if k not in _KEYS and not k.startswith(("$", "_")))
    if unknown:
        _fail(f"unknown field(s): {', '.join(unknown)}", swarm, name)
    for key in ("url", "token", "command", "cwd"):
        if key in raw and not isinstance(raw[key], str):
            _fail("must be a string", swarm, name, key)
    env = raw.get("env", {})
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        _fail("must be an object of strings", swarm, name, "env")
    optional = raw.get("optional", False)
    if not isinstance(optional, bool):
        _fail("must be true or false", swarm, name, "optional")
    timeout = raw.get("timeout", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        _fail("must be a number of seconds", swarm, name, "timeout")
    try:
        return MCPServerSpec(
            name=name,
            url=raw.get("url"),
            token=raw.get("token"),
            command=raw.get("command"),
            args=_strings(raw.get("args", []), swarm, name, "args"),
            env=dict(env),
            cwd=raw.get("cwd"),
            allow_tools=(
                _strings(raw["allow_tools"], swarm, name, "allow_tools")
                if "allow_tools" in raw
                else None
            ),
            deny_tools=_strings(raw.get("deny_tools", []), swarm, name, "deny_tools"),
            optional=optional,
            timeout=float(timeout),
        )
    except SwarmDefinitionError as e:
        raise e.located(swarm=swarm) from e


def parse_mcp_servers(
    items: Any, swarm: str | None = None, *, allow_commands: bool = True
) -> list[MCPServerSpec]:
    """Check a swarm's ``mcp_servers`` (objects as in ``swarms.json``, or specs).

    ``allow_commands=False`` (definitions from an untrusted source, such as ``POST
    /swarms/load``) refuses ``command`` servers (they would run a program here) and
    ``token`` references (they would send this server's environment variables to the
    URL), and marks the ``url`` servers ``guarded``. Raises :class:`SwarmDefinitionError`
    naming the swarm and the server.
    """
    if items is None:
        return []
    if not isinstance(items, Sequence) or isinstance(items, str):
        _fail("must be a list of server objects", swarm, None)
    specs = [_parse_one(item, swarm) for item in items]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            _fail("is defined twice", swarm, spec.name, "name")
        seen.add(spec.name)
        if spec.command is not None and not allow_commands:
            _fail(
                "'command' servers are not allowed in a swarm sent over HTTP "
                "(they would run a program on the server); use a 'url' server",
                swarm,
                spec.name,
                "command",
            )
        if spec.token is not None and not allow_commands:
            _fail(
                "'token' references are not allowed in a swarm sent over HTTP (they would "
                "send this server's environment variables to the URL)",
                swarm,
                spec.name,
                "token",
            )
    if not allow_commands:
        specs = [replace(spec, guarded=True) for spec in specs]
    return specs


def check_agent_mcp_servers(
    swarm: str, agent: str, names: Sequence[str], servers: Sequence[MCPServerSpec]
) -> None:
    """An agent's ``mcp_servers`` must name servers of its swarm. Raises
    :class:`SwarmDefinitionError`."""
    known = {s.name for s in servers}
    for name in names:
        if name not in known:
            defined = ", ".join(sorted(known)) or "none"
            raise SwarmDefinitionError(
                f"'{name}' is not an MCP server of the swarm (defined: {defined})",
                swarm=swarm,
                agent=agent,
                field=_FIELD,
            )
