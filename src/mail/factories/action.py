"""Action agent functions: agents that work through their action tools and never complete
tasks.

Their ``tools`` may be specs in either tool format or pydantic model classes; all are
normalized to the agent's ``tool_format``. An action agent without tools is valid: it is
offered the MAIL tools only (the original raised ``IndexError``).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

from mail.core.tools import ToolFormat
from mail.factories.base import LiteLLMAgentFunction, MAILAgentFunction, ReasoningEffort

__all__ = ["ActionAgentFunction", "LiteLLMActionAgentFunction", "action_agent_factory"]

logger = logging.getLogger("mail.factories.action")


class ActionAgentFunction(MAILAgentFunction):
    """Abstract action agent: :class:`MAILAgentFunction` that cannot complete tasks.

    ``can_complete_tasks`` is accepted for compatibility and always False.
    """

    def __init__(
        self,
        name: str,
        comm_targets: Sequence[str],
        tools: Sequence[Any],
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        can_complete_tasks: bool = False,
        tool_format: ToolFormat = "responses",
        exclude_tools: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        if can_complete_tasks:
            logger.debug("action agent %s cannot complete tasks; ignoring the flag", name)
        super().__init__(
            name=name,
            comm_targets=comm_targets,
            tools=tools,
            enable_entrypoint=enable_entrypoint,
            enable_interswarm=enable_interswarm,
            can_complete_tasks=False,
            tool_format=tool_format,
            exclude_tools=exclude_tools,
            **kwargs,
        )


class LiteLLMActionAgentFunction(LiteLLMAgentFunction, ActionAgentFunction):
    """A LiteLLM-backed action agent (parameters of :class:`LiteLLMAgentFunction`).

    ``can_complete_tasks`` is always False.
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
        can_complete_tasks: bool = False,
        tool_format: ToolFormat = "responses",
        exclude_tools: Sequence[str] = (),
        reasoning_effort: ReasoningEffort | None = None,
        thinking_budget: int | None = None,
        max_tokens: int | None = None,
        memory: bool = True,
        use_proxy: bool = True,
        stream_tokens: bool = False,
        print_llm_streams: bool = True,
        _debug_include_mail_tools: bool = True,
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
            can_complete_tasks=can_complete_tasks,
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


def action_agent_factory(
    comm_targets: Sequence[str],
    tools: Sequence[Any],
    user_token: str,
    llm: str,
    system: str,
    name: str = "action",
    **kwargs: Any,
) -> LiteLLMActionAgentFunction:
    """Deprecated: build a :class:`LiteLLMActionAgentFunction` (warns ``DeprecationWarning``).

    Returns the instance, which is itself the agent function.
    """
    warnings.warn(
        "mail.factories.action:action_agent_factory is deprecated; "
        "use mail.factories.action:LiteLLMActionAgentFunction instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return LiteLLMActionAgentFunction(
        name=name,
        comm_targets=comm_targets,
        tools=tools,
        llm=llm,
        system=system,
        user_token=user_token,
        **kwargs,
    )
