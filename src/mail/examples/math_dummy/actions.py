"""The math example's action, as swarms.json imports it.

``python::mail.examples.math_dummy.actions:calculate_expression`` names the
:class:`~mail.examples._actionkit.ExampleAction` below (a :class:`~mail.api.MAILAction`
that can also be awaited like the original's function: ``await
calculate_expression({"expression": "6*7"})``); its function is
:func:`mail.examples.math_dummy._calculator.calculate_expression`.
"""

from __future__ import annotations

from typing import TypeAlias

from mail.examples._actionkit import ExampleAction
from mail.examples.math_dummy._calculator import (
    CALCULATE_EXPRESSION_DESCRIPTION,
    CALCULATE_EXPRESSION_PARAMETERS,
)
from mail.examples.math_dummy._calculator import (
    calculate_expression as _calculate_expression,
)

__all__ = ["CALCULATE_EXPRESSION_PARAMETERS", "Number", "calculate_expression"]

#: A plain number, as v1.3.6 named it. Our calculator computes in :class:`decimal.Decimal`
#: and reports ``result`` as exact decimal text (``"42"``), not as this type.
Number: TypeAlias = int | float

#: ``calculate_expression {expression: str, precision?: int 0..12}`` -> JSON
#: ``{"expression", "result", "formatted_result", "precision", "is_integer"}`` or an
#: ``"Error: ..."`` string.
calculate_expression = ExampleAction(
    name="calculate_expression",
    description=CALCULATE_EXPRESSION_DESCRIPTION,
    parameters=CALCULATE_EXPRESSION_PARAMETERS,
    function=_calculate_expression,
)
