"""The signatures of the factory classes and functions, and of the example agents built on them.

Each public constructor and deprecated function takes the parameters v1.3.6 documented, in
its positional order (a positional call written for v1.3.6 binds the same way), with the
defaults CONTRACT 6.2 gives. The lists below are quoted from v1.3.6's public surface:
``name`` is required, ``name=…`` has a default.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import Any

import pytest

from mail.factories import (
    ActionAgentFunction,
    LiteLLMActionAgentFunction,
    LiteLLMAgentFunction,
    LiteLLMSupervisorFunction,
    MAILAgentFunction,
    SupervisorFunction,
    action_agent_factory,
    base_agent_factory,
    supervisor_factory,
)

_WIRING = (
    "name, comm_targets, tools, enable_entrypoint=…, enable_interswarm=…, "
    "can_complete_tasks=…, tool_format=…, exclude_tools=…, **kwargs"
)
_LLM_HEAD = (
    "user_token=…, enable_entrypoint=…, enable_interswarm=…, can_complete_tasks=…, "
    "tool_format=…, exclude_tools=…, reasoning_effort=…, thinking_budget=…, max_tokens=…, "
    "memory=…, use_proxy=…"
)
_LLM_SUBCLASS = (
    f"name, comm_targets, tools, llm, system, {_LLM_HEAD}, _debug_include_mail_tools=…, "
    "stream_tokens=…, print_llm_streams=…, default_tool_choice=…"
)
_EXAMPLE = f"name, comm_targets, tools, llm, system, {_LLM_HEAD}, _debug_include_mail_tools=…"
_FACTORY_HEAD = (
    f"comm_targets, tools, user_token, llm, system, name=…, {_LLM_HEAD.split(', ', 1)[1]}"
)

DOCUMENTED: dict[str, str] = {
    "mail.factories.base:MAILAgentFunction": _WIRING,
    "mail.factories.base:LiteLLMAgentFunction": (
        f"name, comm_targets, tools, llm, system=…, {_LLM_HEAD}, stream_tokens=…, "
        "print_llm_streams=…, _debug_include_mail_tools=…, default_tool_choice=…"
    ),
    "mail.factories.supervisor:SupervisorFunction": (
        "name, comm_targets, tools, can_complete_tasks=…, enable_entrypoint=…, "
        "enable_interswarm=…, tool_format=…, exclude_tools=…, **kwargs"
    ),
    "mail.factories.supervisor:LiteLLMSupervisorFunction": _LLM_SUBCLASS,
    "mail.factories.action:ActionAgentFunction": _WIRING,
    "mail.factories.action:LiteLLMActionAgentFunction": _LLM_SUBCLASS,
    "mail.factories.base:base_agent_factory": (
        f"{_FACTORY_HEAD}, stream_tokens=…, print_llm_streams=…, _debug_include_mail_tools=…, "
        "default_tool_choice=…"
    ),
    "mail.factories.supervisor:supervisor_factory": (
        f"{_FACTORY_HEAD}, stream_tokens=…, print_llm_streams=…, default_tool_choice=…"
    ),
    "mail.factories.action:action_agent_factory": (
        f"{_FACTORY_HEAD}, _debug_include_mail_tools=…, print_llm_streams=…"
    ),
    **{
        f"mail.examples.{kind}_dummy.agent:LiteLLM{kind.title()}Function": _EXAMPLE
        for kind in ("weather", "math", "consultant", "analyst")
    },
    **{
        f"mail.examples.{kind}_dummy.agent:factory_{kind}_dummy": _FACTORY_HEAD
        for kind in ("weather", "math", "consultant", "analyst")
    },
}

# Parameters v1.3.6 required that now have a default: calls written for v1.3.6 still bind.
RELAXED: dict[str, set[str]] = {
    # a supervisor or action agent without a prompt works like LiteLLMAgentFunction's
    "mail.factories.supervisor:LiteLLMSupervisorFunction": {"system"},
    "mail.factories.action:LiteLLMActionAgentFunction": {"system"},
    # the example agents default to the example model and their prompt
    **{
        f"mail.examples.{kind}_dummy.agent:LiteLLM{kind.title()}Function": {"llm", "system"}
        for kind in ("weather", "math", "consultant", "analyst")
    },
    **{
        f"mail.examples.{kind}_dummy.agent:factory_{kind}_dummy": {"user_token", "llm", "system"}
        for kind in ("weather", "math", "consultant", "analyst")
    },
}

# CONTRACT 6.2's defaults of the LLM agent classes (exclude_tools=[] is an empty sequence).
LLM_DEFAULTS: dict[str, Any] = {
    "system": "",
    "user_token": "",
    "enable_entrypoint": False,
    "enable_interswarm": False,
    "can_complete_tasks": False,
    "tool_format": "responses",
    "exclude_tools": (),
    "reasoning_effort": None,
    "thinking_budget": None,
    "max_tokens": None,
    "memory": True,
    "use_proxy": True,
    "stream_tokens": False,
    "print_llm_streams": True,
    "_debug_include_mail_tools": True,
    "default_tool_choice": None,
}

_EMPTY = inspect.Parameter.empty


def load(reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("reference", list(DOCUMENTED))
def test_signature_takes_the_documented_parameters_in_order(reference: str) -> None:
    documented = DOCUMENTED[reference].split(", ")
    params = list(inspect.signature(load(reference)).parameters.values())
    positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    names = [d.removesuffix("=…") for d in documented if not d.startswith("**")]

    assert [p.name for p in positional[: len(names)]] == names
    relaxed = RELAXED.get(reference, set())
    for spec, param in zip(documented, positional, strict=False):
        if spec.endswith("=…") or param.name in relaxed:
            assert param.default is not _EMPTY, param.name
        else:
            assert param.default is _EMPTY, param.name
    # anything added after the documented parameters is optional
    for param in params:
        if param.name not in names and param.kind is not inspect.Parameter.VAR_KEYWORD:
            assert param.default is not _EMPTY, param.name
    if "**kwargs" in documented:
        assert params[-1].kind is inspect.Parameter.VAR_KEYWORD


@pytest.mark.parametrize(
    ("cls", "can_complete_tasks"),
    [
        (LiteLLMAgentFunction, False),
        (LiteLLMSupervisorFunction, True),
        (LiteLLMActionAgentFunction, False),
    ],
)
def test_llm_classes_have_the_contract_defaults(cls: type, can_complete_tasks: bool) -> None:
    params = inspect.signature(cls).parameters
    defaults = {name: params[name].default for name in LLM_DEFAULTS}

    assert defaults == {**LLM_DEFAULTS, "can_complete_tasks": can_complete_tasks}


def test_deprecated_functions_default_names() -> None:
    def default(function: Any, name: str) -> Any:
        return inspect.signature(function).parameters[name].default

    assert default(base_agent_factory, "name") == "base_agent"
    assert default(supervisor_factory, "name") == "supervisor"
    assert default(supervisor_factory, "enable_entrypoint") is True
    assert default(action_agent_factory, "name") == "action"
    assert default(load("mail.examples.math_dummy.agent:factory_math_dummy"), "name") == "math"


# one distinct value per positional slot, up to use_proxy
_HEAD_VALUES = ["tok", True, True, True, "completions", ["help"], "low", 100, 900, False, False]


def test_a_v1_positional_call_binds_by_the_class_order() -> None:
    base = LiteLLMAgentFunction("a", ["b"], [], "m", "sys", *_HEAD_VALUES, True, False, False)
    sup = LiteLLMSupervisorFunction("a", ["b"], [], "m", "sys", *_HEAD_VALUES, False, True, False)
    action = LiteLLMActionAgentFunction("a", ["b"], [], "m", "sys", *_HEAD_VALUES, False, True)

    for agent in (base, sup, action):
        assert (agent.user_token, agent.enable_entrypoint, agent.tool_format) == (
            "tok",
            True,
            "completions",
        )
        assert (agent.reasoning_effort, agent.thinking_budget, agent.max_tokens) == (
            "low",
            100,
            900,
        )
        assert (agent.use_proxy, agent._debug_include_mail_tools, agent.stream_tokens) == (
            False,
            False,
            True,
        )
    assert (base.print_llm_streams, sup.print_llm_streams, action.print_llm_streams) == (
        False,
        False,
        True,
    )
    assert (base.can_complete_tasks, sup.can_complete_tasks, action.can_complete_tasks) == (
        True,
        True,
        False,
    )


def test_an_example_agent_binds_v1_positional_calls() -> None:
    math = load("mail.examples.math_dummy.agent:LiteLLMMathFunction")

    agent = math("m", ["b"], [], "openai/x", "sys", *_HEAD_VALUES, False)

    assert (agent.llm, agent.system, agent.user_token, agent.max_tokens) == (
        "openai/x",
        "sys",
        "tok",
        900,
    )
    assert (agent.use_proxy, agent._debug_include_mail_tools, agent.stream_tokens) == (
        False,
        False,
        False,
    )


def test_deprecated_functions_bind_v1_positional_calls() -> None:
    with pytest.warns(DeprecationWarning):
        agent = action_agent_factory(["b"], [], "tok", "m", "sys", "act", *_HEAD_VALUES[1:], False)

    assert type(agent) is LiteLLMActionAgentFunction
    assert (agent.name, agent.user_token, agent.max_tokens) == ("act", "tok", 900)
    assert (agent.use_proxy, agent._debug_include_mail_tools) == (False, False)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: LiteLLMSupervisorFunction("a", [], [], "m", *range(17)), "too many positional"),
        (lambda: LiteLLMSupervisorFunction("a", [], [], "m", llm="n"), "multiple values"),
        (lambda: LiteLLMSupervisorFunction("a", [], []), "missing a required argument: 'llm'"),
        (lambda: supervisor_factory(["b"], [], "tok"), "missing a required argument: 'llm'"),
    ],
)
def test_a_bad_call_is_a_type_error(call: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call()


def test_supervisors_always_and_action_agents_never_complete_tasks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="mail.factories.base"):
        sup = LiteLLMSupervisorFunction("s", [], [], "m", can_complete_tasks=False)
        action = LiteLLMActionAgentFunction("w", [], [], "m", can_complete_tasks=True)

    assert (sup.can_complete_tasks, action.can_complete_tasks) == (True, False)
    assert "can_complete_tasks is always False for LiteLLMActionAgentFunction" in caplog.text


def test_user_subclasses_keep_their_own_signature() -> None:
    class Traced(LiteLLMSupervisorFunction):
        def __init__(self, name: str, trace: list[str], **kwargs: Any) -> None:
            super().__init__(name, ["b"], [], "m", **kwargs)
            self.trace = trace

    agent = Traced("t", [], use_proxy=False)

    assert list(inspect.signature(Traced).parameters) == ["name", "trace", "kwargs"]
    assert isinstance(agent, SupervisorFunction)
    assert (agent.name, agent.trace, agent.use_proxy, agent.can_complete_tasks) == (
        "t",
        [],
        False,
        True,
    )


def test_abstract_bases_keep_their_checks() -> None:
    class Plain(MAILAgentFunction):
        def __call__(self, messages: Any, tool_choice: Any = "required") -> Any:
            raise NotImplementedError

    class Sup(SupervisorFunction, Plain):
        pass

    class Act(ActionAgentFunction, Plain):
        pass

    assert Sup("s", [], [], False, True).can_complete_tasks is True
    assert Sup("s", [], [], False, True).enable_entrypoint is True
    assert Act("a", [], [], False, False, True).can_complete_tasks is False


def test_example_agents_can_be_subclassed() -> None:
    from mail.examples.math_dummy.agent import LiteLLMMathFunction

    class Tutor(LiteLLMMathFunction):
        pass

    class Poet(LiteLLMMathFunction, prompt="Answer in verse."):
        pass

    tutor, poet = Tutor("t", [], []), Poet("p", [], [], "openai/x")

    assert isinstance(tutor, LiteLLMMathFunction)
    assert isinstance(poet, LiteLLMAgentFunction)
    assert inspect.signature(Tutor) == inspect.signature(LiteLLMMathFunction)
    assert (tutor.llm, tutor.system) == (
        "openai/gpt-5-mini",
        LiteLLMMathFunction("m", [], []).system,
    )
    assert (poet.llm, poet.system) == ("openai/x", "Answer in verse.")
