"""The LiteLLM summarizer of ``mail/summary`` (``[server.map] summarizer = "litellm"``).

It sends the conversation's public turns, one line each (``author: text``), to the
configured model and asks for one JSON object with ``text`` and the requested sections
(``keyPoints``, ``keyDecisions``, ``openQuestions``: lists of strings). When the call
fails or the answer is not such an object, the summary is the extractive one, marked
``fallbackFrom: "litellm"``, and the reason is logged (``mail.server``, WARNING); the
fallback is cached like any summary, until ``regenerate: true``. LiteLLM is imported on
the first summary, never with :mod:`mail.conversations`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mail.conversations._summarizers import (
    ExtractiveSummarizer,
    Summarizer,
    extractive_summary,
    turn_text,
)
from mail.conversations.models import Turn

if TYPE_CHECKING:
    from mail.config.server import MapConfig

__all__ = ["LiteLLMSummarizer", "summarizer_for"]

logger = logging.getLogger("mail.server")

#: what the model reads at most: the newest turns, then the newest characters
_MAX_TURNS = 200
_MAX_CHARS = 60_000
_SYSTEM = (
    "You summarize a conversation between people and AI agents. Answer with one JSON "
    'object and nothing else, with these keys: {keys}. "text" is a summary of two to '
    "four sentences.{lists}"
)
_SECTION_MEANING = {
    "keyPoints": "the main points",
    "keyDecisions": "what was decided or agreed",
    "openQuestions": "the questions still unanswered",
}


class _Unusable(Exception):
    """The model's answer is not the JSON object asked for."""


def summarizer_for(settings: MapConfig) -> Summarizer:
    """The summarizer ``[server.map]`` configures (extractive unless ``litellm``)."""
    if settings.summarizer == "litellm" and settings.summary_model is not None:
        return LiteLLMSummarizer(
            settings.summary_model,
            api_base=settings.summary_api_base,
            api_key=settings.summary_api_key,
            timeout=settings.summary_timeout,
        )
    return ExtractiveSummarizer()


def _transcript(turns: Sequence[Turn]) -> str:
    lines = []
    for turn in turns[-_MAX_TURNS:]:
        text = turn_text(turn) or json.dumps(turn["content"], ensure_ascii=False)
        lines.append(f"{turn['participantId']}: {' '.join(text.split())}")
    return "\n".join(lines)[-_MAX_CHARS:]


def _parse(content: Any, sections: Sequence[str]) -> dict[str, Any]:
    """The summary in the model's answer; raises :class:`_Unusable`."""
    if not isinstance(content, str):
        raise _Unusable("the answer has no text")
    text = content.strip()
    if text.startswith("```"):  # a fenced block: ```json ... ```
        text = text.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        found = json.loads(text)
    except ValueError as e:
        raise _Unusable("the answer is not JSON") from e
    if not isinstance(found, dict) or not isinstance(found.get("text"), str):
        raise _Unusable('the answer is not an object with a "text" string')
    summary: dict[str, Any] = {"text": found["text"]}
    for name in sections:
        items = found.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise _Unusable(f"{name} is not a list of strings")
        summary[name] = items
    return summary


class LiteLLMSummarizer:
    """A :class:`~mail.conversations._summarizers.Summarizer` that asks ``model`` (a
    LiteLLM model name) at ``api_base`` with ``api_key`` (LiteLLM's own defaults when
    ``None``), one call of at most ``timeout`` seconds, no retries; it falls back to the
    extractive summary (see the module docstring). Turns with no public text are
    summarized without the model."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout

    def _request(self, turns: Sequence[Turn], sections: Sequence[str]) -> dict[str, Any]:
        keys = ", ".join(json.dumps(k) for k in ("text", *sections))
        meanings = ", ".join(f"{name} {_SECTION_MEANING[name]}" for name in sections)
        lists = (
            " The others are lists of short strings (at most five each, possibly empty): "
            f"{meanings}."
            if sections
            else ""
        )
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": _SYSTEM.format(keys=keys, lists=lists)},
                {"role": "user", "content": _transcript(turns)},
            ],
            "response_format": {"type": "json_object"},
            "timeout": self.timeout,
            "max_retries": 0,
            "drop_params": True,
        }
        if self.api_base:
            request["api_base"] = self.api_base
        if self.api_key:
            request["api_key"] = self.api_key
        return request

    async def __call__(self, turns: Sequence[Turn], sections: Sequence[str]) -> dict[str, Any]:
        if not turns:
            return {**extractive_summary(turns), "generator": "extractive"}
        from mail.factories import import_litellm  # noqa: PLC0415  # optional, heavy

        request = self._request(turns, sections)
        try:
            litellm = import_litellm()
            response = await litellm.acompletion(**request)
            content = response.choices[0].message.content
            summary = _parse(content, sections)
        except Exception as e:  # noqa: BLE001  # any failure of the call or answer: extractive
            logger.warning(
                "the LiteLLM summarizer (%s) failed, the summary is extractive: %s",
                self.model,
                " ".join(str(e).split())[:300] or type(e).__name__,
            )
            return {
                **extractive_summary(turns),
                "generator": "extractive",
                "fallbackFrom": "litellm",
            }
        return {**summary, "generator": "litellm", "model": self.model}
