"""Agent functions on the ``anthropic`` SDK's Messages API, so Claude models work without
LiteLLM.

:class:`AnthropicAgentFunction` calls ``messages.create`` (or ``messages.stream`` with
``stream_tokens``) with tool use and, with ``thinking_budget`` or ``reasoning_effort``,
extended thinking. Its history is kept as chat-completions items
(``tool_format="completions"``) and converted per call
(:mod:`mail.factories._anthropic_convert`); the thinking blocks of a turn are kept on its
completion (``thinking_blocks``) and sent back with their signatures, as Anthropic
requires with thinking and tool use. One ``anthropic.AsyncAnthropic`` client is created
per agent function on its first call; the key comes from ``api_key`` or
``ANTHROPIC_API_KEY``, the endpoint from ``base_url`` or ``ANTHROPIC_BASE_URL`` (read by
the SDK), which retries transient failures itself (``max_retries``: connection errors,
408, 409, 429, 5xx and 529 overloaded).

Needs the extra ``mail-swarms[anthropic]`` (imported on an agent's first call, not with
this module). :mod:`mail.stdlib.anthropic` re-exports both classes.

Errors::

    MAILError
    ├── AgentOutputError   the answer has malformed tool input, or nothing at all
    ├── LLMCallError       the call failed (status, attempts, retryable)
    ├── ConfigurationError the anthropic package is missing, or no API key is found
    └── SwarmDefinitionError a bad parameter (e.g. tool_format="responses")
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from mail.core import emit_delta
from mail.core.agents import AgentOutput
from mail.core.tools import ToolFormat
from mail.errors import ConfigurationError
from mail.factories import _anthropic_convert as _convert
from mail.factories._completions import parse_message
from mail.factories._live_output import AnswerStreams, report_response_usage
from mail.factories._sdk import SDKAgentFunction, import_sdk
from mail.factories._signature import rebind
from mail.factories.supervisor import SupervisorFunction

__all__ = ["AnthropicAgentFunction", "AnthropicSupervisorFunction"]

logger = logging.getLogger("mail.factories.base")

#: ``max_tokens`` when thinking is off and none is given (Anthropic requires one).
DEFAULT_MAX_TOKENS = 4096
_STREAM_DELTAS = {"text_delta": ("text", ""), "thinking_delta": ("thinking", " (thinking)")}


class AnthropicAgentFunction(SDKAgentFunction):
    """An agent function on Anthropic's Messages API.

    Parameters: ``name, comm_targets, model, tools, enable_entrypoint=False,
    enable_interswarm=False, can_complete_tasks=False, tool_format="completions",
    exclude_tools=()``, then keyword-only ``system``, ``api_key``, ``base_url``,
    ``timeout``, ``max_retries`` (5), ``reasoning_effort``, ``thinking_budget``,
    ``max_tokens``, ``stream_tokens``, ``print_llm_streams``, ``parallel_tool_calls``,
    ``default_tool_choice``, ``extra_headers``, ``_debug_include_mail_tools`` (see
    :class:`mail.factories._sdk.SDKAgentFunction`). ``model`` is e.g.
    ``"claude-sonnet-4-5"``.

    Thinking: ``thinking_budget`` (or ``reasoning_effort``, budgets 2000/4000/8000/16000)
    sends ``thinking={"type": "enabled", "budget_tokens": N}``; ``max_tokens`` defaults to
    N + 4000, else to 4096. Thinking forbids a forced tool choice, so the runtime's
    ``"required"`` is then sent as ``auto``. The thinking text reaches
    ``AgentToolCall.reasoning``.

    Calling raises :class:`~mail.factories.base.AgentOutputError`,
    :class:`~mail.factories.base.LLMCallError` or :class:`ConfigurationError`.
    """

    api_format: ClassVar[ToolFormat] = "completions"

    provider = "anthropic"

    @classmethod
    def _import_sdk(cls) -> Any:
        return import_sdk("anthropic", "anthropic")

    def _new_client(self, sdk: Any) -> Any:
        client = sdk.AsyncAnthropic(
            api_key=self.api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            default_headers=self.extra_headers or None,
        )
        if client.api_key is None and client.auth_token is None and not _has_credentials(client):
            raise ConfigurationError(
                f"agent '{self.name}': no Anthropic API key: pass api_key or set ANTHROPIC_API_KEY"
            )
        return client

    def request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: str | dict[str, Any],
    ) -> dict[str, Any]:
        """The ``messages.create`` parameters for one turn on ``messages`` (the history in
        chat-completions form) offering ``tools`` (chat-completions specs)."""
        system, history = _convert.request_history(self.system, messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": history,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = _convert.tools(tools)
            request["tool_choice"] = _convert.tool_choice(
                tool_choice,
                tools,
                thinking=self.thinking_budget is not None,
                parallel_tool_calls=self.parallel_tool_calls,
            )
        if self.thinking_budget is not None:
            request["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return request

    async def _turn(
        self,
        client: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: str | dict[str, Any],
    ) -> AgentOutput:
        request = self.request(messages, tools, tool_choice)
        if self.stream_tokens:
            answers = AnswerStreams()
            async with client.messages.stream(**request) as stream:
                async for event in stream:
                    self._on_event(event, answers)
                message = await stream.get_final_message()
        else:
            message = await client.messages.create(**request)
        report_response_usage(message)
        return parse_message(_convert.assistant_message(message), self.name)

    def _on_event(self, event: Any, answers: AnswerStreams) -> None:
        """Send a streamed event's text, thinking and ``task_complete`` answer to the
        runtime as live deltas (and to the log while ``print_llm_streams``)."""
        kind = getattr(event, "type", None)
        if kind == "content_block_start" and event.content_block.type == "tool_use":
            block = event.content_block
            answers.feed(event.index, block.name, block.id, "")  # names the call's index
            return
        if kind != "content_block_delta":
            return
        delta = event.delta
        delta_type = getattr(delta, "type", "")
        if delta_type == "input_json_delta":
            answers.feed(event.index, None, None, delta.partial_json)
            return
        field, label = _STREAM_DELTAS.get(delta_type, (None, ""))
        if field is None:
            return
        text = getattr(delta, field, "")
        emit_delta("reasoning" if field == "thinking" else "text", text)
        if self._log_stream:
            logger.debug("%s%s: %s", self.name, label, text, extra={"agent": self.name})


def _has_credentials(client: Any) -> bool:
    # other credential sources (profiles, workload identity) give the client a token cache
    return getattr(client, "_token_cache", None) is not None


@rebind(move={"can_complete_tasks": "tools"}, can_complete_tasks=True)
class AnthropicSupervisorFunction(AnthropicAgentFunction, SupervisorFunction):
    """An Anthropic supervisor: :class:`AnthropicAgentFunction` with the supervisor tools;
    ``can_complete_tasks`` (right after ``tools``) is always True."""
