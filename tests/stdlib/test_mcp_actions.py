"""``mail.stdlib.mcp.actions`` against a real MCP server (the demo server over streamable
HTTP, served by uvicorn on 127.0.0.1): every action's rendering and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents
from tests.stdlib._mcp_helpers import http_demo
from tests.stdlib.conftest import UseSettings

from mail.api import MAILAction
from mail.stdlib import mcp as mcp_package
from mail.stdlib.mcp import actions
from mail.stdlib.mcp._render import render_call
from mail.utils.parsing import read_python_string

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def url(use_settings: UseSettings) -> AsyncIterator[str]:
    use_settings(http={"allow_loopback": True})  # the demo server listens on 127.0.0.1
    async with http_demo() as endpoint:
        yield endpoint


async def test_the_outbound_guard_applies_to_server_urls(use_settings: UseSettings) -> None:
    # server_url comes from the model: [stdlib.http] refuses loopback unless allowed
    use_settings()
    async with http_demo() as endpoint:
        refused = await actions.mcp_list_tools({"server_url": endpoint})
        use_settings(http={"allow_loopback": True})
        allowed = await actions.mcp_list_tools({"server_url": endpoint})
    assert refused.startswith(f"Error: MCP server at {endpoint} failed: ")
    assert "refused by the rule 'loopback'" in refused
    assert allowed.startswith("add: ")
    metadata = await actions.mcp_ping({"server_url": "http://169.254.169.254/mcp"})
    assert "refused by the rule 'link-local'" in metadata


async def test_ping_answers_pong(url: str) -> None:
    assert await actions.mcp_ping({"server_url": url}) == "pong"


async def test_list_tools_gives_name_description_and_compact_schema(url: str) -> None:
    text = await actions.mcp_list_tools({"server_url": url})

    lines = text.splitlines()
    assert lines[0] == "add: Add two integers and return their sum."
    assert lines[1].startswith('  input: {"type":"object","properties":{"a":')
    schema = json.loads(lines[1].removeprefix("  input: "))
    assert schema["required"] == ["a", "b"]
    assert "word_count: Count the words of a text." in lines
    assert "object at 0x" not in text and "Tool(" not in text


async def test_call_tool_returns_the_tools_text(url: str) -> None:
    args = {"server_url": url, "tool_name": "add", "tool_input": {"a": 2, "b": 40}}
    assert await actions.mcp_call_tool(args) == "42"
    words = {"server_url": url, "tool_name": "word_count", "tool_input": {"text": "a b c"}}
    assert await actions.mcp_call_tool(words) == "3"


async def test_call_tool_summarises_an_image(url: str) -> None:
    args = {"server_url": url, "tool_name": "tiny_image", "tool_input": {}}
    assert await actions.mcp_call_tool(args) == "[image: image/png, 67 bytes]"


async def test_a_tools_own_error_is_an_error_line(url: str) -> None:
    args = {"server_url": url, "tool_name": "fail", "tool_input": {"reason": "no luck"}}
    result = await actions.mcp_call_tool(args)

    assert result.startswith("Error: ")
    assert "no luck" in result
    assert "\n" not in result


async def test_an_unknown_tool_is_an_error_line(url: str) -> None:
    args = {"server_url": url, "tool_name": "nope", "tool_input": {}}
    result = await actions.mcp_call_tool(args)

    assert result.startswith("Error: ")
    assert "nope" in result


async def test_prompts_are_listed_and_rendered_with_their_roles(url: str) -> None:
    listed = await actions.mcp_list_prompts({"server_url": url})
    assert listed == "summarize(text*): Ask for a summary of a text."

    prompt = await actions.mcp_get_prompt(
        {"server_url": url, "prompt_name": "summarize", "arguments": {"text": "MAIL"}}
    )
    assert prompt.splitlines() == [
        "description: Ask for a summary of a text.",
        "[user] Summarize this text in one sentence: MAIL",
    ]


async def test_an_unknown_prompt_is_an_error_line(url: str) -> None:
    result = await actions.mcp_get_prompt({"server_url": url, "prompt_name": "nope"})
    assert result.startswith("Error: ")
    assert "\n" not in result


async def test_resources_are_listed_and_read_as_text(url: str) -> None:
    listed = await actions.mcp_list_resources({"server_url": url})
    assert listed == "demo://readme (readme, text/plain): What this server offers."

    text = await actions.mcp_read_resource({"server_url": url, "resource_uri": "demo://readme"})
    assert text == "The MCP demo server: add(a, b), word_count(text), fail(reason)."


@pytest.mark.parametrize(
    ("action", "extra"),
    [
        (actions.mcp_ping, {}),
        (actions.mcp_list_tools, {}),
        (actions.mcp_call_tool, {"tool_name": "add", "tool_input": {}}),
        (actions.mcp_get_prompt, {"prompt_name": "p"}),
        (actions.mcp_list_prompts, {}),
        (actions.mcp_read_resource, {"resource_uri": "demo://readme"}),
        (actions.mcp_list_resources, {}),
    ],
)
async def test_an_unreachable_server_is_one_error_line(action: MAILAction, extra: dict) -> None:
    # nothing listens on loopback port 9 (discard) here
    result = await action({"server_url": "http://127.0.0.1:9/mcp", **extra})

    assert result.startswith("Error: MCP server at http://127.0.0.1:9/mcp failed: ")
    assert "\n" not in result


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "Error: 'server_url' must be a non-empty string"),
        ({"server_url": "file:///etc/passwd"}, "Error: 'server_url' must be an http:// or https:// URL"),
        ({"server_url": "http://127.0.0.1:9/mcp", "tool_input": {}}, "Error: 'tool_name' must be a non-empty string"),
        ({"server_url": "http://127.0.0.1:9/mcp", "tool_name": "t", "tool_input": [1]}, "Error: 'tool_input' must be an object"),
    ],
)  # fmt: skip
async def test_bad_arguments_are_refused_before_connecting(args: dict, error: str) -> None:
    assert await actions.mcp_call_tool(args) == error


def test_rendering_structured_content_and_embedded_resources() -> None:
    structured = CallToolResult(content=[], structured_content={"sum": 3}, is_error=False)
    assert render_call(structured) == '{"sum":3}'
    embedded = CallToolResult(
        content=[
            TextContent(type="text", text="see"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="demo://x", mime_type="text/plain", text="body"),
            ),
        ],
        is_error=False,
    )
    assert render_call(embedded) == "see\nbody"
    failed = CallToolResult(content=[TextContent(type="text", text="bad\ninput")], is_error=True)
    assert render_call(failed) == "Error: bad input"


def test_the_actions_resolve_through_action_imports_references() -> None:
    for name in mcp_package.__all__:
        if name.startswith("mcp_"):
            found = read_python_string(f"python::mail.stdlib.mcp.actions:{name}")
            assert isinstance(found, MAILAction)
            assert found.name == name
            assert found.parameters["required"][0] == "server_url"
            assert getattr(mcp_package, name) is found


def test_without_the_mcp_package_the_actions_name_the_extra() -> None:
    probe = (
        "import asyncio, sys\n"
        "sys.modules['mcp'] = None  # as if not installed\n"
        "from mail.errors import ConfigurationError\n"
        "from mail.stdlib.mcp.actions import mcp_ping\n"
        "try:\n"
        "    asyncio.run(mcp_ping({'server_url': 'http://127.0.0.1:9/mcp'}))\n"
        "except ConfigurationError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == (
        "the MCP support needs the mcp package: pip install 'mail-swarms[mcp]'"
    )
