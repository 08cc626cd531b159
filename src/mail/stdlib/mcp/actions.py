"""Actions on MCP servers over streamable HTTP, for ``action_imports``:
``"python::mail.stdlib.mcp.actions:mcp_call_tool"``.

Each action takes ``server_url`` (an ``http(s)://`` MCP endpoint), opens a session with
the official ``mcp`` SDK, does one thing and closes it. Results are readable text: tools
as ``name: description`` lines with their input schema, call results as their text
(structured content as JSON, images and audio summarised), prompts as role-tagged
messages, resources as their text. Every failure (unreachable server, timeout, protocol
error, unknown tool, a tool's own error) is one line starting ``Error:``. Each action is
a :class:`~mail.api.MAILAction`, awaitable as a function: ``await mcp_list_tools({"server_url":
url})``. Without the ``mcp`` package the actions raise :class:`ConfigurationError`
naming ``pip install 'mail-swarms[mcp]'``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mail.api import MAILAction
from mail.errors import ConfigurationError
from mail.stdlib._settings import http_policy
from mail.stdlib.mcp._connect import describe_error, open_client, require_sdk, trace_meta
from mail.stdlib.mcp._render import (
    render_call,
    render_prompt,
    render_prompts,
    render_resource,
    render_resources,
    render_tools,
)

if TYPE_CHECKING:
    from mcp.client.client import Client

__all__ = [
    "MCP_CALL_TOOL_PARAMETERS",
    "MCP_GET_PROMPT_PARAMETERS",
    "MCP_LIST_PROMPTS_PARAMETERS",
    "MCP_LIST_RESOURCES_PARAMETERS",
    "MCP_LIST_TOOLS_PARAMETERS",
    "MCP_PING_PARAMETERS",
    "MCP_READ_RESOURCE_PARAMETERS",
    "mcp_call_tool",
    "mcp_get_prompt",
    "mcp_list_prompts",
    "mcp_list_resources",
    "mcp_list_tools",
    "mcp_ping",
    "mcp_read_resource",
]

#: Seconds allowed for one action: connecting, the request and closing.
TIMEOUT = 30.0
_MAX_PAGES = 20

_SERVER_URL = {
    "type": "string",
    "description": "The MCP server's streamable HTTP endpoint, e.g. http://host:port/mcp.",
}


def _schema(**properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"server_url": _SERVER_URL, **properties},
        "required": ["server_url", *properties],
    }


MCP_PING_PARAMETERS = _schema()
MCP_LIST_TOOLS_PARAMETERS = _schema()
MCP_LIST_PROMPTS_PARAMETERS = _schema()
MCP_LIST_RESOURCES_PARAMETERS = _schema()
MCP_CALL_TOOL_PARAMETERS = _schema(
    tool_name={"type": "string", "description": "The tool to call."},
    tool_input={"type": "object", "description": "The tool's arguments (its input schema)."},
)
MCP_GET_PROMPT_PARAMETERS = _schema(
    prompt_name={"type": "string", "description": "The prompt to get."},
)
MCP_GET_PROMPT_PARAMETERS["properties"]["arguments"] = {
    "type": "object",
    "description": "The prompt's arguments (strings), if it takes any.",
    "additionalProperties": {"type": "string"},
}
MCP_READ_RESOURCE_PARAMETERS = _schema(
    resource_uri={"type": "string", "description": "The URI of the resource to read."},
)


class _BadArgument(Exception):
    pass


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _BadArgument(f"'{key}' must be a non-empty string")
    return value.strip()


def _url(args: dict[str, Any]) -> str:
    url = _text(args, "server_url")
    if not url.startswith(("http://", "https://")):
        raise _BadArgument("'server_url' must be an http:// or https:// URL")
    return url


async def _run(args: dict[str, Any], work: Callable[[Client], Awaitable[str]]) -> str:
    """Open a session to ``args["server_url"]``, run ``work`` on it, and turn any failure
    into one ``Error: ...`` line."""
    require_sdk()
    try:
        url = _url(args)
    except _BadArgument as e:
        return f"Error: {e}"
    guard = http_policy()  # the URL is the model's: [stdlib.http] applies
    try:
        async with (
            asyncio.timeout(TIMEOUT),
            open_client(url=url, timeout=TIMEOUT, policy=guard) as client,
        ):
            return await work(client)
    except ConfigurationError:
        raise
    except Exception as e:  # noqa: BLE001  # every failure becomes the agent's Error: text
        return f"Error: MCP server at {url} failed: {describe_error(e)}"


async def _all(fetch: Callable[[str | None], Awaitable[Any]], attribute: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _checked(check: Callable[[dict[str, Any]], Any], args: dict[str, Any]) -> tuple[Any, str]:
    try:
        _url(args)  # reported first, as by the actions without other arguments
        return check(args), ""
    except _BadArgument as e:
        return None, f"Error: {e}"


async def _ping(args: dict[str, Any]) -> str:
    async def work(client: Client) -> str:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415

        # protocol 2026-07-28 dropped ping: there the handshake that opened the session
        # (server/discover) has already answered
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await client.send_ping()
        return "pong"

    return await _run(args, work)


async def _list_tools(args: dict[str, Any]) -> str:
    async def work(client: Client) -> str:
        return render_tools(await _all(lambda c: client.list_tools(cursor=c), "tools"))

    return await _run(args, work)


def _tool_call(args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    tool_input = args.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        raise _BadArgument("'tool_input' must be an object")
    return _text(args, "tool_name"), tool_input


async def _call_tool(args: dict[str, Any]) -> str:
    call, error = _checked(_tool_call, args)
    if error:
        return error

    async def work(client: Client) -> str:
        return render_call(await client.call_tool(*call, **trace_meta()))

    return await _run(args, work)


def _prompt_request(args: dict[str, Any]) -> tuple[str, dict[str, str] | None]:
    arguments = args.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise _BadArgument("'arguments' must be an object")
    values = {str(k): v if isinstance(v, str) else str(v) for k, v in arguments.items()}
    return _text(args, "prompt_name"), values or None


async def _get_prompt(args: dict[str, Any]) -> str:
    request, error = _checked(_prompt_request, args)
    if error:
        return error

    async def work(client: Client) -> str:
        return render_prompt(await client.get_prompt(*request))

    return await _run(args, work)


async def _list_prompts(args: dict[str, Any]) -> str:
    async def work(client: Client) -> str:
        return render_prompts(await _all(lambda c: client.list_prompts(cursor=c), "prompts"))

    return await _run(args, work)


async def _read_resource(args: dict[str, Any]) -> str:
    uri, error = _checked(lambda a: _text(a, "resource_uri"), args)
    if error:
        return error

    async def work(client: Client) -> str:
        return render_resource(await client.read_resource(uri))

    return await _run(args, work)


async def _list_resources(args: dict[str, Any]) -> str:
    async def work(client: Client) -> str:
        resources = await _all(lambda c: client.list_resources(cursor=c), "resources")
        return render_resources(resources)

    return await _run(args, work)


#: ``mcp_ping {server_url}`` -> ``"pong"`` once a session is open, or ``"Error: ..."``.
mcp_ping = MAILAction("mcp_ping", "Check that an MCP server answers.", MCP_PING_PARAMETERS, _ping)
#: ``mcp_list_tools {server_url}`` -> ``name: description`` lines with each input schema.
mcp_list_tools = MAILAction(
    "mcp_list_tools",
    "List an MCP server's tools, with their descriptions and input schemas.",
    MCP_LIST_TOOLS_PARAMETERS,
    _list_tools,
)
#: ``mcp_call_tool {server_url, tool_name, tool_input}`` -> the tool's result as text.
mcp_call_tool = MAILAction(
    "mcp_call_tool",
    "Call a tool of an MCP server with the given input and return its result.",
    MCP_CALL_TOOL_PARAMETERS,
    _call_tool,
)
#: ``mcp_get_prompt {server_url, prompt_name, arguments?}`` -> role-tagged messages.
mcp_get_prompt = MAILAction(
    "mcp_get_prompt",
    "Get a prompt of an MCP server (its messages), filled in with the given arguments.",
    MCP_GET_PROMPT_PARAMETERS,
    _get_prompt,
)
#: ``mcp_list_prompts {server_url}`` -> ``name(arguments): description`` lines.
mcp_list_prompts = MAILAction(
    "mcp_list_prompts",
    "List an MCP server's prompts and their arguments.",
    MCP_LIST_PROMPTS_PARAMETERS,
    _list_prompts,
)
#: ``mcp_read_resource {server_url, resource_uri}`` -> the resource's text (or a summary).
mcp_read_resource = MAILAction(
    "mcp_read_resource",
    "Read a resource of an MCP server by its URI.",
    MCP_READ_RESOURCE_PARAMETERS,
    _read_resource,
)
#: ``mcp_list_resources {server_url}`` -> ``uri (name, mime type): description`` lines.
mcp_list_resources = MAILAction(
    "mcp_list_resources",
    "List an MCP server's resources.",
    MCP_LIST_RESOURCES_PARAMETERS,
    _list_resources,
)
