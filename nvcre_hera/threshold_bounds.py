"""The interval a CEL threshold accepts, read from its syntax tree (cel-python's lark tree, see thresholds.py).

Diagnose needs a number, not a program: its planner compares each job's bandwidth with a pass line, and its verdict
judges the whole set of jobs from their lowest and highest values. Both are exact only when the expression accepts
one interval of `value`, i.e. it is comparisons of `value` with number literals joined by `&&` (`value >= 3e2`,
`300.0 <= value`, `value >= 300.0 && value < 5000`, parentheses allowed). Anything else (`||`, `!=`, `!`,
arithmetic, functions) raises ValueError, and the spec loader rejects it for diagnose with that one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# The same parse tree the threshold compiler walks: descend through its single-child precedence wrappers.
from nvcre_hera.thresholds import _ENV, compile_threshold
from nvcre_hera.thresholds import _root_operator as _unwrap

_RELATIONS = {"relation_ge": ">=", "relation_gt": ">", "relation_le": "<=", "relation_lt": "<", "relation_eq": "=="}
_FLIPPED = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "=="}
_UNSUPPORTED = "diagnose needs comparisons of value with numbers joined by &&, e.g. value >= 300.0 && value < 5000"


@dataclass(frozen=True)
class Bounds:
    """`low <= value <= high` (strict where `*_strict`); None is unbounded."""

    low: float | None = None
    low_strict: bool = False
    high: float | None = None
    high_strict: bool = False

    def meet(self, other: Bounds) -> Bounds:
        """Both at once (`&&`)."""
        low, low_strict = self.low, self.low_strict
        if other.low is not None and (low is None or other.low > low or (other.low == low and other.low_strict)):
            low, low_strict = other.low, other.low_strict
        high, high_strict = self.high, self.high_strict
        if other.high is not None and (high is None or other.high < high
                                       or (other.high == high and other.high_strict)):
            high, high_strict = other.high, other.high_strict
        return Bounds(low, low_strict, high, high_strict)


def _operand(node: Any) -> float | str:
    """`"value"` for the variable, a float for a number literal; ValueError for anything else."""
    node = _unwrap(node)
    data = getattr(node, "data", None)
    if data in ("ident", "literal") and len(node.children) == 1:
        token = str(node.children[0])
        if data == "ident" and token == "value":
            return "value"
        if data == "literal":
            try:
                number = float(token.rstrip("uU"))
            except ValueError:
                raise ValueError(f"{token} is not a number: {_UNSUPPORTED}") from None
            if math.isfinite(number):
                return number
    raise ValueError(_UNSUPPORTED)


def _walk(node: Any) -> Bounds:
    node = _unwrap(node)
    data = getattr(node, "data", None)
    if data == "conditionaland" and len(node.children) == 2:
        return _walk(node.children[0]).meet(_walk(node.children[1]))
    if data == "relation" and len(node.children) == 2:
        op_node = node.children[0]
        op = _RELATIONS.get(getattr(op_node, "data", None))
        if op is None or len(op_node.children) != 1:
            raise ValueError(_UNSUPPORTED)
        left, right = _operand(op_node.children[0]), _operand(node.children[1])
        if left == "value" and isinstance(right, float):
            number = right
        elif right == "value" and isinstance(left, float):
            number, op = left, _FLIPPED[op]
        else:
            raise ValueError(_UNSUPPORTED)
        if op == "==":
            return Bounds(number, False, number, False)
        if op in (">=", ">"):
            return Bounds(low=number, low_strict=op == ">")
        return Bounds(high=number, high_strict=op == "<")
    raise ValueError(_UNSUPPORTED)


def threshold_bounds(expr: str) -> Bounds:
    """The interval `expr` accepts; ValueError (one line) when it is not one comparisons-and-&& interval."""
    compile_threshold(expr)  # syntax and type errors first, in the loader's words
    return _walk(_ENV.compile(expr))


def floor_of(expr: str | None) -> float | None:
    """The lower bound a threshold puts on `value` (diagnose's pass line for its planner), None if there is none."""
    return None if not expr else threshold_bounds(expr).low


__all__ = ["Bounds", "floor_of", "threshold_bounds"]
