"""Agent functions on the ``openai`` SDK: chat completions and the Responses API.

:class:`OpenAIChatCompletionsAgentFunction` calls ``chat.completions.create`` and keeps a
chat-completions history (``tool_format="completions"``);
:class:`OpenAIResponsesAgentFunction` calls ``responses.create`` and keeps Responses items
(``tool_format="responses"``). Each has a supervisor variant. One ``openai.AsyncOpenAI``
client is created per agent function on its first call; the key comes from ``api_key`` or
``OPENAI_API_KEY``, the endpoint from ``base_url`` or ``OPENAI_BASE_URL`` (read by the
SDK). The SDK retries transient failures itself (``max_retries``).

Needs the extra ``mail-swarms[openai]`` (imported on an agent's first call, not with this
module). :mod:`mail.stdlib.openai` and v1.3.6's :mod:`mail.stdlib.openai.agents`
re-export the four classes.

Errors::

    MAILError
    ├── AgentOutputError   the answer has malformed tool arguments, or nothing at all
    ├── LLMCallError       the call failed (status, attempts, retryable)
    ├── ConfigurationError the openai package is missing, or no API key is found
    └── SwarmDefinitionError a bad parameter (e.g. another tool_format)
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, cast

from mail.core.agents import AgentOutput
from mail.core.tools import ToolFormat
from mail.errors import ConfigurationError
from mail.factories import _completions, _responses
from mail.factories._live_output import report_response_usage
from mail.factories._sdk import SDKAgentFunction, import_sdk
from mail.factories._shared import first_line, tool_request_params
from mail.factories._signature import rebind
from mail.factories.supervisor import SupervisorFunction

__all__ = [
    "OpenAIChatCompletionsAgentFunction",
    "OpenAIChatCompletionsSupervisorFunction",
    "OpenAIResponsesAgentFunction",
    "OpenAIResponsesSupervisorFunction",
]

_SUPERVISOR = {"can_complete_tasks": "tools"}  # v1.3.6 puts it right after tools


class _OpenAIAgentFunction(SDKAgentFunction):
    provider = "openai"

    @classmethod
    def _import_sdk(cls) -> Any:
        return import_sdk("openai", "openai")

    def _new_client(self, sdk: Any) -> Any:
        try:
            return sdk.AsyncOpenAI(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                default_headers=self.extra_headers or None,
            )
        except sdk.OpenAIError as e:  # no key given nor in OPENAI_API_KEY
            raise ConfigurationError(f"agent '{self.name}': {first_line(e)}") from e

    async def _turn(
        self,
        client: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: str | dict[str, Any],
    ) -> AgentOutput:
        params = tool_request_params(tools, tool_choice, self.api_format, self.parallel_tool_calls)
        response = await self._create(client)(**self._request(messages, params))
        if self.stream_tokens:  # the stream reports its deltas and usage itself
            async with response as stream:
                response = await self._collect(stream)
        else:
            report_response_usage(response)
        return self._parse(response)

    @abstractmethod
    def _request(
        self, messages: list[dict[str, Any]], tool_params: dict[str, Any]
    ) -> dict[str, Any]: ...

    @abstractmethod
    def _create(self, client: Any) -> Callable[..., Awaitable[Any]]: ...

    @abstractmethod
    async def _collect(self, stream: Any) -> Any: ...

    @abstractmethod
    def _parse(self, answer: Any) -> AgentOutput: ...


@rebind(tool_format="completions")
class OpenAIChatCompletionsAgentFunction(_OpenAIAgentFunction):
    """An agent function on OpenAI's chat completions (``client.chat.completions.create``).

    Parameters: ``name, comm_targets, model, tools, enable_entrypoint=False,
    enable_interswarm=False, can_complete_tasks=False, tool_format="completions",
    exclude_tools=()`` as v1.3.6, then keyword-only ``system``, ``api_key``, ``base_url``,
    ``timeout``, ``max_retries`` (5), ``reasoning_effort``, ``thinking_budget``,
    ``max_tokens`` (sent as ``max_completion_tokens``), ``stream_tokens``,
    ``print_llm_streams``, ``parallel_tool_calls``, ``default_tool_choice``,
    ``extra_headers``, ``_debug_include_mail_tools`` (see
    :class:`mail.factories._sdk.SDKAgentFunction`).

    Calling raises :class:`~mail.factories.base.AgentOutputError`,
    :class:`~mail.factories.base.LLMCallError` or :class:`ConfigurationError`.
    """

    api_format: ClassVar[ToolFormat] = "completions"

    def _request(
        self, messages: list[dict[str, Any]], tool_params: dict[str, Any]
    ) -> dict[str, Any]:
        return _completions.build_request(
            self.model,
            self.system,
            messages,
            tool_params,
            max_tokens=self.max_tokens,
            max_tokens_field="max_completion_tokens",
            reasoning_effort=self.reasoning_effort,
            stream=self.stream_tokens,
        )

    def _create(self, client: Any) -> Callable[..., Awaitable[Any]]:
        return cast("Callable[..., Awaitable[Any]]", client.chat.completions.create)

    async def _collect(self, stream: Any) -> dict[str, Any]:
        return await _completions.collect_stream(stream, self.name, self._log_stream)

    def _parse(self, answer: Any) -> AgentOutput:
        message = (
            answer if isinstance(answer, dict) else _completions.first_message(answer, self.name)
        )
        return _completions.parse_message(message, self.name)


@rebind(tool_format="responses")
class OpenAIResponsesAgentFunction(_OpenAIAgentFunction):
    """An agent function on OpenAI's Responses API (``client.responses.create``).

    Parameters as :class:`OpenAIChatCompletionsAgentFunction`, with
    ``tool_format="responses"``; the system prompt is sent as ``instructions``,
    ``max_tokens`` as ``max_output_tokens``, and an effort or a thinking budget asks for
    ``reasoning={"effort": reasoning_effort or "medium", "summary": "auto"}``.
    """

    api_format: ClassVar[ToolFormat] = "responses"

    def _request(
        self, messages: list[dict[str, Any]], tool_params: dict[str, Any]
    ) -> dict[str, Any]:
        return _responses.build_request(
            self.model,
            self.system,
            messages,
            tool_params,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            reasoning=self.thinking_budget is not None,
            stream=self.stream_tokens,
        )

    def _create(self, client: Any) -> Callable[..., Awaitable[Any]]:
        return cast("Callable[..., Awaitable[Any]]", client.responses.create)

    async def _collect(self, stream: Any) -> Any:
        return await _responses.collect_stream(stream, self.name, self._log_stream)

    def _parse(self, answer: Any) -> AgentOutput:
        return _responses.parse_response(answer, self.name)


@rebind(move=_SUPERVISOR, can_complete_tasks=True)
class OpenAIChatCompletionsSupervisorFunction(
    OpenAIChatCompletionsAgentFunction, SupervisorFunction
):
    """A chat-completions supervisor: :class:`OpenAIChatCompletionsAgentFunction` with the
    supervisor tools; ``can_complete_tasks`` (right after ``tools``) is always True."""


@rebind(move=_SUPERVISOR, can_complete_tasks=True)
class OpenAIResponsesSupervisorFunction(OpenAIResponsesAgentFunction, SupervisorFunction):
    """A Responses supervisor: :class:`OpenAIResponsesAgentFunction` with the supervisor
    tools; ``can_complete_tasks`` (right after ``tools``) is always True."""
