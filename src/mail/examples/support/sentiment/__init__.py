"""The ``sentiment`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMSentimentFunction``, ``actions:analyze_sentiment``, ``actions:create_escalation``."""

from __future__ import annotations

from mail.examples.support.sentiment.actions import analyze_sentiment, create_escalation
from mail.examples.support.sentiment.agent import LiteLLMSentimentFunction
from mail.examples.support.sentiment.prompts import SYSPROMPT

__all__ = ["LiteLLMSentimentFunction", "SYSPROMPT", "analyze_sentiment", "create_escalation"]
