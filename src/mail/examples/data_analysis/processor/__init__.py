"""The ``processor`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMProcessorFunction``, ``actions:generate_sample_data``, ``actions:parse_csv``."""

from __future__ import annotations

from mail.examples.data_analysis.processor.actions import generate_sample_data, parse_csv
from mail.examples.data_analysis.processor.agent import LiteLLMProcessorFunction
from mail.examples.data_analysis.processor.prompts import SYSPROMPT

__all__ = ["LiteLLMProcessorFunction", "SYSPROMPT", "generate_sample_data", "parse_csv"]
