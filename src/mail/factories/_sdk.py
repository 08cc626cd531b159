"""What the agent functions on a provider's own SDK share (private): those of
:mod:`mail.factories.openai` and :mod:`mail.factories.anthropic`.

:class:`SDKAgentFunction` declares their parameters once, creates the provider's client on
the first call (once per agent function), offers the tools and maps the SDK's failures to
:class:`~mail.factories.base.LLMCallError`. A subclass names its SDK and builds one turn.
"""

from __future__ import annotations

import importlib
import logging
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from mail.core import model_call
from mail.core.agents import AgentOutput
from mail.core.tools import ToolFormat
from mail.errors import ConfigurationError, SwarmDefinitionError
from mail.factories._shared import (
    AgentOutputError,
    LLMCallError,
    check_llm_params,
    thinking_settings,
)
from mail.factories.base import MAILAgentFunction, ReasoningEffort

__all__ = ["SDKAgentFunction", "import_sdk"]

logger = logging.getLogger("mail.factories.base")  # where the shared stream helpers log

_RETRIED_STATUSES = frozenset({408, 409, 429})  # and every 5xx: the SDKs retry these
_SERVER_ERRORS = 500


def import_sdk(module: str, extra: str) -> Any:
    """Import the provider SDK ``module``; raise :class:`ConfigurationError` naming the
    extra ``mail-swarms[extra]`` when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigurationError(
            f"the {extra} agents need the {module} package: pip install 'mail-swarms[{extra}]'"
        ) from e


class SDKAgentFunction(MAILAgentFunction):
    """Base of the agent functions that call a provider's SDK directly.

    Args:
        name, comm_targets, tools, enable_entrypoint, enable_interswarm,
            can_complete_tasks, exclude_tools: as for :class:`MAILAgentFunction`.
        model: the provider's model name (``gpt-5-mini``, ``claude-sonnet-4-5``).
        tool_format: must be the class's :attr:`api_format` (the history the API keeps).
        system: system prompt, sent with every call (never stored in the history).
        api_key, base_url: passed to the SDK client; ``None`` lets the SDK read its
            environment variables (``OPENAI_API_KEY``/``OPENAI_BASE_URL``,
            ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``).
        timeout: seconds per request. max_retries: the SDK's own retries of connection
            errors, 408, 409, 429 and 5xx (5 by default).
        reasoning_effort, thinking_budget: turn reasoning on (the budget defaults per
            effort as :data:`~mail.factories.base.THINKING_BUDGETS`); ``max_tokens`` then
            defaults to the budget + 4000.
        stream_tokens: stream the answer (deltas logged at DEBUG on
            ``mail.factories.base`` while ``print_llm_streams``).
        parallel_tool_calls: allow several tool calls per turn (provider default if None).
        default_tool_choice: overrides the runtime's ``tool_choice``.
        extra_headers: headers sent with every request.
        _debug_include_mail_tools: False offers no base MAIL tools.
        **kwargs: ignored (logged at DEBUG), e.g. the ``user_token`` a swarm passes.

    Raises :class:`SwarmDefinitionError` for a bad parameter or another ``tool_format``.
    """

    #: The tool format (and history shape) the provider's API works with.
    api_format: ClassVar[ToolFormat] = "completions"

    def __init__(  # noqa: PLR0917  # the v1.3.6 order, then keyword-only extras
        self,
        name: str,
        comm_targets: Sequence[str],
        model: str,
        tools: Sequence[Any],
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        can_complete_tasks: bool = False,
        tool_format: ToolFormat = "completions",
        exclude_tools: Sequence[str] = (),
        *,
        system: str = "",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        reasoning_effort: ReasoningEffort | None = None,
        thinking_budget: int | None = None,
        max_tokens: int | None = None,
        stream_tokens: bool = False,
        print_llm_streams: bool = True,
        parallel_tool_calls: bool | None = None,
        default_tool_choice: str | dict[str, Any] | None = None,
        extra_headers: dict[str, str] | None = None,
        _debug_include_mail_tools: bool = True,
        **kwargs: Any,
    ) -> None:
        if tool_format != self.api_format:
            raise SwarmDefinitionError(
                f"{type(self).__name__} keeps a {self.api_format} history: set tool_format "
                f"to {self.api_format!r} (got {tool_format!r})",
                agent=name,
                field="tool_format",
            )
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
        check_llm_params(name, model, reasoning_effort, timeout, max_retries, "model")
        self.thinking_budget, self.max_tokens = thinking_settings(
            reasoning_effort, thinking_budget, max_tokens
        )
        self.model = model
        self.system = system
        self.api_key = api_key
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.reasoning_effort = reasoning_effort
        self.stream_tokens = stream_tokens
        self.print_llm_streams = print_llm_streams
        self.parallel_tool_calls = parallel_tool_calls
        self.default_tool_choice = default_tool_choice
        self.extra_headers = dict(extra_headers or {})
        self._debug_include_mail_tools = _debug_include_mail_tools
        self._client: Any = None
        self._sdk: Any = None

    # --- what a provider supplies ---------------------------------------------------------

    #: the provider, as the GenAI conventions name it (``gen_ai.system`` of its spans)
    provider: ClassVar[str] = ""

    @classmethod
    @abstractmethod
    def _import_sdk(cls) -> Any:
        """The SDK module (raises :class:`ConfigurationError` when missing)."""

    @abstractmethod
    def _new_client(self, sdk: Any) -> Any:
        """A new async client of ``sdk`` for this agent's settings; raises
        :class:`ConfigurationError` when no credentials are found."""

    @abstractmethod
    async def _turn(
        self,
        client: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: str | dict[str, Any],
    ) -> AgentOutput:
        """One request and its answer as the agent's output."""

    # --- the call ------------------------------------------------------------------------

    @property
    def _log_stream(self) -> bool:
        return self.print_llm_streams and logger.isEnabledFor(logging.DEBUG)

    def client(self) -> Any:
        """The SDK client, created on first use and kept. Raises
        :class:`ConfigurationError` when the SDK is missing or finds no credentials."""
        if self._client is None:
            sdk = self._import_sdk()
            self._client = self._new_client(sdk)
            self._sdk = sdk
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client (its connections), if one was created."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> AgentOutput:
        """Ask the model for this turn's tool calls.

        ``messages`` is the agent's history (not modified); ``tool_choice`` the runtime's
        choice, overridden by ``default_tool_choice``. Returns ``(text, calls)`` with at
        least one call. Raises :class:`~mail.factories.base.AgentOutputError` (unusable
        answer), :class:`~mail.factories.base.LLMCallError` (the call failed, after the
        SDK's retries) or :class:`ConfigurationError` (SDK or credentials missing).
        """
        client = self.client()
        tools = self.offered_tools(include_mail_tools=self._debug_include_mail_tools)
        choice = self.default_tool_choice if self.default_tool_choice is not None else tool_choice
        logger.debug("agent %s: LLM call to %s", self.name, self.model, extra={"agent": self.name})
        try:
            with model_call(self.model, system=self.provider, messages=messages) as call:
                text, calls = await self._turn(client, messages, tools, choice)
                call.output = {"content": text, "tool_calls": [c.tool_name for c in calls]}
                return text, calls
        except AgentOutputError:
            raise
        except self._sdk.APIError as e:
            raise self._call_error(e, self._sdk) from e

    def _call_error(self, error: Exception, sdk: Any) -> LLMCallError:
        status = getattr(error, "status_code", None)
        retryable = isinstance(error, sdk.APIConnectionError) or (
            isinstance(status, int) and (status in _RETRIED_STATUSES or status >= _SERVER_ERRORS)
        )
        return LLMCallError.after(
            error,
            agent=self.name,
            model=self.model,
            attempts=1 + self.max_retries if retryable else 1,  # the SDK retried it
            retryable=retryable,
        )
