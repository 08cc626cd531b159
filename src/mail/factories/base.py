"""Agent-function classes: the abstract :class:`MAILAgentFunction` and the LiteLLM-backed
:class:`LiteLLMAgentFunction` (CONTRACT 6.2).

An instance is an agent function: ``await agent(history, tool_choice)`` returns ``(text,
[AgentToolCall, ...])``. Per call it offers the tools of CONTRACT 5.4, prepends the system
prompt (chat completions) or sends it as ``instructions`` (Responses) without touching the
caller's history, calls LiteLLM, retries transient failures, and maps the answer to tool
calls. LiteLLM is imported on the first call, never at import time.

Errors::

    MAILError
    ├── AgentOutputError   the answer has malformed tool arguments, or nothing at all
    ├── LLMCallError       the LLM call failed (after retries for transient failures)
    │   └── LLMUnreachableError  its address refused the connection or does not resolve (also
    │                            a mail.errors.UnreachableError: the agent gets no second turn)
    └── ConfigurationError litellm is not installed
"""

from __future__ import annotations

import asyncio
import copy
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Literal, TypeAlias, TypeVar

from mail.core import model_call
from mail.core.agents import AgentFunction, AgentOutput
from mail.core.tasks import ModelCall
from mail.core.tools import ToolFormat, get_agent_tools, tool_name
from mail.errors import SwarmDefinitionError
from mail.factories import _completions, _responses
from mail.factories._litellm import import_litellm
from mail.factories._live_output import report_response_usage
from mail.factories._shared import (
    THINKING_BUDGETS,
    AgentOutputError,
    LLMCallError,
    check_llm_params,
    first_line,
    normalize_tool,
    thinking_settings,
    tool_request_params,
)
from mail.factories._signature import REQUIRED, deprecated_factory

__all__ = [
    "AgentFunction",
    "MAILAgentFunction",
    "LiteLLMAgentFunction",
    "AgentOutputError",
    "LLMCallError",
    "ReasoningEffort",
    "THINKING_BUDGETS",
    "base_agent_factory",
]

logger = logging.getLogger("mail.factories.base")

ReasoningEffort: TypeAlias = Literal["minimal", "low", "medium", "high"]

_BASE_MAIL_TOOLS = frozenset(
    {"send_request", "send_response", "acknowledge_broadcast", "ignore_broadcast"}
    | {"await_message", "help"}
)
_TRANSIENT = (
    "Timeout",
    "APIConnectionError",
    "InternalServerError",
    "BadGatewayError",
    "ServiceUnavailableError",
    "RateLimitError",
)
_MAX_BACKOFF = 8.0
_T = TypeVar("_T")


class MAILAgentFunction(ABC):
    """Base of agent-function classes: an agent's wiring plus an abstract ``__call__``.

    Args:
        name: the agent's name in its swarm.
        comm_targets: agents it may message (local names or ``agent@swarm``).
        tools: its action tools: specs in either tool format (converted to
            ``tool_format``), provider built-ins (``{"type": "web_search"}``), or pydantic
            model classes.
        enable_entrypoint, enable_interswarm, can_complete_tasks: routing flags.
        tool_format: ``"completions"`` or ``"responses"``.
        exclude_tools: MAIL tools this agent is not offered.
        **kwargs: other parameters a swarm builder passes; kept in ``self.kwargs``.

    Raises :class:`SwarmDefinitionError` for an unknown ``tool_format`` or a tool that is
    neither a spec nor a pydantic model.
    """

    #: Supervisor-family classes also get ``send_interrupt``/``send_broadcast`` (CONTRACT 5.4).
    supervisor_tools: ClassVar[bool] = False
    #: True or False when every agent of the class can or cannot complete tasks, whatever
    #: ``can_complete_tasks`` says (supervisors can, action agents cannot).
    completes_tasks: ClassVar[bool | None] = None

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
        if tool_format not in ("completions", "responses"):
            raise SwarmDefinitionError(
                f"tool_format must be 'completions' or 'responses', got {tool_format!r}",
                agent=name,
                field="tool_format",
            )
        self.name = name
        self.comm_targets = list(comm_targets)
        self.tools = [normalize_tool(t, tool_format, name) for t in tools]
        self.enable_entrypoint = enable_entrypoint
        self.enable_interswarm = enable_interswarm
        forced = self.completes_tasks
        if forced is not None and can_complete_tasks != forced:
            logger.debug(
                "agent %s: can_complete_tasks is always %s for %s; ignoring the flag",
                name,
                forced,
                type(self).__name__,
            )
        self.can_complete_tasks = can_complete_tasks if forced is None else forced
        self.tool_format: ToolFormat = tool_format
        self.exclude_tools = list(exclude_tools)
        self.kwargs = dict(kwargs)
        if kwargs:
            logger.debug("agent %s ignores parameters: %s", name, ", ".join(sorted(kwargs)))

    def offered_tools(self, *, include_mail_tools: bool = True) -> list[dict[str, Any]]:
        """The tools offered on one call (CONTRACT 5.4), as fresh dicts.

        The base MAIL tools (when ``comm_targets`` is non-empty and
        ``include_mail_tools``), then the agent's own ``tools``, then supervisor tools for
        supervisor classes, and ``task_complete`` when ``can_complete_tasks``; minus
        ``exclude_tools``.
        """
        tools = get_agent_tools(
            comm_targets=self.comm_targets,
            action_tools=copy.deepcopy(self.tools),  # the request may be altered downstream
            supervisor=self.supervisor_tools,
            can_complete_tasks=self.can_complete_tasks,
            enable_interswarm=self.enable_interswarm,
            style=self.tool_format,
            exclude_tools=self.exclude_tools,
        )
        if include_mail_tools:
            return tools
        return [t for t in tools if _spec_name(t) not in _BASE_MAIL_TOOLS]

    @abstractmethod
    def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> Awaitable[AgentOutput]:
        """Run one turn on ``messages``; return ``(text | None, [AgentToolCall, ...])``."""


def _spec_name(spec: dict[str, Any]) -> str | None:
    if spec.get("type") != "function":
        return None
    return tool_name(spec)


class LiteLLMAgentFunction(MAILAgentFunction):
    """An agent function that calls an LLM through LiteLLM (CONTRACT 6.2).

    Wiring parameters are those of :class:`MAILAgentFunction`. LLM parameters:

    - ``llm``: LiteLLM model name (``openai/gpt-5-mini``, ``anthropic/claude-...``).
    - ``system``: system prompt, sent with every call (never stored in the history).
    - ``use_proxy`` (default True): call ``litellm_proxy/<llm>`` (base URL from
      ``api_base`` or ``LITELLM_PROXY_API_BASE``) and send ``Authorization: Bearer
      <user_token>`` when ``user_token`` is set (else LiteLLM uses ``api_key`` or
      ``LITELLM_PROXY_API_KEY``). With ``use_proxy=False`` the model is called directly
      (``api_base``/``api_key`` or the provider's environment variables).
    - ``reasoning_effort`` (minimal/low/medium/high) and ``thinking_budget``: enable
      thinking (``budget_tokens`` defaults per effort: 2000/4000/8000/16000);
      ``max_tokens`` then defaults to the budget + 4000. The Responses API has no
      budget: it gets ``reasoning={"effort": reasoning_effort or "medium", "summary":
      "auto"}``.
    - ``stream_tokens``: stream the answer (deltas logged at DEBUG on
      ``mail.factories.base`` while ``print_llm_streams``).
    - ``default_tool_choice``: overrides the runtime's ``tool_choice``.
    - ``memory``: accepted for compatibility; unused.
    - ``_debug_include_mail_tools=False``: offer no base MAIL tools.

    Additions (keyword-only): ``api_base``, ``api_key``, ``timeout`` (seconds per
    request), ``parallel_tool_calls``, ``max_retries`` (retries of timeouts, connection
    errors, 429 and 5xx; 5 by default, as v1.3.6), ``retry_backoff`` (first retry delay in seconds, doubling),
    ``extra_headers``. Other keyword arguments are ignored (logged at DEBUG).

    This ``__init__`` is the one declaration of these parameters: the supervisor, action
    and example classes and the deprecated functions derive theirs from it
    (:mod:`mail.factories._signature`).

    Calling raises :class:`AgentOutputError` (unusable answer), :class:`LLMCallError`
    (failed call) or :class:`ConfigurationError` (litellm missing).
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
        max_retries: int = 5,
        retry_backoff: float = 0.5,
        extra_headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            name=name,
            comm_targets=comm_targets,
            tools=tools,
            enable_entrypoint=enable_entrypoint,
            enable_interswarm=enable_interswarm,
            can_complete_tasks=can_complete_tasks,
            tool_format=tool_format,
            exclude_tools=exclude_tools,
            **kwargs,
        )
        check_llm_params(name, llm, reasoning_effort, timeout, max_retries)
        thinking_budget, max_tokens = thinking_settings(
            reasoning_effort, thinking_budget, max_tokens
        )
        self.llm = llm
        self.system = system
        self.user_token = user_token
        self.reasoning_effort = reasoning_effort
        self.thinking_budget = thinking_budget
        self.max_tokens = max_tokens
        self.memory = memory
        self.use_proxy = use_proxy
        self.stream_tokens = stream_tokens
        self.print_llm_streams = print_llm_streams
        self._debug_include_mail_tools = _debug_include_mail_tools
        self.default_tool_choice = default_tool_choice
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.parallel_tool_calls = parallel_tool_calls
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.extra_headers = dict(extra_headers or {})

    # --- request pieces ----------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model name LiteLLM gets: ``litellm_proxy/<llm>`` when ``use_proxy``."""
        if self.use_proxy and not self.llm.startswith("litellm_proxy/"):
            return f"litellm_proxy/{self.llm}"
        return self.llm

    @property
    def thinking(self) -> dict[str, Any] | None:
        """``{"type": "enabled", "budget_tokens": B}`` when thinking is on, else ``None``."""
        if self.thinking_budget is None:
            return None
        return {"type": "enabled", "budget_tokens": self.thinking_budget}

    def _connection(self) -> dict[str, Any]:
        headers = dict(self.extra_headers)
        if self.use_proxy and self.user_token:
            headers["Authorization"] = f"Bearer {self.user_token}"
        api_key = self.api_key or (self.user_token if self.use_proxy else None)
        params: dict[str, Any] = {"timeout": self.timeout}
        if headers:
            params["extra_headers"] = headers
        if self.api_base:
            params["api_base"] = self.api_base
        if api_key:
            params["api_key"] = api_key
        return params

    def _tool_params(
        self, tools: list[dict[str, Any]], tool_choice: str | dict[str, Any]
    ) -> dict[str, Any]:
        return tool_request_params(tools, tool_choice, self.tool_format, self.parallel_tool_calls)

    @property
    def _log_stream(self) -> bool:
        return self.print_llm_streams and logger.isEnabledFor(logging.DEBUG)

    # --- the call ----------------------------------------------------------------------

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> AgentOutput:
        """Ask the model for this turn's tool calls.

        ``messages`` is the agent's history (not modified); ``tool_choice`` the runtime's
        choice, overridden by ``default_tool_choice``. Returns ``(text, calls)`` with at
        least one call. Raises :class:`AgentOutputError`, :class:`LLMCallError` or
        :class:`ConfigurationError`.
        """
        litellm = import_litellm()
        tools = self.offered_tools(include_mail_tools=self._debug_include_mail_tools)
        choice = self.default_tool_choice if self.default_tool_choice is not None else tool_choice
        tool_params = self._tool_params(tools, choice)
        if self.tool_format == "completions":
            return await self._completions(litellm, messages, tool_params)
        return await self._responses(litellm, messages, tool_params)

    async def _completions(
        self, litellm: Any, messages: list[dict[str, Any]], tool_params: dict[str, Any]
    ) -> AgentOutput:
        request = _completions.build_request(
            self.model,
            self.system,
            messages,
            tool_params,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            stream=self.stream_tokens,
        )
        # retries are ours (the OpenAI SDK would add its own)
        request.update(drop_params=True, max_retries=0, **self._connection())
        if self.thinking is not None:
            request["thinking"] = self.thinking

        async def attempt() -> dict[str, Any]:
            with self._model_call(request.get("messages")) as call:
                response = await litellm.acompletion(**request)
                if self.stream_tokens:
                    message = await _completions.collect_stream(
                        response, self.name, self._log_stream, self.llm
                    )
                else:
                    report_response_usage(response, self.llm)
                    message = _completions.first_message(response, self.name)
                call.output = message
                return message

        message = await self._with_retries(litellm, attempt)
        return _completions.parse_message(message, self.name)

    async def _responses(
        self, litellm: Any, messages: list[dict[str, Any]], tool_params: dict[str, Any]
    ) -> AgentOutput:
        request = _responses.build_request(
            self.model,
            self.system,
            messages,
            tool_params,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            # as for completions: an effort or a budget turns it on
            reasoning=self.thinking is not None,
            stream=self.stream_tokens,
        )
        request.update(drop_params=True, max_retries=0, **self._connection())

        async def attempt() -> Any:
            with self._model_call(request.get("input")) as call:
                response = await litellm.aresponses(**request)
                if self.stream_tokens:
                    response = await _responses.collect_stream(
                        response, self.name, self._log_stream, self.llm
                    )
                else:
                    report_response_usage(response, self.llm)
                call.output = response
                return response

        response = await self._with_retries(litellm, attempt)
        return _responses.parse_response(response, self.name)

    def _model_call(self, messages: Any) -> AbstractContextManager[ModelCall]:
        """One call to the model, a span of its own when the turn is traced."""
        provider, _, model = self.llm.rpartition("/")  # LiteLLM's "<provider>/<model>"
        return model_call(
            model or self.llm,
            system=provider.split("/")[-1] or None,
            messages=messages if isinstance(messages, list) else None,
        )

    async def _with_retries(self, litellm: Any, attempt: Callable[[], Awaitable[_T]]) -> _T:
        transient = tuple(getattr(litellm, n) for n in _TRANSIENT if hasattr(litellm, n))
        tries = 0
        while True:
            tries += 1
            logger.debug(
                "agent %s: LLM call %d to %s",
                self.name,
                tries,
                self.model,
                extra={"agent": self.name},
            )
            try:
                return await attempt()
            except AgentOutputError:
                raise
            except Exception as e:
                retryable = isinstance(e, transient)
                if not retryable or tries > self.max_retries:
                    raise self._call_error(e, tries, retryable) from e
                delay = min(self.retry_backoff * 2 ** (tries - 1), _MAX_BACKOFF)
                logger.warning(
                    "agent %s: LLM call to %s failed (%s: %s); retry %d of %d in %.2fs",
                    self.name,
                    self.model,
                    type(e).__name__,
                    first_line(e),
                    tries,
                    self.max_retries,
                    delay,
                    extra={"agent": self.name},
                )
                await asyncio.sleep(delay)

    def _call_error(self, error: Exception, tries: int, retryable: bool) -> LLMCallError:
        return LLMCallError.after(
            error,
            agent=self.name,
            model=self.model,
            attempts=tries,
            retryable=retryable,
            setting=self._url_setting(),
        )

    def _url_setting(self) -> str:
        """What sets the URL this agent's calls go to, for error messages."""
        if self.api_base:
            return f"the api_base of agent '{self.name}'"
        if self.use_proxy:
            return "LITELLM_PROXY_API_BASE"
        return f"the provider's default; an api_base on agent '{self.name}' changes it"


#: Deprecated: ``base_agent_factory(comm_targets, tools, user_token, llm, system,
#: name="base_agent", ...)`` warns ``DeprecationWarning`` and returns a
#: :class:`LiteLLMAgentFunction`.
base_agent_factory = deprecated_factory(
    LiteLLMAgentFunction,
    "base_agent_factory",
    extra=(
        "stream_tokens",
        "print_llm_streams",
        "_debug_include_mail_tools",
        "default_tool_choice",
    ),
    name="base_agent",
    user_token=REQUIRED,
    system=REQUIRED,
)
