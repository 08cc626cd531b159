"""The math example: exact, safe arithmetic.

- :mod:`~mail.examples.math_dummy.prompts` -- ``SYSPROMPT``
- :mod:`~mail.examples.math_dummy.actions` -- ``calculate_expression`` (a ``MAILAction``)
- :mod:`~mail.examples.math_dummy.types` -- ``action_calculate_expression`` (same action)
- :mod:`~mail.examples.math_dummy.agent` -- ``LiteLLMMathFunction``
"""

from __future__ import annotations

__all__: list[str] = []
