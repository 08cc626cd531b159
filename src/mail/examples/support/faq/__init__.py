"""The ``faq`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMFaqFunction``, ``actions:search_faq``."""

from __future__ import annotations

from mail.examples.support.faq.actions import search_faq
from mail.examples.support.faq.agent import LiteLLMFaqFunction
from mail.examples.support.faq.prompts import SYSPROMPT

__all__ = ["LiteLLMFaqFunction", "SYSPROMPT", "search_faq"]
