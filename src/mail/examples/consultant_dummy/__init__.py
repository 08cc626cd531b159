"""The consultant example: ``prompts:SYSPROMPT`` and ``agent:LiteLLMConsultantFunction``.

Importing this package loads :mod:`mail.factories` (not LiteLLM).
"""

from __future__ import annotations

from mail.examples.consultant_dummy.agent import (
    LiteLLMConsultantFunction,
    consultant_agent_params,
    factory_consultant_dummy,
)
from mail.examples.consultant_dummy.prompts import SYSPROMPT as CONSULTANT_SYSPROMPT

__all__ = [
    "CONSULTANT_SYSPROMPT",
    "LiteLLMConsultantFunction",
    "consultant_agent_params",
    "factory_consultant_dummy",
]
