"""The ``data-analysis`` example swarm (data analysis): agents ``analyst``, ``processor``, ``statistics``, ``reporter``.

Each agent is a subpackage with ``prompts:SYSPROMPT`` and ``agent:LiteLLM<Name>Function``;
the ones with tools also have ``actions`` (``MAILAction`` objects). The scripted agents of
the offline variant ``data-analysis-offline`` are in :mod:`mail.examples.data_analysis.offline`.
"""

from __future__ import annotations

from mail.examples.data_analysis.analyst.agent import LiteLLMAnalystFunction
from mail.examples.data_analysis.processor.actions import generate_sample_data, parse_csv
from mail.examples.data_analysis.processor.agent import LiteLLMProcessorFunction
from mail.examples.data_analysis.reporter.actions import format_report
from mail.examples.data_analysis.reporter.agent import LiteLLMReporterFunction
from mail.examples.data_analysis.statistics.actions import calculate_statistics, run_correlation
from mail.examples.data_analysis.statistics.agent import LiteLLMStatisticsFunction

__all__ = [
    "LiteLLMAnalystFunction",
    "LiteLLMProcessorFunction",
    "LiteLLMReporterFunction",
    "LiteLLMStatisticsFunction",
    "calculate_statistics",
    "format_report",
    "generate_sample_data",
    "parse_csv",
    "run_correlation",
]
