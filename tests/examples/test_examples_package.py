"""The public paths of mail.examples (CONTRACT 12, seed 001) and what they hold."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

import mail.examples
from mail.errors import SwarmDefinitionError
from mail.examples.offline import offline_runtime, offline_swarm_definition

HAS_API = importlib.util.find_spec("mail.api") is not None
needs_api = pytest.mark.skipif(not HAS_API, reason="mail.api not available yet")


def _has_factories() -> bool:
    try:
        return importlib.util.find_spec("mail.factories.action") is not None
    except ModuleNotFoundError:
        return False


needs_factories = pytest.mark.skipif(
    not _has_factories(), reason="mail.factories not available yet"
)

PROMPTS = [
    "mail.examples.supervisor.prompts:SYSPROMPT",
    "mail.examples.supervisor.prompts:SYSPROMPT_NO_INTERSWARM_MASTER",
    "mail.examples.weather_dummy.prompts:SYSPROMPT",
    "mail.examples.math_dummy.prompts:SYSPROMPT",
    "mail.examples.consultant_dummy.prompts:SYSPROMPT",
    "mail.examples.analyst_dummy.prompts:SYSPROMPT",
]
LIGHT_MODULES = [
    "mail.examples",
    "mail.examples.supervisor",
    "mail.examples.weather_dummy",
    "mail.examples.math_dummy",
    "mail.examples.consultant_dummy",
    "mail.examples.analyst_dummy",
    "mail.examples.offline",
    "mail.examples.offline.agents",
    *sorted({p.split(":")[0] for p in PROMPTS}),
]
ACTION_MODULES = [
    "mail.examples.weather_dummy.actions",
    "mail.examples.weather_dummy.types",
    "mail.examples.math_dummy.actions",
    "mail.examples.math_dummy.types",
]
AGENT_CLASSES = [
    (
        "mail.examples.weather_dummy.agent:LiteLLMWeatherFunction",
        "mail.factories.action:LiteLLMActionAgentFunction",
    ),
    (
        "mail.examples.math_dummy.agent:LiteLLMMathFunction",
        "mail.factories.base:LiteLLMAgentFunction",
    ),
    (
        "mail.examples.consultant_dummy.agent:LiteLLMConsultantFunction",
        "mail.factories.base:LiteLLMAgentFunction",
    ),
    (
        "mail.examples.analyst_dummy.agent:LiteLLMAnalystFunction",
        "mail.factories.base:LiteLLMAgentFunction",
    ),
]


EXAMPLE_KINDS = ["weather", "math", "consultant", "analyst"]


def load(reference: str) -> Any:
    module, _, attribute = reference.removeprefix("python::").partition(":")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("reference", PROMPTS)
def test_prompts_are_plain_text_without_placeholders(reference: str) -> None:
    prompt = load(reference)
    assert isinstance(prompt, str)
    assert len(prompt) > 200
    assert "{swarm}" not in prompt
    assert "{" not in prompt


def test_supervisor_prompts_differ_only_by_interswarm() -> None:
    full = load(PROMPTS[0])
    local = load(PROMPTS[1])
    assert full.startswith(local)
    assert "@" in full.removeprefix(local)
    assert "agent-name@swarm-name" not in local


@pytest.mark.parametrize("kind", ["supervisor", "weather", "math", "consultant", "analyst"])
def test_agent_params(kind: str) -> None:
    params = getattr(mail.examples, f"{kind}_agent_params")
    package = kind if kind == "supervisor" else f"{kind}_dummy"
    assert params == {
        "llm": "openai/gpt-5-mini",
        "system": f"python::mail.examples.{package}.prompts:SYSPROMPT",
    }
    assert isinstance(load(params["system"]), str)
    assert kind in mail.examples.EXAMPLE_AGENTS


def test_public_names() -> None:
    assert set(mail.examples.__all__) == {
        "supervisor_agent_params",
        "weather_agent_params",
        "math_agent_params",
        "consultant_agent_params",
        "analyst_agent_params",
        "EXAMPLE_AGENTS",
        "example_agent_template_args",
        "LiteLLMWeatherFunction",
        "LiteLLMMathFunction",
        "LiteLLMConsultantFunction",
        "LiteLLMAnalystFunction",
        "factory_weather_dummy",
        "factory_math_dummy",
        "factory_consultant_dummy",
        "factory_analyst_dummy",
    }
    from mail.examples import offline

    assert set(offline.__all__) == {
        "OfflineMathFunction",
        "OfflineSupervisorFunction",
        "OfflineWeatherFunction",
        "offline_runtime",
        "offline_swarm_definition",
    }


def test_importing_the_examples_does_not_import_litellm() -> None:
    modules = list(LIGHT_MODULES)
    if HAS_API:
        modules += ACTION_MODULES
    if _has_factories():
        modules += [c.split(":")[0] for c, _ in AGENT_CLASSES]
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai', 'anthropic'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@needs_api
@pytest.mark.parametrize(
    ("reference", "alias", "name"),
    [
        (
            "python::mail.examples.weather_dummy.actions:get_weather_forecast",
            "python::mail.examples.weather_dummy.types:action_get_weather_forecast",
            "get_weather_forecast",
        ),
        (
            "python::mail.examples.math_dummy.actions:calculate_expression",
            "python::mail.examples.math_dummy.types:action_calculate_expression",
            "calculate_expression",
        ),
    ],
)
async def test_actions_are_mail_actions(reference: str, alias: str, name: str) -> None:
    from mail.api import MAILAction

    action = load(reference)
    assert isinstance(action, MAILAction)
    assert load(alias) is action
    assert action.name == name
    assert action.description
    assert action.parameters["type"] == "object"
    args = (
        {"location": "Lima", "days_ahead": 0, "metric": True}
        if name == "get_weather_forecast"
        else {"expression": "6*7"}
    )
    result = await action.function(args)
    assert isinstance(result, str)
    assert json.loads(result)
    # awaitable like the original's functions: the same answer as the function's
    assert await action(args) == result


@needs_api
def test_example_agent_template_args() -> None:
    args = mail.examples.example_agent_template_args("weather", ["supervisor"])
    assert args["factory"] == "python::mail.examples.weather_dummy.agent:LiteLLMWeatherFunction"
    assert [a.name for a in args["actions"]] == ["get_weather_forecast"]
    assert args["agent_params"] == mail.examples.weather_agent_params
    assert args["enable_entrypoint"] is False
    sup = mail.examples.example_agent_template_args("supervisor", ["weather"])
    assert sup["enable_entrypoint"] is sup["can_complete_tasks"] is True
    assert sup["actions"] == []
    with pytest.raises(SwarmDefinitionError, match="unknown example agent 'poet'"):
        mail.examples.example_agent_template_args("poet", [])


@needs_factories
@pytest.mark.parametrize(("reference", "base"), AGENT_CLASSES)
def test_llm_agents_subclass_the_factories(reference: str, base: str) -> None:
    assert issubclass(load(reference), load(base))


@needs_factories
def test_llm_agents_default_to_the_example_model_and_prompt() -> None:
    for reference, _base in AGENT_CLASSES:
        module = reference.split(":")[0].rsplit(".", 1)[0]
        agent = load(reference)(name="a", comm_targets=["b"], tools=[])
        assert agent.llm == "openai/gpt-5-mini"
        assert agent.system == load(f"{module}.prompts:SYSPROMPT")
        custom = load(reference)(
            name="a", comm_targets=["b"], tools=[], llm="openai/gpt-4o", system="Be brief."
        )
        assert (custom.llm, custom.system) == ("openai/gpt-4o", "Be brief.")


@needs_factories
@pytest.mark.parametrize(("kind", "agent"), list(zip(EXAMPLE_KINDS, AGENT_CLASSES, strict=True)))
def test_deprecated_factories_warn_and_build_the_agent_classes(
    kind: str, agent: tuple[str, str]
) -> None:
    factory = getattr(mail.examples, f"factory_{kind}_dummy")
    assert factory is load(f"mail.examples.{kind}_dummy.agent:factory_{kind}_dummy")
    assert factory.__name__ == f"factory_{kind}_dummy"
    cls = load(agent[0])
    with pytest.warns(DeprecationWarning, match=f"factory_{kind}_dummy is deprecated"):
        built = factory(["supervisor"], [], "user-key")
    assert type(built) is cls
    assert (built.name, built.comm_targets, built.user_token) == (kind, ["supervisor"], "user-key")
    assert (built.llm, built.system) == (
        "openai/gpt-5-mini",
        cls(name="x", comm_targets=["y"], tools=[]).system,
    )
    with pytest.warns(DeprecationWarning):
        custom = factory(["a"], [], llm="openai/gpt-4o", system="Be brief.", name="mine")
    assert (custom.name, custom.llm, custom.system) == ("mine", "openai/gpt-4o", "Be brief.")
    with pytest.raises(AttributeError, match="no attribute 'factory_poet_dummy'"):
        _ = mail.examples.factory_poet_dummy


def test_importing_the_examples_package_leaves_the_factories_unloaded() -> None:
    code = "import sys, mail.examples\nprint('mail.factories' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_offline_swarm_definition_is_valid_swarms_json() -> None:
    from mail.swarms_json import parse_swarm

    definition = offline_swarm_definition(name="demo", tool_format="completions")
    assert parse_swarm(definition)["name"] == "demo"
    for agent in definition["agents"]:
        assert callable(load(agent["factory"]))
        assert agent["tool_format"] == "completions"
    assert offline_swarm_definition() is not offline_swarm_definition()


@needs_api
async def test_offline_swarm_runs_from_its_swarms_json_definition() -> None:
    from mail.api import MAILSwarmTemplate

    template = MAILSwarmTemplate.from_swarms_json(offline_swarm_definition())
    swarm = template.instantiate(instance_params={}, user_id="u1")
    loop = asyncio.get_running_loop().create_task(swarm.run_continuous())
    try:
        response, _ = await swarm.post_message(body="What is 6 * 7?", subject="Q", timeout=10)
    finally:
        await swarm.shutdown()
        await loop
    assert response["message"]["body"] == "6 * 7 = 42"


async def test_offline_runtime_helper() -> None:
    from mail.core.message import create_agent_address, create_user_address, make_request

    rt = offline_runtime("u9", tool_format="completions")
    rt.start()
    try:
        message = make_request(
            task_id="t-helper",
            sender=create_user_address("u9"),
            recipient=create_agent_address("supervisor"),
            subject="Q",
            body="Is it sunny in Rome tomorrow?",
        )
        final = await rt.submit_and_wait(message, timeout=10)
    finally:
        await rt.shutdown(timeout=1.0)
    assert final["message"]["body"].startswith("Forecast for Rome on ")
