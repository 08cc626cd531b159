"""The ``reporter`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMReporterFunction``, ``actions:format_report``."""

from __future__ import annotations

from mail.examples.data_analysis.reporter.actions import format_report
from mail.examples.data_analysis.reporter.agent import LiteLLMReporterFunction
from mail.examples.data_analysis.reporter.prompts import SYSPROMPT

__all__ = ["LiteLLMReporterFunction", "SYSPROMPT", "format_report"]
