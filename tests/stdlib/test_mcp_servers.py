"""``mcp_servers``: MCP servers as tool sources of a swarm, in swarms.json and the Python
API, against real MCP servers (the demo server over stdio, and over streamable HTTP)."""

from __future__ import annotations

import copy
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tests.stdlib._mcp_helpers import PID_SCRIPT, STDIO_DEMO, SWARMS, http_demo

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.errors import ConfigurationError, SwarmDefinitionError
from mail.examples.mcp_demo.agents import McpDemoFunction
from mail.stdlib.mcp import MCPServerSpec

pytestmark = pytest.mark.timeout(45)


def demo_swarm(**servers: Any) -> dict[str, Any]:
    """The shipped mcp-demo swarm plus a second agent that declares no server; the calc
    server's definition updated with ``servers``."""
    data = {s["name"]: s for s in json.loads(SWARMS.read_text())}["mcp-demo"]
    swarm = copy.deepcopy(data)
    swarm["mcp_servers"] = [{**STDIO_DEMO, **servers}]
    swarm["agents"][0]["comm_targets"] = ["math"]
    swarm["agents"].append(
        {
            "name": "math",
            "factory": "python::mail.examples.offline.agents:OfflineMathFunction",
            "comm_targets": ["assistant"],
            "agent_params": {},
        }
    )
    return swarm


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in tools]


async def ask(template: MAILSwarmTemplate, question: str, user: str = "u1") -> str:
    swarm = template.instantiate({}, user_id=user)
    try:
        final, _ = await swarm.post_message(question, timeout=30)
    finally:
        await swarm.shutdown()
    body: str = final["message"]["body"]
    return body


async def test_the_shipped_mcp_demo_swarm_answers_with_the_tools_result() -> None:
    template = MAILSwarmTemplate.from_swarm_json_file("mcp-demo", SWARMS)
    async with template:
        assert await ask(template, "add 2 and 40") == "The MCP tool calc__add answered: 42"
        counted = await ask(template, "count the words: one two three", user="u2")
        assert counted == "The MCP tool calc__word_count answered: 3"
        other = await ask(template, "what is the capital of France?", user="u3")
        assert other.startswith("None of my tools fits that.")


async def test_tools_are_offered_to_the_declaring_agent_only_with_their_schemas() -> None:
    template = MAILSwarmTemplate.from_swarms_json(demo_swarm(deny_tools=["fail", "tiny_image"]))
    async with template:
        swarm = template.instantiate({}, user_id="u1")
        await swarm.shutdown()
    assistant, math = swarm.agents
    assert [a.name for a in assistant.actions] == ["calc__add", "calc__word_count"]
    add = assistant.actions[0]
    assert add.description == "Add two integers and return their sum."
    assert add.parameters["properties"]["a"] == {"title": "A", "type": "integer"}
    assert add.parameters["required"] == ["a", "b"]
    assert isinstance(assistant.function, McpDemoFunction)
    assert tool_names(assistant.function.tools) == ["calc__add", "calc__word_count"]
    assert not any(a.name.startswith("calc__") for a in math.actions)
    assert not any(n.startswith("calc__") for n in tool_names(math.function.tools))


async def test_allow_tools_keeps_only_the_tools_named() -> None:
    template = MAILSwarmTemplate.from_swarms_json(demo_swarm(allow_tools=["word_count"]))
    async with template:
        swarm = template.instantiate({}, user_id="u1")
        await swarm.shutdown()
    assert [a.name for a in swarm.agents[0].actions] == ["calc__word_count"]


async def test_the_python_api_over_streamable_http() -> None:
    async with http_demo() as url:
        agent = MAILAgentTemplate(
            "assistant",
            McpDemoFunction,
            [],
            [],
            {"server": "remote"},
            enable_entrypoint=True,
            can_complete_tasks=True,
            mcp_servers=["remote"],
        )
        template = MAILSwarmTemplate(
            "py-mcp",
            "1.0",
            [agent],
            [],
            "assistant",
            mcp_servers=[MCPServerSpec(name="remote", url=url)],
        )
        assert template.mcp_servers[0].transport == "http"
        assert not template.mcp_started
        async with template:
            assert template.mcp_started
            # one session serves every caller's swarm
            first = await ask(template, "add 2 and 40", user="u1")
            second = await ask(template, "add 1 and 1", user="u2")
        assert not template.mcp_started
    assert first == "The MCP tool remote__add answered: 42"
    assert second == "The MCP tool remote__add answered: 2"


async def test_instantiate_before_the_servers_are_started_says_what_to_call() -> None:
    template = MAILSwarmTemplate.from_swarm_json_file("mcp-demo", SWARMS)
    with pytest.raises(ConfigurationError, match=r"await template\.start_mcp\(\)"):
        template.instantiate({})


async def test_a_down_server_fails_the_start_with_one_line() -> None:
    swarm = demo_swarm()
    swarm["mcp_servers"] = [{"name": "calc", "url": "http://127.0.0.1:9/mcp", "timeout": 5}]
    template = MAILSwarmTemplate.from_swarms_json(swarm)

    with pytest.raises(ConfigurationError) as info:
        await template.start_mcp()

    message = str(info.value)
    assert message.startswith("MCP server 'calc' (http://127.0.0.1:9/mcp) could not be started: ")
    assert "\n" not in message
    assert not template.mcp_started


async def test_an_optional_down_server_is_left_out_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    swarm = demo_swarm()
    down = {"name": "down", "url": "http://127.0.0.1:9/mcp", "optional": True, "timeout": 5}
    swarm["mcp_servers"].append(down)
    swarm["agents"][0]["mcp_servers"] = ["calc", "down"]
    template = MAILSwarmTemplate.from_swarms_json(swarm)

    with caplog.at_level(logging.WARNING, logger="mail.actions"):
        async with template:
            swarm_ = template.instantiate({}, user_id="u1")
            await swarm_.shutdown()

    assert [a.name for a in swarm_.agents[0].actions][:2] == ["calc__add", "calc__word_count"]
    assert not any(a.name.startswith("down__") for a in swarm_.agents[0].actions)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("MCP server 'down'" in w and "left out" in w for w in warnings), warnings


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pid_server(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    pidfile = tmp_path / "pid"
    return {"args": ["-c", PID_SCRIPT], "env": {"PIDFILE": "${MCP_PIDFILE}"}}, pidfile


async def test_closing_the_template_ends_the_stdio_server(tmp_path: Path) -> None:
    definition, pidfile = pid_server(tmp_path)
    template = MAILSwarmTemplate.from_swarms_json(demo_swarm(**definition))

    await template.start_mcp(env={"MCP_PIDFILE": str(pidfile)})  # ${VAR} in env resolved
    pid = int(pidfile.read_text())
    assert _alive(pid)
    await template.close_mcp()

    assert not _alive(pid)


async def test_a_dead_session_answers_unavailable_then_reconnects(tmp_path: Path) -> None:
    definition, pidfile = pid_server(tmp_path)
    template = MAILSwarmTemplate.from_swarms_json(demo_swarm(**definition))
    await template.start_mcp(env={"MCP_PIDFILE": str(pidfile)})
    try:
        swarm = template.instantiate({}, user_id="u1")
        await swarm.shutdown()
        add = swarm.agents[0].actions[0]
        first = int(pidfile.read_text())
        assert await add({"a": 1, "b": 2}) == "3"
        os.kill(first, signal.SIGKILL)

        failed = await add({"a": 1, "b": 2})
        assert failed.startswith("Error: MCP server 'calc' is unavailable: "), failed
        assert await add({"a": 2, "b": 2}) == "4"  # a new session, a new process
        assert int(pidfile.read_text()) != first
    finally:
        await template.close_mcp()


async def test_a_bearer_token_comes_from_its_environment_reference() -> None:
    async with http_demo(token="s3cret") as url:  # a test token
        spec = {"name": "calc", "url": url, "token": "${CALC_TOKEN}", "timeout": 5}
        swarm = demo_swarm()
        swarm["mcp_servers"] = [spec]
        template = MAILSwarmTemplate.from_swarms_json(swarm)

        with pytest.raises(
            ConfigurationError,
            match=r"^MCP server 'calc': token names \$\{CALC_TOKEN\}, which is not set$",
        ):
            await template.start_mcp(env={})
        with pytest.raises(ConfigurationError, match="could not be started"):
            await template.start_mcp(env={"CALC_TOKEN": "wrong"})
        await template.start_mcp(env={"CALC_TOKEN": "s3cret"})
        try:
            assert await ask(template, "add 20 and 22") == "The MCP tool calc__add answered: 42"
        finally:
            await template.close_mcp()


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ({"name": "x y", "url": "http://h/mcp"}, "name must match"),
        ({"name": "x"}, "exactly one of 'url'"),
        ({"name": "x", "url": "http://h/mcp", "command": "python"}, "exactly one of 'url'"),
        ({"name": "x", "url": "http://h/mcp", "token": "raw-secret"}, "must be a ${VAR} reference"),
        ({"name": "x", "command": "python", "token": "${T}"}, "only for 'url' servers"),
        ({"name": "x", "url": "ftp://h/mcp"}, "http:// or https://"),
        ({"name": "x", "url": "http://h/mcp", "args": ["-v"]}, "only for 'command' servers"),
        ({"name": "x", "url": "http://h/mcp", "colour": "red"}, "unknown field(s): colour"),
        ({"name": "x", "url": "http://h/mcp", "optional": "yes"}, "must be true or false"),
    ],
)
def test_invalid_server_definitions_are_refused_at_load(server: dict, reason: str) -> None:
    swarm = demo_swarm()
    swarm["mcp_servers"] = [server]
    swarm["agents"][0]["mcp_servers"] = []

    with pytest.raises(SwarmDefinitionError) as info:
        MAILSwarmTemplate.from_swarms_json(swarm)

    assert reason in str(info.value)
    assert info.value.swarm == "mcp-demo"


def test_an_agent_naming_an_unknown_server_is_refused() -> None:
    swarm = demo_swarm()
    swarm["agents"][0]["mcp_servers"] = ["calc", "files"]

    with pytest.raises(SwarmDefinitionError, match="'files' is not an MCP server of the swarm"):
        MAILSwarmTemplate.from_swarms_json(swarm)


@pytest.mark.parametrize(
    "server",
    [
        {"name": "x", "url": "http://h/mcp", "command": "python"},
        {"name": "x", "url": "http://h/mcp", "token": "raw-secret"},
        {"name": "x y", "url": "http://h/mcp"},
        {"name": "x", "command": "python", "token": "${T}"},
    ],
)
def test_the_json_schema_refuses_what_the_loader_refuses(server: dict) -> None:
    import jsonschema  # a test dependency

    schema = json.loads((SWARMS.parent / "docs" / "swarms-schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    good = demo_swarm()
    validator.validate([good])
    bad = demo_swarm()
    bad["mcp_servers"] = [server]
    bad["agents"][0]["mcp_servers"] = []

    with pytest.raises(jsonschema.ValidationError):
        validator.validate([bad])
    with pytest.raises(SwarmDefinitionError):
        MAILSwarmTemplate.from_swarms_json(bad)
