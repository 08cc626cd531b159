"""Supervisor agent functions: agents that may interrupt, broadcast and complete tasks.

A supervisor is offered, besides the tools of any agent, ``send_interrupt`` and
``send_broadcast`` (when it has comm targets), ``send_interswarm_broadcast`` and
``discover_swarms`` (when interswarm is enabled) and always ``task_complete``
(CONTRACT 5.4); ``can_complete_tasks`` is forced to True.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

from mail.core.tools import ToolFormat
from mail.factories.base import LiteLLMAgentFunction, MAILAgentFunction, ReasoningEffort

__all__ = ["SupervisorFunction", "LiteLLMSupervisorFunction", "supervisor_factory"]


class SupervisorFunction(MAILAgentFunction):
    """Abstract supervisor: :class:`MAILAgentFunction` with supervisor tools.

    ``can_complete_tasks`` is accepted for compatibility and always True.
    """

    supervisor_tools: ClassVar[bool] = True

    def __init__(
        self,
        name: str,
        comm_targets: Sequence[str],
        tools: Sequence[Any],
        can_complete_tasks: bool = True,
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        tool_format: ToolFormat = "responses",
        exclude_tools: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(
            name=name,
            comm_targets=comm_targets,
            tools=tools,
            enable_entrypoint=enable_entrypoint,
            enable_interswarm=enable_interswarm,
            can_complete_tasks=True,
            tool_format=tool_format,
            exclude_tools=exclude_tools,
            **kwargs,
        )


class LiteLLMSupervisorFunction(LiteLLMAgentFunction, SupervisorFunction):
    """A LiteLLM-backed supervisor (parameters of :class:`LiteLLMAgentFunction`).

    ``can_complete_tasks`` is always True; ``user_token`` is used like any LiteLLM
    agent's (the original dropped it, so proxy calls carried an empty bearer).
    """

    def __init__(  # noqa: PLR0917  # positional order of CONTRACT 6.2
        self,
        name: str,
        comm_targets: Sequence[str],
        tools: Sequence[Any],
        llm: str,
        system: str = "",
        user_token: str = "",
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        can_complete_tasks: bool = True,
        tool_format: ToolFormat = "responses",
        exclude_tools: Sequence[str] = (),
        reasoning_effort: ReasoningEffort | None = None,
        thinking_budget: int | None = None,
        max_tokens: int | None = None,
        memory: bool = True,
        use_proxy: bool = True,
        _debug_include_mail_tools: bool = True,
        stream_tokens: bool = False,
        print_llm_streams: bool = True,
        default_tool_choice: str | dict[str, Any] | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        parallel_tool_calls: bool | None = None,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        extra_headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            name=name,
            comm_targets=comm_targets,
            tools=tools,
            llm=llm,
            system=system,
            user_token=user_token,
            enable_entrypoint=enable_entrypoint,
            enable_interswarm=enable_interswarm,
            can_complete_tasks=True,
            tool_format=tool_format,
            exclude_tools=exclude_tools,
            reasoning_effort=reasoning_effort,
            thinking_budget=thinking_budget,
            max_tokens=max_tokens,
            memory=memory,
            use_proxy=use_proxy,
            stream_tokens=stream_tokens,
            print_llm_streams=print_llm_streams,
            _debug_include_mail_tools=_debug_include_mail_tools,
            default_tool_choice=default_tool_choice,
            api_base=api_base,
            api_key=api_key,
            timeout=timeout,
            parallel_tool_calls=parallel_tool_calls,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
            extra_headers=extra_headers,
            **kwargs,
        )


def supervisor_factory(
    comm_targets: Sequence[str],
    tools: Sequence[Any],
    user_token: str,
    llm: str,
    system: str,
    name: str = "supervisor",
    enable_entrypoint: bool = True,
    **kwargs: Any,
) -> LiteLLMSupervisorFunction:
    """Deprecated: build a :class:`LiteLLMSupervisorFunction` (warns ``DeprecationWarning``).

    Returns the instance, which is itself the agent function.
    """
    warnings.warn(
        "mail.factories.supervisor:supervisor_factory is deprecated; "
        "use mail.factories.supervisor:LiteLLMSupervisorFunction instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return LiteLLMSupervisorFunction(
        name=name,
        comm_targets=comm_targets,
        tools=tools,
        llm=llm,
        system=system,
        user_token=user_token,
        enable_entrypoint=enable_entrypoint,
        **kwargs,
    )
