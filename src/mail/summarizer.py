"""v1.3.6's ``mail.summarizer``: a short title for a task, written by a model.

Our server's ``/ui/task-summary`` titles a task without a model (the first user message,
shortened: :func:`mail.core.tasks.short_title`); this module is for code that asks a model,
as v1.3.6's did, through LiteLLM with a forced ``submit_title`` tool call. When the model
fails or answers without the call, :meth:`TaskSummarizer.summarize` falls back to
``short_title`` of the first message's text rather than raising.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from mail.core.tasks import short_title

__all__ = [
    "SYSTEM_PROMPT",
    "SubmitTitleArgs",
    "submit_title_action",
    "TaskSummarizer",
    "summarize_task",
]

logger = logging.getLogger("mail.summarizer")

SYSTEM_PROMPT = (
    "You title conversations between a user and a swarm of agents. Read the messages and "
    "call submit_title with a title of at most eight words that says what the task is "
    "about. Do not answer the task."
)

_DEFAULT_MODEL = "openai/gpt-5-nano"
_DEFAULT_MAX_MESSAGES = 20


class SubmitTitleArgs(BaseModel):
    """The arguments of the ``submit_title`` tool."""

    title: str = Field(description="The title of the task, at most eight words.")


#: The ``submit_title`` tool (OpenAI chat-completions form) the model must call.
submit_title_action: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_title",
        "description": "Submit the title of the task.",
        "parameters": SubmitTitleArgs.model_json_schema(),
    },
}


def _text(message: Any) -> str:
    if isinstance(message, dict):
        inner = message.get("message")
        if isinstance(inner, dict):
            return str(inner.get("body", ""))
        content = message.get("content", message.get("body", ""))
        return content if isinstance(content, str) else json.dumps(content)
    return str(message)


class TaskSummarizer:
    """Titles tasks with ``model`` (a LiteLLM model name)."""

    def __init__(self, model: str = _DEFAULT_MODEL) -> None:
        self.model = model

    async def summarize(
        self, messages: Sequence[Any], max_messages: int = _DEFAULT_MAX_MESSAGES
    ) -> str:
        """A title for the task of ``messages`` (MAIL messages, chat messages or strings;
        the last ``max_messages`` are shown to the model)."""
        texts = [t for t in (_text(m) for m in messages) if t]
        if not texts:
            return "<no messages>"
        fallback = short_title(texts[0])
        shown = "\n\n".join(f"[{i + 1}] {t}" for i, t in enumerate(texts[-max_messages:]))
        try:
            import litellm  # noqa: PLC0415  # heavy: only when a model is asked

            response = await litellm.acompletion(
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": shown},
                ],
                tools=[submit_title_action],
                tool_choice={"type": "function", "function": {"name": "submit_title"}},
            )
            call = response.choices[0].message.tool_calls[0]
            title = SubmitTitleArgs.model_validate_json(call.function.arguments).title.strip()
        except Exception as e:  # noqa: BLE001  # any model failure: the plain title
            logger.warning("task summary by %s failed (%s); using the first message", self.model, e)
            return fallback
        return title or fallback

    async def shutdown(self) -> None:
        """Nothing to release (kept for v1.3.6 callers)."""


async def summarize_task(messages: Sequence[Any], max_messages: int = _DEFAULT_MAX_MESSAGES) -> str:
    """:meth:`TaskSummarizer.summarize` with the default model."""
    return await TaskSummarizer().summarize(messages, max_messages)
