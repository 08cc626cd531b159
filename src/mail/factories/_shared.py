"""What the LLM agent functions share (LiteLLM's here, the SDK-based ones of
:mod:`mail.stdlib`): their errors, parameter checks and thinking defaults, tool-spec and
tool-choice normalization, and the conversion of SDK pydantic objects to plain dicts.

Public names are re-exported by :mod:`mail.factories.base`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from mail.core.tools import ToolFormat, pydantic_model_to_tool, tool_name
from mail.errors import MAILError, SwarmDefinitionError, UnreachableError
from mail.factories._litellm import connection_url, unreachable

__all__ = [
    "AgentOutputError",
    "LLMCallError",
    "LLMUnreachableError",
    "plain",
    "parse_arguments",
    "new_call_id",
    "normalize_tool",
    "normalize_tool_choice",
    "tool_request_params",
    "THINKING_BUDGETS",
    "check_llm_params",
    "thinking_settings",
    "first_line",
]

_PREVIEW = 200  # characters of bad model output quoted in an error

#: Thinking budget (tokens) used for each ``reasoning_effort`` when none is given.
THINKING_BUDGETS: dict[str, int] = {"minimal": 2000, "low": 4000, "medium": 8000, "high": 16000}
_THINKING_HEADROOM = 4000  # max_tokens defaults to the thinking budget plus this


class AgentOutputError(MAILError):
    """The model's answer cannot be turned into tool calls.

    Raised by LiteLLM agent functions when a tool call's arguments are not a JSON object
    or when the answer holds neither text nor tool calls. ``agent`` and ``tool`` name
    where (``tool`` is ``None`` for an empty answer). The runtime reports it as an
    ``agent_error`` and tells the agent.
    """

    def __init__(self, message: str, *, agent: str, tool: str | None = None) -> None:
        self.agent = agent
        self.tool = tool
        super().__init__(f"agent '{agent}': {message}")


class LLMCallError(MAILError):
    """The LLM call failed, after retries for transient failures.

    ``status`` is the HTTP status of the last failure (``None`` for timeouts and
    connection errors), ``attempts`` how many requests were made, ``retryable`` whether
    the last failure was of a transient kind. The LiteLLM exception is ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str,
        model: str,
        attempts: int,
        status: int | None,
        retryable: bool,
    ) -> None:
        self.agent = agent
        self.model = model
        self.attempts = attempts
        self.status = status
        self.retryable = retryable
        super().__init__(message)

    @classmethod
    def after(
        cls,
        error: BaseException,
        *,
        agent: str,
        model: str,
        attempts: int,
        retryable: bool,
        setting: str = "",
    ) -> LLMCallError:
        """The error for a call to ``model`` that last failed with ``error``: its message
        names the agent, the attempts, the failure and, for a connection failure, the URL
        tried and ``setting``, what sets it (``LITELLM_PROXY_API_BASE``...); ``status`` is
        ``error.status_code`` when it has one. An address that cannot be reached at all
        gives an :class:`LLMUnreachableError`."""
        status = getattr(error, "status_code", None)
        url = connection_url(error)
        where = ""
        if url:
            where = f" (could not connect to {url}{f', set by {setting}' if setting else ''})"
        kind = LLMUnreachableError if unreachable(error) else cls
        return kind(
            f"agent '{agent}': LLM call to '{model}' failed after {attempts} "
            f"attempt{'s' if attempts > 1 else ''}: {type(error).__name__}: {error}{where}",
            agent=agent,
            model=model,
            attempts=attempts,
            status=status if isinstance(status, int) else None,
            retryable=retryable,
        )


class LLMUnreachableError(LLMCallError, UnreachableError):
    """The LLM's address cannot be reached at all (connection refused, unknown host): the
    runtime does not give the agent another turn for it."""


def plain(obj: Any) -> Any:
    """``obj`` as JSON-ready builtins: pydantic models dumped (``None`` fields dropped)."""
    if isinstance(obj, BaseModel):
        # warnings off: an SDK object may hold what its type does not say (a tool
        # call's malformed input as a string), which the parsers then report
        return obj.model_dump(mode="json", exclude_none=True, by_alias=True, warnings=False)
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    return obj


def new_call_id(prefix: str = "call") -> str:
    """A fresh tool-call id for calls the provider sent without one."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def parse_arguments(agent: str, tool: str, raw: Any) -> dict[str, Any]:
    """Decode a tool call's ``arguments``; raise :class:`AgentOutputError` if not a JSON object."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    text = raw if isinstance(raw, str) else str(raw)
    try:
        args = json.loads(text)
    except json.JSONDecodeError as e:
        raise AgentOutputError(
            f"tool call '{tool}' has malformed JSON arguments ({e.msg} at position {e.pos}): "
            f"{text[:_PREVIEW]!r}",
            agent=agent,
            tool=tool,
        ) from e
    if not isinstance(args, dict):
        raise AgentOutputError(
            f"tool call '{tool}' arguments must be a JSON object, got {type(args).__name__}: "
            f"{text[:_PREVIEW]!r}",
            agent=agent,
            tool=tool,
        )
    return args


def _strip_none(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if v is not None}


def normalize_tool(tool: Any, style: ToolFormat, agent: str) -> dict[str, Any]:
    """Return ``tool`` as a spec in ``style``.

    Accepts a spec in either format (converted), a provider built-in such as
    ``{"type": "web_search"}`` (kept), or a pydantic model class (its strict spec).
    Raises :class:`SwarmDefinitionError` for anything else.
    """
    if isinstance(tool, type) and issubclass(tool, BaseModel):
        return pydantic_model_to_tool(tool, style=style)
    if not isinstance(tool, dict):
        raise SwarmDefinitionError(
            f"a tool must be a spec dict or a pydantic model, got {type(tool).__name__}",
            agent=agent,
            field="tools",
        )
    if tool.get("type") != "function":
        return dict(tool)
    name = tool_name(tool)
    function = tool.get("function")
    if style == "responses" and isinstance(function, dict):
        return _strip_none(
            {
                "type": "function",
                "name": name,
                "description": function.get("description"),
                "parameters": function.get("parameters"),
                "strict": function.get("strict"),
            }
        )
    if style == "completions" and not isinstance(function, dict):
        inner = {k: v for k, v in tool.items() if k != "type"}
        return {"type": "function", "function": inner}
    return dict(tool)


def normalize_tool_choice(
    choice: str | dict[str, Any], style: ToolFormat, offered: Iterable[str]
) -> str | dict[str, Any]:
    """Shape a forced-function ``choice`` for ``style``; ``"required"`` if it names no offered tool."""
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return choice
    function = choice.get("function")
    name = choice.get("name") or (function.get("name") if isinstance(function, dict) else None)
    if not isinstance(name, str) or name not in set(offered):
        return "required"
    if style == "completions":
        return {"type": "function", "function": {"name": name}}
    return {"type": "function", "name": name}


def tool_request_params(
    tools: list[dict[str, Any]],
    tool_choice: str | dict[str, Any],
    style: ToolFormat,
    parallel_tool_calls: bool | None,
) -> dict[str, Any]:
    """``tools``, ``tool_choice`` (shaped for ``style``) and, when set,
    ``parallel_tool_calls`` for a request; nothing when no tool is offered."""
    if not tools:
        return {}
    names = [tool_name(t) for t in tools if t.get("type") == "function"]
    params: dict[str, Any] = {
        "tools": tools,
        "tool_choice": normalize_tool_choice(tool_choice, style, names),
    }
    if parallel_tool_calls is not None:
        params["parallel_tool_calls"] = parallel_tool_calls
    return params


def thinking_settings(
    reasoning_effort: str | None, thinking_budget: int | None, max_tokens: int | None
) -> tuple[int | None, int | None]:
    """The ``(thinking_budget, max_tokens)`` to use: the budget defaults per effort
    (:data:`THINKING_BUDGETS`), ``max_tokens`` to the budget + 4000 when thinking is on."""
    if reasoning_effort is not None and thinking_budget is None:
        thinking_budget = THINKING_BUDGETS[reasoning_effort]
    if thinking_budget is not None and max_tokens is None:
        max_tokens = thinking_budget + _THINKING_HEADROOM
    return thinking_budget, max_tokens


def check_llm_params(
    name: str,
    model: str,
    reasoning_effort: str | None,
    timeout: float,
    max_retries: int,
    model_field: str = "llm",
) -> None:
    """Raise :class:`SwarmDefinitionError` for an empty model name (``model_field`` names
    the parameter), an unknown effort, a timeout not positive or negative retries."""

    def bad(field: str, message: str) -> SwarmDefinitionError:
        return SwarmDefinitionError(message, agent=name, field=field)

    if not isinstance(model, str) or not model:
        raise bad(model_field, "an LLM agent needs a model name")
    if reasoning_effort is not None and reasoning_effort not in THINKING_BUDGETS:
        raise bad(
            "reasoning_effort",
            f"must be one of {', '.join(THINKING_BUDGETS)}, got {reasoning_effort!r}",
        )
    if timeout <= 0:
        raise bad("timeout", f"must be positive, got {timeout!r}")
    if max_retries < 0:
        raise bad("max_retries", f"must be 0 or more, got {max_retries!r}")


def first_line(error: BaseException) -> str:
    """The first line of ``str(error)`` (empty when it has none)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""
