"""The math example's calculator: arithmetic on a parsed expression, in :mod:`decimal`.

Only numbers, the constants ``e``, ``pi`` and ``tau``, parentheses, unary ``+``/``-`` and
the binary operators ``+ - * / // % **`` are understood. The expression is parsed with
:mod:`ast` and walked node by node, so names, calls, attribute access, subscripts and
every other construct are refused without being evaluated. ``//`` and ``%`` follow
Python's floor semantics. Exponents are capped and results bounded so that inputs such
as ``9**9**9`` fail at once instead of computing for ever.
"""

from __future__ import annotations

import ast
import json
from decimal import (
    ROUND_HALF_UP,
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    InvalidOperation,
    Overflow,
    localcontext,
)
from typing import Any

__all__ = [
    "CALCULATE_EXPRESSION_DESCRIPTION",
    "CALCULATE_EXPRESSION_PARAMETERS",
    "DEFAULT_PRECISION",
    "CalculationError",
    "calculate_expression",
    "evaluate",
]

#: Decimal places of ``formatted_result`` when the caller gives no ``precision``.
DEFAULT_PRECISION = 6
_MAX_PRECISION = 12
_MAX_LENGTH = 500  # characters of expression text
_MAX_EXPONENT = 10_000  # magnitude of the right operand of **
_DIGITS = 60  # significant digits of every intermediate result
_MAX_MAGNITUDE = 100_000  # results beyond 10**_MAX_MAGNITUDE overflow
_PLAIN_LIMIT = 60  # results with larger decimal exponents are shown in E notation

ERROR_SYNTAX = "Error: invalid syntax"
ERROR_DIVISION_BY_ZERO = "Error: division by zero"
ERROR_EXPRESSION = "Error: 'expression' must be a non-empty string"
ERROR_PRECISION = "Error: 'precision' must be an integer between 0 and 12"
ERROR_UNABLE = "Error: unable to evaluate expression"
ERROR_NOT_FINITE = "Error: result is not a finite number"

CALCULATE_EXPRESSION_DESCRIPTION = (
    "Evaluate an arithmetic expression exactly and return the result as JSON. Supports "
    "numbers, + - * / // % ** (power), parentheses, unary signs and the constants e, pi and tau."
)

CALCULATE_EXPRESSION_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "expression": {
            "type": "string",
            "description": "The expression to evaluate, for example '12 * (3 + 4)' or '2 ** 0.5'.",
        },
        "precision": {
            "type": "integer",
            "minimum": 0,
            "maximum": _MAX_PRECISION,
            "description": (
                f"Decimal places of formatted_result (0 to 12); {DEFAULT_PRECISION} when omitted."
            ),
        },
    },
    "required": ["expression"],
    "additionalProperties": False,
}


class CalculationError(ValueError):
    """The expression cannot be evaluated; ``str(error)`` is the ``"Error: ..."`` text."""


def _context() -> Context:
    return Context(
        prec=_DIGITS,
        rounding=ROUND_HALF_UP,
        Emax=_MAX_MAGNITUDE,
        Emin=-_MAX_MAGNITUDE,
        traps=[InvalidOperation, DivisionByZero, Overflow],
    )


_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640629")
_CONSTANTS: dict[str, Decimal] = {
    "pi": _PI,
    "tau": Context(prec=_DIGITS + 10).multiply(_PI, 2),
    "e": Decimal(1).exp(Context(prec=_DIGITS + 10)),
}


def _literal(node: ast.Constant, source: str) -> Decimal:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculationError(ERROR_UNABLE)
    # Read the literal's own text so that 0.1 is exactly one tenth, not the nearest float.
    text = ast.get_source_segment(source, node)
    if text is not None:
        try:
            return Decimal(text.replace("_", ""))
        except InvalidOperation:
            pass  # hexadecimal, octal or binary integer literals
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def _floor_divmod(a: Decimal, b: Decimal) -> tuple[Decimal, Decimal]:
    if b.is_zero():
        raise CalculationError(ERROR_DIVISION_BY_ZERO)
    quotient, remainder = divmod(a, b)  # truncating, like Decimal's // and %
    if remainder and (remainder < 0) != (b < 0):
        quotient, remainder = quotient - 1, remainder + b
    return quotient, remainder


def _power(base: Decimal, exponent: Decimal) -> Decimal:
    if base.is_zero() and exponent < 0:
        raise CalculationError(ERROR_DIVISION_BY_ZERO)
    if abs(exponent) > _MAX_EXPONENT and abs(base) not in (0, 1):
        raise CalculationError(ERROR_UNABLE)
    return base**exponent


def _binary(op: ast.operator, a: Decimal, b: Decimal) -> Decimal:
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.Div):
        if b.is_zero():
            raise CalculationError(ERROR_DIVISION_BY_ZERO)
        return a / b
    if isinstance(op, ast.FloorDiv):
        return _floor_divmod(a, b)[0]
    if isinstance(op, ast.Mod):
        return _floor_divmod(a, b)[1]
    if isinstance(op, ast.Pow):
        return _power(a, b)
    raise CalculationError(ERROR_UNABLE)


def _walk(node: ast.AST, source: str) -> Decimal:
    if isinstance(node, ast.Constant):
        return +_literal(node, source)  # unary plus rounds to the context
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return +_CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        operand = _walk(node.operand, source)
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        return _binary(node.op, _walk(node.left, source), _walk(node.right, source))
    raise CalculationError(ERROR_UNABLE)


def evaluate(expression: str) -> Decimal:
    """Evaluate ``expression`` and return the (finite) result.

    Raises :class:`CalculationError` whose message is one of the ``"Error: ..."``
    strings of :func:`calculate_expression`.
    """
    source = expression.strip()
    if not source:
        raise CalculationError(ERROR_EXPRESSION)
    if len(source) > _MAX_LENGTH:
        raise CalculationError(ERROR_UNABLE)
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError):
        raise CalculationError(ERROR_SYNTAX) from None
    except (RecursionError, MemoryError):
        raise CalculationError(ERROR_UNABLE) from None
    with localcontext(_context()):
        try:
            result = _walk(tree.body, source)
        except Overflow:
            raise CalculationError(ERROR_NOT_FINITE) from None
        except DivisionByZero:
            raise CalculationError(ERROR_DIVISION_BY_ZERO) from None
        except (DecimalException, RecursionError, MemoryError):
            raise CalculationError(ERROR_UNABLE) from None
    if not result.is_finite():
        raise CalculationError(ERROR_NOT_FINITE)
    return result


def _plain(value: Decimal) -> str:
    if value.is_zero():
        return "0"
    value = value.normalize(_context())
    if -_PLAIN_LIMIT <= value.adjusted() <= _PLAIN_LIMIT:
        return format(value, "f")
    return str(value)


def _formatted(value: Decimal, precision: int, is_integer: bool) -> str:
    if not value.is_zero() and abs(value.adjusted()) > _PLAIN_LIMIT:
        return f"{value:.{precision}E}"
    if is_integer:
        return _plain(value)
    places = Decimal(1).scaleb(-precision)
    rounded = value.quantize(places, context=Context(prec=2 * _DIGITS, rounding=ROUND_HALF_UP))
    return format(abs(rounded) if rounded.is_zero() else rounded, "f")


def _precision(args: dict[str, Any]) -> int:
    precision = args.get("precision")
    if precision is None:
        return DEFAULT_PRECISION
    if (
        isinstance(precision, bool)
        or not isinstance(precision, int)
        or not 0 <= precision <= _MAX_PRECISION
    ):
        raise CalculationError(ERROR_PRECISION)
    return precision


async def calculate_expression(args: dict[str, Any]) -> str:
    """Evaluate ``args["expression"]``; the action behind ``calculate_expression``.

    ``args``: ``expression`` (str, required) and ``precision`` (int 0..12, optional,
    ``null`` allowed; default 6). Returns JSON ``{"expression", "result" (every
    significant digit computed, plain notation), "formatted_result" (rounded to
    ``precision`` places; integers plain), "precision", "is_integer"}``, or one of the
    strings ``"Error: invalid syntax"``, ``"Error: division by zero"``, ``"Error:
    'expression' must be a non-empty string"``, ``"Error: 'precision' must be an integer
    between 0 and 12"``, ``"Error: unable to evaluate expression"``, ``"Error: result is
    not a finite number"``. Never raises.
    """
    expression = args.get("expression")
    if not isinstance(expression, str) or not expression.strip():
        return ERROR_EXPRESSION
    try:
        precision = _precision(args)
        value = evaluate(expression)
    except CalculationError as e:
        return str(e)
    is_integer = value == value.to_integral_value()
    return json.dumps(
        {
            "expression": expression.strip(),
            "result": _plain(value),
            "formatted_result": _formatted(value, precision, is_integer),
            "precision": precision,
            "is_integer": is_integer,
        }
    )
