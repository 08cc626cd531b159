"""MCP servers as tool sources: one long-lived session per declared server.

Each :class:`MCPConnection` is owned by one background task that opens the session,
lists the tools, then waits until it is told to close: the SDK's transports are anyio
task groups that must be entered and left by the same task, and calls from any task
(every caller's swarm) go through the open session concurrently. A session that dies
(the server exits, the connection drops) makes the call answer ``Error: MCP server 'x'
is unavailable: ...``; the next call opens a new session once.

:class:`MCPToolbox` starts every server of a swarm, describes each offered tool
(:class:`OfferedTool`, the action ``<server>__<tool>``) and closes the sessions. The Python
API opens a template's ``mcp_servers`` with it (:mod:`mail.api` imports this module when a
template starts its servers, not at import).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mail.errors import ConfigurationError
from mail.stdlib._settings import http_policy
from mail.stdlib.mcp._connect import describe_error, open_client, trace_meta
from mail.stdlib.mcp._render import render_call
from mail.swarms_json import MCPServerSpec, env_reference

__all__ = ["MCPConnection", "MCPToolbox", "OfferedTool", "action_name"]

logger = logging.getLogger("mail.actions")

_NOT_TOOL_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_MAX_TOOL_NAME = 64


def action_name(server: str, tool: str) -> str:
    """``<server>__<tool>``, characters other than ``A-Za-z0-9_-`` as ``_``, at most 64."""
    return _NOT_TOOL_CHAR.sub("_", f"{server}__{tool}")[:_MAX_TOOL_NAME]


class MCPConnection:
    """The session to one MCP server (see the module docstring)."""

    def __init__(self, spec: MCPServerSpec, env: Mapping[str, str]) -> None:
        self.spec = spec
        self._env = env
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None
        self._reconnect = asyncio.Lock()
        self.tools: list[Any] = []

    def _options(self) -> dict[str, Any]:
        spec = self.spec
        if spec.url is not None:
            headers = {}
            if spec.token is not None:
                headers["Authorization"] = f"Bearer {self._lookup(spec.token, 'token')}"
            options: dict[str, Any] = {"url": spec.url, "headers": headers, "timeout": spec.timeout}
            if spec.guarded:  # a swarm from an untrusted source: [stdlib.http] applies
                options["policy"] = http_policy()
            return options
        env = {k: self._lookup(v, f"env.{k}") for k, v in spec.env.items()}
        return {
            "command": spec.command,
            "args": spec.args,
            "env": env,
            "cwd": spec.cwd,
            "timeout": spec.timeout,
        }

    def _lookup(self, value: str, where: str) -> str:
        variable = env_reference(value)
        if variable is None:
            return value
        found = self._env.get(variable)
        if not found:
            raise ConfigurationError(
                f"MCP server '{self.spec.name}': {where} names ${{{variable}}}, which is not set"
            )
        return found

    async def _own(self, options: dict[str, Any]) -> None:
        try:
            async with open_client(**options) as client:
                tools: list[Any] = []
                cursor = None
                for _ in range(20):
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                self.tools, self._client = tools, client
                self._ready.set()
                await self._stop.wait()
        except Exception as e:  # noqa: BLE001  # any failure of the server or its transport
            self._failure = e
        finally:
            self._client = None
            self._ready.set()

    async def start(self) -> None:
        """Open the session and list the tools. Raises :class:`ConfigurationError`
        (one line naming the server and the reason) when that fails or times out."""
        options = self._options()  # an unset ${VAR} is reported as it is
        self._ready.clear()
        self._stop.clear()
        self._failure = None
        self._task = asyncio.get_running_loop().create_task(
            self._own(options), name=f"mcp:{self.spec.name}"
        )
        try:
            await asyncio.wait_for(self._ready.wait(), self.spec.timeout)
        except TimeoutError:
            await self.close()
            self._failure = TimeoutError()
        if self._client is None:
            reason = describe_error(self._failure) if self._failure else "the session ended"
            await self.close()
            raise ConfigurationError(
                f"MCP server '{self.spec.name}' ({self._where()}) could not be started: {reason}"
            )

    def _where(self) -> str:
        spec = self.spec
        return spec.url or " ".join([spec.command or "", *spec.args])

    @property
    def is_open(self) -> bool:
        return self._client is not None and self._task is not None and not self._task.done()

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> str:
        """Call ``tool``; its result rendered as text, or ``Error: ...``."""
        if not self.is_open:
            error = await self._reopen()
            if error:
                return error
        client = self._client
        try:
            async with asyncio.timeout(self.spec.timeout):
                result = await client.call_tool(tool, arguments, **trace_meta())
        except Exception as e:  # noqa: BLE001  # every failure becomes the agent's Error: text
            if not self.is_open or _connection_lost(e):
                self._failure = e
                await self.close(timeout=2.0)  # the next call opens a new session
                return f"Error: MCP server '{self.spec.name}' is unavailable: {describe_error(e)}"
            return (
                f"Error: MCP tool '{tool}' of server '{self.spec.name}' failed: {describe_error(e)}"
            )
        return render_call(result)

    async def _reopen(self) -> str:
        async with self._reconnect:
            if self.is_open:
                return ""
            failure = self._failure
            await self.close()
            try:
                await self.start()
            except ConfigurationError as e:
                reason = describe_error(failure) if failure else str(e)
                return f"Error: MCP server '{self.spec.name}' is unavailable: {reason}"
            logger.info("MCP server %s: reconnected", self.spec.name)
            return ""

    async def close(self, timeout: float = 5.0) -> None:
        """Close the session (the stdio server process exits); waits up to ``timeout`` s."""
        task, self._task = self._task, None
        self._stop.set()
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _connection_lost(error: BaseException) -> bool:
    text = str(error).lower()
    return "connection closed" in text or "closed" in type(error).__name__.lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferedTool:
    """A tool an agent is offered: its action name, description, input schema and the
    coroutine function that calls it (``mail.api`` makes it a ``MAILAction``)."""

    name: str
    description: str
    parameters: dict[str, Any]
    call: Callable[[dict[str, Any]], Awaitable[str]]


class MCPToolbox:
    """The started MCP servers of a swarm and the actions their tools become."""

    def __init__(self, specs: Sequence[MCPServerSpec], env: Mapping[str, str]) -> None:
        self.connections = {s.name: MCPConnection(s, env) for s in specs}
        self.actions: dict[str, list[OfferedTool]] = {}

    async def start(self) -> None:
        """Start every server at once. A required server that fails raises
        :class:`ConfigurationError` (the others are closed first); an optional one is
        left out with a warning."""
        names = list(self.connections)
        results = await asyncio.gather(
            *(c.start() for c in self.connections.values()), return_exceptions=True
        )
        failed: BaseException | None = None
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                error = (
                    result
                    if isinstance(result, ConfigurationError)
                    else ConfigurationError(f"MCP server '{name}': {describe_error(result)}")
                )
                if self.connections[name].spec.optional:
                    logger.warning("%s; its tools are left out (optional)", error)
                    self.actions[name] = []
                    continue
                failed = failed or error
                continue
            self.actions[name] = self._actions(self.connections[name])
        if failed is not None:
            await self.close()
            raise failed

    def _actions(self, connection: MCPConnection) -> list[OfferedTool]:
        spec = connection.spec
        offered = []
        for tool in connection.tools:
            if not spec.offers(tool.name):
                continue
            schema = dict(tool.input_schema or {"type": "object", "properties": {}})
            schema.setdefault("type", "object")
            description = (tool.description or "").strip() or (
                f"The tool '{tool.name}' of the MCP server '{spec.name}'."
            )
            offered.append(
                OfferedTool(
                    name=action_name(spec.name, tool.name),
                    description=description,
                    parameters=schema,
                    call=_tool_caller(connection, tool.name),
                )
            )
        return offered

    def actions_for(self, servers: Sequence[str]) -> list[OfferedTool]:
        """The offered tools of the named servers (optional failed ones: none)."""
        return [a for name in servers for a in self.actions.get(name, [])]

    async def close(self) -> None:
        """Close every session."""
        await asyncio.gather(*(c.close() for c in self.connections.values()))


def _tool_caller(
    connection: MCPConnection, tool: str
) -> Callable[[dict[str, Any]], Awaitable[str]]:
    async def call(args: dict[str, Any]) -> str:
        return await connection.call_tool(tool, dict(args))

    call.__name__ = action_name(connection.spec.name, tool)
    return call
