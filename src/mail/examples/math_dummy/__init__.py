"""The math example: exact, safe arithmetic.

- :mod:`~mail.examples.math_dummy.prompts` -- ``SYSPROMPT`` (here ``MATH_SYSPROMPT``)
- :mod:`~mail.examples.math_dummy.actions` -- ``calculate_expression`` (an awaitable ``MAILAction``)
- :mod:`~mail.examples.math_dummy.types` -- ``action_calculate_expression`` (same action)
- :mod:`~mail.examples.math_dummy.agent` -- ``LiteLLMMathFunction``,
  ``factory_math_dummy``, ``math_agent_params``

Importing this package loads :mod:`mail.api` and :mod:`mail.factories` (not LiteLLM).
"""

from __future__ import annotations

from mail.examples.math_dummy.actions import calculate_expression
from mail.examples.math_dummy.agent import (
    LiteLLMMathFunction,
    factory_math_dummy,
    math_agent_params,
)
from mail.examples.math_dummy.prompts import SYSPROMPT as MATH_SYSPROMPT
from mail.examples.math_dummy.types import action_calculate_expression

__all__ = [
    "MATH_SYSPROMPT",
    "LiteLLMMathFunction",
    "action_calculate_expression",
    "calculate_expression",
    "factory_math_dummy",
    "math_agent_params",
]
