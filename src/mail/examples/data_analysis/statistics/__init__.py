"""The ``statistics`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMStatisticsFunction``, ``actions:calculate_statistics``, ``actions:run_correlation``."""

from __future__ import annotations

from mail.examples.data_analysis.statistics.actions import calculate_statistics, run_correlation
from mail.examples.data_analysis.statistics.agent import LiteLLMStatisticsFunction
from mail.examples.data_analysis.statistics.prompts import SYSPROMPT

__all__ = ["LiteLLMStatisticsFunction", "SYSPROMPT", "calculate_statistics", "run_correlation"]
