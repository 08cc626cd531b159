"""The ``summarizer`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMSummarizerFunction``, ``actions:summarize_text``, ``actions:create_bibliography``."""

from __future__ import annotations

from mail.examples.research.summarizer.actions import create_bibliography, summarize_text
from mail.examples.research.summarizer.agent import LiteLLMSummarizerFunction
from mail.examples.research.summarizer.prompts import SYSPROMPT

__all__ = ["LiteLLMSummarizerFunction", "SYSPROMPT", "create_bibliography", "summarize_text"]
