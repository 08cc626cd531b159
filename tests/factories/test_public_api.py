"""The public surface of mail.factories: import paths, laziness, deprecations, validation."""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
import textwrap

import pytest

import mail.factories
from mail.errors import MAILError, SwarmDefinitionError
from mail.factories import (
    AgentOutputError,
    LiteLLMActionAgentFunction,
    LiteLLMAgentFunction,
    LiteLLMSupervisorFunction,
    LLMCallError,
    MAILAgentFunction,
    action_agent_factory,
    base_agent_factory,
    supervisor_factory,
)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_importing_the_factories_does_not_import_litellm() -> None:
    result = run_python(
        """
        import sys
        import mail.factories
        import mail.factories.action, mail.factories.base, mail.factories.supervisor
        import mail.testing.llm
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("litellm", "openai"))
        print(loaded)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_litellm_is_a_configuration_error_naming_it() -> None:
    result = run_python(
        """
        import asyncio, sys
        sys.modules["litellm"] = None  # as if it were not installed
        from mail.errors import ConfigurationError
        from mail.factories import LiteLLMAgentFunction
        agent = LiteLLMAgentFunction("a", [], [], "openai/m")
        try:
            asyncio.run(agent([{"role": "user", "content": "hi"}]))
        except ConfigurationError as e:
            print("ConfigurationError:", e)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ConfigurationError:")
    assert "litellm" in result.stdout


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("mail.factories.base", "MAILAgentFunction"),
        ("mail.factories.base", "LiteLLMAgentFunction"),
        ("mail.factories.base", "AgentOutputError"),
        ("mail.factories.base", "base_agent_factory"),
        ("mail.factories.supervisor", "LiteLLMSupervisorFunction"),
        ("mail.factories.supervisor", "SupervisorFunction"),
        ("mail.factories.supervisor", "supervisor_factory"),
        ("mail.factories.action", "LiteLLMActionAgentFunction"),
        ("mail.factories.action", "ActionAgentFunction"),
        ("mail.factories.action", "action_agent_factory"),
    ],
)
def test_swarms_json_import_paths_resolve(path: str, name: str) -> None:
    module = importlib.import_module(path)
    assert name in module.__all__
    assert getattr(module, name) is getattr(mail.factories, name)


def test_package_exports() -> None:
    assert mail.factories.__all__ == [
        "AgentFunction",  # v1.3.6's name of the agent function protocol
        "MAILAgentFunction",
        "LiteLLMAgentFunction",
        "SupervisorFunction",
        "LiteLLMSupervisorFunction",
        "ActionAgentFunction",
        "LiteLLMActionAgentFunction",
        "AgentOutputError",
        "LLMCallError",
        "ReasoningEffort",
        "THINKING_BUDGETS",
        "base_agent_factory",
        "supervisor_factory",
        "action_agent_factory",
        "V1_SUBCLASS_ORDER",
        "deprecated_factory",
        "import_litellm",
        "rebind",
    ]
    assert issubclass(AgentOutputError, MAILError)
    assert issubclass(LLMCallError, MAILError)


def test_the_abstract_base_cannot_be_instantiated() -> None:
    with pytest.raises(TypeError):
        MAILAgentFunction("a", [], [])  # type: ignore[abstract]


@pytest.mark.parametrize(
    ("factory", "cls", "name"),
    [
        (base_agent_factory, LiteLLMAgentFunction, "base_agent"),
        (supervisor_factory, LiteLLMSupervisorFunction, "supervisor"),
        (action_agent_factory, LiteLLMActionAgentFunction, "action"),
    ],
)
def test_deprecated_closures_warn_and_return_the_instance(
    factory: object, cls: type, name: str
) -> None:
    with pytest.warns(DeprecationWarning, match="is deprecated"):
        agent = factory(["a"], [], "tok", "openai/m", "sys")  # type: ignore[operator]

    assert type(agent) is cls
    assert (agent.name, agent.user_token, agent.system) == (name, "tok", "sys")


def test_contract_defaults() -> None:
    agent = LiteLLMAgentFunction("a", ["b"], [], "openai/m")

    assert agent.tool_format == "responses"
    assert agent.use_proxy is True
    assert agent.model == "litellm_proxy/openai/m"
    assert (agent.system, agent.user_token) == ("", "")
    assert (agent.max_tokens, agent.thinking) == (None, None)
    assert (agent.timeout, agent.max_retries) == (120.0, 5)  # 5 retries, as v1.3.6
    assert agent.can_complete_tasks is False
    assert agent.print_llm_streams is True


@pytest.mark.parametrize(
    ("effort", "budget", "max_tokens"),
    [("minimal", 2000, 6000), ("low", 4000, 8000), ("medium", 8000, 12000), ("high", 16000, 20000)],
)
def test_reasoning_effort_sets_the_thinking_budget(
    effort: str, budget: int, max_tokens: int
) -> None:
    agent = LiteLLMAgentFunction("a", [], [], "openai/m", reasoning_effort=effort)  # type: ignore[arg-type]

    assert agent.thinking == {"type": "enabled", "budget_tokens": budget}
    assert agent.max_tokens == max_tokens


def test_an_explicit_budget_and_max_tokens_win() -> None:
    agent = LiteLLMAgentFunction(
        "a", [], [], "openai/m", reasoning_effort="high", thinking_budget=1000, max_tokens=1500
    )

    assert agent.thinking == {"type": "enabled", "budget_tokens": 1000}
    assert agent.max_tokens == 1500


def test_unknown_parameters_are_ignored_with_a_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mail.factories.base"):
        agent = LiteLLMSupervisorFunction(
            "sup", [], [], "openai/m", swarm_name="demo", actions=["x"]
        )

    assert agent.kwargs == {"swarm_name": "demo", "actions": ["x"]}
    assert "ignores parameters: actions, swarm_name" in caplog.text


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"timeout": 0}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"tool_format": "xml"}, "tool_format"),
        ({"llm": ""}, "llm"),
    ],
)
def test_invalid_parameters_are_definition_errors(params: dict[str, object], field: str) -> None:
    kwargs: dict[str, object] = {"llm": "openai/m", **params}
    with pytest.raises(SwarmDefinitionError, match=f"agent 'a', field '{field}'"):
        LiteLLMAgentFunction("a", [], [], **kwargs)  # type: ignore[arg-type]
