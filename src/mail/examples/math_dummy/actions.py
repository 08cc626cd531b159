"""The math example's action, as swarms.json imports it.

``python::mail.examples.math_dummy.actions:calculate_expression`` names the
:class:`~mail.api.MAILAction` below; its function is
:func:`mail.examples.math_dummy._calculator.calculate_expression`.
"""

from __future__ import annotations

from mail.api import MAILAction
from mail.examples.math_dummy._calculator import (
    CALCULATE_EXPRESSION_DESCRIPTION,
    CALCULATE_EXPRESSION_PARAMETERS,
)
from mail.examples.math_dummy._calculator import (
    calculate_expression as _calculate_expression,
)

__all__ = ["calculate_expression"]

#: ``calculate_expression {expression: str, precision?: int 0..12}`` -> JSON
#: ``{"expression", "result", "formatted_result", "precision", "is_integer"}`` or an
#: ``"Error: ..."`` string.
calculate_expression = MAILAction(
    name="calculate_expression",
    description=CALCULATE_EXPRESSION_DESCRIPTION,
    parameters=CALCULATE_EXPRESSION_PARAMETERS,
    function=_calculate_expression,
)
