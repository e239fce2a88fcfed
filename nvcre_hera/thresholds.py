"""CEL thresholds over one measured value, as NVCRE writes them (`busBandwidthGBps: "value >= 300"`).

An expression sees `value` (a double) and may use `fleet`, the same metric's distribution over the run's groups
(a map of doubles `fleet.median`, `fleet.mad`, `fleet.p10`, `fleet.count`, see nvcre_hera/fleet.py), and must
yield a bool: `value >= 0.9 * fleet.median` is a fleet-relative threshold. Bad expressions are caught twice:
the spec loader calls `check_threshold` so a typo fails at load time with a one-line reason, and the judge
compiles again and fails closed if anything still goes wrong while evaluating (never a silent pass).
See https://github.com/google/cel-spec/blob/master/doc/langdef.md and cel-python (`celpy`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes

from nvcre_hera.fleet import FLEET_FIELDS

# Parse-tree rules that only wrap a single child (CEL's precedence ladder): descend through them to find the
# operator that really decides the result type.
_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
                       "unary", "member", "primary", "paren_expr"})
# Operators whose result is never a bool.
_NOT_BOOL = {"addition_add": "+", "addition_sub": "-", "multiplication_mul": "*", "multiplication_div": "/",
             "multiplication_mod": "%", "unary_neg": "unary -"}
_OPS = {"relation_eq": "==", "relation_ne": "!=", "relation_lt": "<", "relation_le": "<=", "relation_gt": ">",
        "relation_ge": ">=", "relation_in": "in", "addition_add": "+", "addition_sub": "-",
        "multiplication_mul": "*", "multiplication_div": "/", "multiplication_mod": "%"}
_CEL_TYPES = {"float": "double", "int": "int", "bool": "bool", "str": "string", "NoneType": "null",
              "DoubleType": "double", "IntType": "int", "UintType": "uint", "BoolType": "bool",
              "StringType": "string", "BytesType": "bytes", "ListType": "list", "MapType": "map"}



def _install_cached_parser() -> None:
    """cel-python builds its LALR tables on every start (~0.3 s, a fifth of `nvcre compile`); lark can keep them in a
    cache file. Same grammar, options and tree class as `celpy.Environment` uses, plus `cache=True`; if this
    cel-python builds its parser differently, leave it to build its own."""
    import re as _re
    from pathlib import Path

    import lark
    from celpy import celparser

    if celparser.CELParser.CEL_PARSER is not None:
        return
    try:
        celparser.CELParser.CEL_PARSER = lark.Lark(
            (Path(celparser.__file__).parent / "cel.lark").read_text(), parser="lalr", start="expr", debug=True,
            g_regex_flags=_re.M, lexer_callbacks={"IDENT": celparser.CELParser.ambiguous_literals},
            propagate_positions=True, maybe_placeholders=False, priority="invert",
            tree_class=celpy.InterpretedRunner.tree_node_class, cache=True,
        )
    except Exception:  # noqa: BLE001 - an optimisation only: celpy builds its own parser on failure
        celparser.CELParser.CEL_PARSER = None


_install_cached_parser()
_ENV = celpy.Environment(annotations={"value": celtypes.DoubleType, "fleet": celtypes.MapType})
# What the load-time check evaluates a fleet-relative threshold with: any finite, non-zero numbers prove the types.
_SAMPLE_FLEET = {"median": 1.0, "mad": 1.0, "p10": 1.0, "count": 64.0}
_FLEET_HINT = f"fleet has {', '.join('fleet.' + f for f in FLEET_FIELDS)}"


@dataclass(frozen=True)
class Threshold:
    """A compiled threshold: the source text (for messages) and the cel-python program."""

    expression: str
    program: Any
    uses_fleet: bool = False  # a fleet-relative threshold: it reads `fleet`, so it needs the run's statistics


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _root_operator(tree: Any) -> Any:
    """The node that decides the expression's type, below the single-child precedence wrappers."""
    node = tree
    while getattr(node, "data", None) in _WRAPPERS and len(node.children) == 1:
        node = node.children[0]
    return node


def _static_type_error(tree: Any) -> str | None:
    """Why the expression obviously cannot be a bool, or None when it might be one."""
    node = _root_operator(tree)
    data = getattr(node, "data", None)
    if data in _WRAPPERS and len(node.children) == 2:  # binary/unary: [op(left operand), right operand]
        data = getattr(node.children[0], "data", None)
    if data in _NOT_BOOL:
        return f"expression is arithmetic ({_NOT_BOOL[data]}), not a bool: compare it, e.g. value >= 300"
    if data is None and getattr(node, "type", None) is not None:  # a bare token: literal
        token = str(node)
        if token not in ("true", "false"):
            return f"expression is the literal {token}, not a bool: compare value, e.g. value >= 300"
    if data == "literal" and node.children:
        token = str(node.children[0])
        if token not in ("true", "false"):
            return f"expression is the literal {token}, not a bool: compare value, e.g. value >= 300"
    return None


def _fleet_error(tree: Any) -> str | None:
    """Why the expression's use of `fleet` cannot work (a field it does not have, `fleet` on its own or indexed),
    or None. Also the flag: returns "" when the expression uses `fleet` correctly."""
    uses = False
    dotted: set[int] = set()  # the `fleet` idents that are the object of a `.field`
    for node in tree.iter_subtrees():
        if getattr(node, "data", None) != "member_dot" or len(node.children) != 2:
            continue
        obj = _root_operator(node.children[0])
        if getattr(obj, "data", None) == "ident" and obj.children and str(obj.children[0]) == "fleet":
            field = str(node.children[1])
            if field not in FLEET_FIELDS:
                return f"unknown field fleet.{field}: {_FLEET_HINT}"
            dotted.add(id(obj))
            uses = True
    for node in tree.iter_subtrees():
        if getattr(node, "data", None) == "ident" and node.children and str(node.children[0]) == "fleet" \
                and id(node) not in dotted:
            return f"use fleet by its fields, e.g. fleet.median ({_FLEET_HINT})"
    return "" if uses else None


def _explain_eval_error(err: Any) -> str:
    """Turn cel-python's long error text into one line a user can act on."""
    text = str(err.args[0]) if getattr(err, "args", None) else str(err)
    m = re.search(r"undeclared reference to '([^']+)'", text)
    if m:
        return f"unknown variable {m.group(1)!r}: a threshold sees only `value` and `fleet`"
    # The rule shows as Token('RULE', 'relation_eq') or, from lark's cached tables, as 'relation_eq'.
    m = re.search(r"no matching overload for (?:Token\('RULE', '(\w+)'\)|'(\w+)') applied to '\((.*)\)'", text)
    if m:
        rule = m.group(1) or m.group(2)
        op = _OPS.get(rule, rule)
        found = re.findall(r"celtypes\.(\w+)", m.group(3)) or [t.strip() for t in m.group(3).split(",")]
        types = ", ".join(_CEL_TYPES.get(t, t) for t in found)
        hint = " (value is a double: write numbers with a decimal point, e.g. 1.0)" if "int" in types else ""
        return f"no matching overload for {op} on ({types}){hint}"
    text = re.sub(r"<class 'celpy\.celtypes\.(\w+)'>", lambda t: _CEL_TYPES.get(t.group(1), t.group(1)), text)
    text = re.sub(r"\b(\w+)Type\(([^()]*)\)", r"\2", text)  # DoubleType(1.0) -> 1.0
    return _one_line(text)


def compile_threshold(expr: str) -> Threshold:
    """Compile a CEL threshold; ValueError (one line) when it does not parse or is obviously not a bool."""
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("threshold expression is empty: write a CEL condition on `value`, e.g. value >= 300")
    try:
        tree = _ENV.compile(expr)
    except celpy.CELParseError as err:
        column = getattr(err, "column", None)
        where = f" at column {column}" if isinstance(column, int) else ""
        raise ValueError(f"CEL syntax error{where} in {expr!r}") from None
    reason = _static_type_error(tree)
    if reason:
        raise ValueError(f"{expr!r}: {reason}")
    fleet = _fleet_error(tree)
    if fleet:
        raise ValueError(f"{expr!r}: {fleet}")
    return Threshold(expression=expr, program=_ENV.program(tree), uses_fleet=fleet == "")


def _fleet_map(fleet: Any) -> celtypes.MapType:
    return celtypes.MapType({celtypes.StringType(k): celtypes.DoubleType(float(fleet[k])) for k in FLEET_FIELDS})


def evaluate(program: Threshold, value: float, fleet: Any = None) -> bool:
    """Evaluate a compiled threshold at `value`; ValueError (one line) on an evaluation error or a non-bool.

    `fleet`: a mapping with the FLEET_FIELDS (e.g. `FleetStats.as_dict()`); a fleet-relative threshold without it
    is an error, never a pass."""
    activation: dict[str, Any] = {"value": celtypes.DoubleType(float(value))}
    if program.uses_fleet:
        if fleet is None:
            raise ValueError(f"{program.expression!r}: a fleet-relative threshold needs the run's fleet statistics")
        activation["fleet"] = _fleet_map(fleet)
    try:
        result = program.program.evaluate(activation)
    except celpy.CELEvalError as err:
        raise ValueError(f"{program.expression!r}: {_explain_eval_error(err)}") from None
    except Exception as err:  # cel-python may leak a Python error (overflow, recursion) from a CEL function
        raise ValueError(f"{program.expression!r}: {_one_line(f'{type(err).__name__}: {err}')}") from None
    if isinstance(result, celpy.CELEvalError):
        raise ValueError(f"{program.expression!r}: {_explain_eval_error(result)}")
    if not isinstance(result, (celtypes.BoolType, bool)):
        kind = _CEL_TYPES.get(type(result).__name__, type(result).__name__)
        raise ValueError(f"{program.expression!r}: result is {kind} {result}, not a bool")
    return bool(result)


def check_threshold(metric: str, expr: str) -> Threshold:
    """Load-time check for the spec loader: compile, then evaluate once at value=1.0 (and a sample fleet) to prove
    a bool comes out.

    Raises ValueError naming the metric, e.g. `threshold "busBandwidthGBps": unknown variable 'vaule' …`.
    Whether `metric` is a known metric name is the loader's business (it knows the catalog).
    """
    try:
        program = compile_threshold(expr)
        evaluate(program, 1.0, _SAMPLE_FLEET)
    except ValueError as err:
        raise ValueError(f"threshold {metric!r}: {err}") from None
    return program


__all__ = ["Threshold", "check_threshold", "compile_threshold", "evaluate"]
