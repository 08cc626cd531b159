"""The ``analyst`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMAnalystFunction``."""

from __future__ import annotations

from mail.examples.data_analysis.analyst.agent import LiteLLMAnalystFunction
from mail.examples.data_analysis.analyst.prompts import SYSPROMPT

__all__ = ["LiteLLMAnalystFunction", "SYSPROMPT"]
