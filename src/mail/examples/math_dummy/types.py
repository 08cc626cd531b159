"""The math example's action under its older name (``action_calculate_expression``)."""

from __future__ import annotations

from mail.examples.math_dummy.actions import calculate_expression

__all__ = ["action_calculate_expression"]

#: The same :class:`~mail.api.MAILAction` as :data:`~mail.examples.math_dummy.actions.calculate_expression`.
action_calculate_expression = calculate_expression
