"""A small, safe evaluator for the expression languages Argo embeds.

Two dialects share one parser (nothing here calls Python's eval):
- expr-lang, for `{{= … }}` tags (argo-workflows v4.1.2 docs/variables.md "Expression", evaluated by
  util/template/expression_template.go): literals, `a.b`, `a['b']`, `a[0]`, `?.`, calls to `asInt`, `asFloat`,
  `toJson`/`toJSON`, `fromJson`/`fromJSON`, `len`, `string`, `int`, `float`, `lower`, `upper`, `trim`, `split`,
  `join`; `! not - * / % + - == != < <= > >= in && and || or ?? ?:`, lists `[…]`. A missing map key is nil, as in
  expr-lang, and a nil result is an error. `sprig.*` and `jsonpath` raise UnsupportedConstruct.
- govaluate, for `when` after substitution (docs/walk-through/conditionals.md, steps.go `shouldExecute`): bare words
  are strings (so `Succeeded == Succeeded` holds), numbers are floats, and `my-node` reads as `my - node`, an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nvcre_hera.errors import UnsupportedConstruct

_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?|\.\d+) |
    (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*") |
    (?P<name>[A-Za-z_$][A-Za-z0-9_$]*) |
    (?P<op>\?\?|\?\.|==|!=|<=|>=|&&|\|\||=~|!~|[-+*/%<>!?:()\[\]{},.])
)""", re.VERBOSE)
_GOV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_KEYWORDS = {"and": "&&", "or": "||", "not": "!"}
_BINARY = {"??": 1, "||": 2, "&&": 3, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "in": 4,
           "=~": 4, "!~": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


class ExprError(ValueError):
    """The expression is malformed or cannot be evaluated (Argo fails the node with this message)."""


def _tokens(text: str, govaluate: bool) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        if govaluate:
            stripped = len(text) - len(text[pos:].lstrip())
            m = _GOV_NAME.match(text, stripped)
            if m and not text[stripped].isdigit():
                word = m.group(0)
                out.append(("bool", word == "true") if word in ("true", "false") else ("word", word))
                pos = m.end()
                continue
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"invalid token at {text[pos:pos + 20]!r} in {text!r}")
        pos = m.end()
        if m.group("num") is not None:
            raw = m.group("num")
            is_float = govaluate or any(c in raw for c in ".eE")
            out.append(("lit", float(raw) if is_float else int(raw)))
        elif m.group("str") is not None:
            raw = m.group("str")
            body = raw[1:-1]
            out.append(("lit", _ESCAPE.sub(lambda e: _ESCAPES.get(e.group(1), e.group(1)), body)))
        elif m.group("name") is not None:
            word = m.group("name")
            if word in _KEYWORDS:
                out.append(("op", _KEYWORDS[word]))
            elif word == "in":
                out.append(("op", "in"))
            elif word in ("true", "false"):
                out.append(("lit", word == "true"))
            elif word == "nil":
                out.append(("lit", None))
            else:
                out.append(("name", word))
        else:
            out.append(("op", m.group("op")))
    out.append(("end", None))
    return out


class _Parser:
    """Pratt parser producing tuples: ("lit", v), ("name", n), ("member", obj, key, optional), ("call", f, args),
    ("unary", op, x), ("bin", op, a, b), ("cond", c, a, b), ("list", items)."""

    def __init__(self, text: str, govaluate: bool) -> None:
        self.text = text
        self.toks = _tokens(text, govaluate)
        self.i = 0

    def peek(self) -> tuple[str, Any]:
        return self.toks[self.i]

    def take(self, kind: str, value: Any = None) -> Any:
        tok = self.toks[self.i]
        if tok[0] != kind or (value is not None and tok[1] != value):
            raise ExprError(f"unexpected {tok[1]!r} in {self.text!r}")
        self.i += 1
        return tok[1]

    def parse(self) -> tuple:
        node = self.expr()
        if self.peek()[0] != "end":
            raise ExprError(f"unexpected {self.peek()[1]!r} in {self.text!r}")
        return node

    def expr(self) -> tuple:
        cond = self.binary(1)
        if self.peek() == ("op", "?"):
            self.i += 1
            yes = self.expr()
            self.take("op", ":")
            return ("cond", cond, yes, self.expr())
        return cond

    def binary(self, min_prec: int) -> tuple:
        left = self.unary()
        while True:
            kind, op = self.peek()
            prec = _BINARY.get(op) if kind == "op" else None
            if prec is None or prec < min_prec:
                return left
            self.i += 1
            left = ("bin", op, left, self.binary(prec + 1))

    def unary(self) -> tuple:
        kind, op = self.peek()
        if kind == "op" and op in ("!", "-", "+"):
            self.i += 1
            return ("unary", op, self.unary())
        return self.postfix(self.primary())

    def primary(self) -> tuple:
        kind, value = self.peek()
        self.i += 1
        if kind in ("lit", "bool"):
            return ("lit", value)
        if kind == "word":
            return ("lit", value)
        if kind == "name":
            return ("name", value)
        if (kind, value) == ("op", "("):
            node = self.expr()
            self.take("op", ")")
            return node
        if (kind, value) == ("op", "["):
            items = []
            while self.peek() != ("op", "]"):
                items.append(self.expr())
                if self.peek() == ("op", ","):
                    self.i += 1
            self.i += 1
            return ("list", items)
        raise ExprError(f"unexpected {value!r} in {self.text!r}")

    def postfix(self, node: tuple) -> tuple:
        while True:
            kind, op = self.peek()
            if kind != "op" or op not in (".", "?.", "[", "("):
                return node
            self.i += 1
            if op in (".", "?."):
                node = ("member", node, ("lit", self.take("name")), op == "?.")
            elif op == "[":
                key = self.expr()
                self.take("op", "]")
                node = ("member", node, key, False)
            else:
                args = []
                while self.peek() != ("op", ")"):
                    args.append(self.expr())
                    if self.peek() == ("op", ","):
                        self.i += 1
                self.i += 1
                node = ("call", node, args)


def _num(value: Any, what: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExprError(f"{what}: expected a number, got {value!r}")
    return value


def _as_int(value: Any) -> int:
    try:
        return int(str(value).strip()) if not isinstance(value, float) else int(value)
    except ValueError:
        raise ExprError(f"asInt: cannot convert {value!r}") from None


def _as_float(value: Any) -> float:
    try:
        return float(str(value).strip())
    except ValueError:
        raise ExprError(f"asFloat: cannot convert {value!r}") from None


def to_json(value: Any) -> str:
    """Go's json.Marshal spelling: compact, integral floats without a fraction."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        value = int(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_FUNCS = {
    "asInt": _as_int, "asFloat": _as_float, "toJson": to_json, "toJSON": to_json,
    "fromJson": json.loads, "fromJSON": json.loads, "len": len, "string": lambda v: v if isinstance(v, str)
    else to_json(v), "int": _as_int, "float": _as_float, "lower": str.lower, "upper": str.upper,
    "trim": str.strip, "split": lambda s, sep: s.split(sep), "join": lambda xs, sep="": sep.join(xs),
}


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _binop(op: str, a: Any, b: Any) -> Any:
    if op in ("==", "!="):
        return _eq(a, b) == (op == "==")
    if op in ("<", "<=", ">", ">="):
        if not (isinstance(a, str) and isinstance(b, str)):
            a, b = _num(a, op), _num(b, op)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "in":
        if isinstance(b, dict):
            return a in b
        if isinstance(b, list):
            return any(_eq(a, x) for x in b)
        raise ExprError(f"in: expected a list or map, got {b!r}")
    if op in ("=~", "!~"):
        return (re.search(str(b), str(a)) is not None) == (op == "=~")
    if op == "+" and isinstance(a, str) and isinstance(b, str):
        return a + b
    if op == "+" and isinstance(a, list) and isinstance(b, list):
        return a + b
    a, b = _num(a, op), _num(b, op)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise ExprError(f"{op}: division by zero")
    if op == "/":
        return a / b
    return a % b


def _eval(node: tuple, env: dict[str, Any]) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "name":
        if node[1] == "sprig":
            raise UnsupportedConstruct("expression uses sprig.* functions, which the local executor does not "
                                       "implement")
        return env.get(node[1])
    if kind == "list":
        return [_eval(x, env) for x in node[1]]
    if kind == "member":
        obj = _eval(node[1], env)
        key = _eval(node[2], env)
        if obj is None:
            if node[3]:
                return None
            raise ExprError(f"cannot fetch {key!r} from nil")
        if isinstance(obj, dict):
            return obj.get(key)
        if isinstance(obj, (list, str)) and isinstance(key, int) and not isinstance(key, bool):
            if -len(obj) <= key < len(obj):
                return obj[key]
            raise ExprError(f"index {key} out of range")
        raise ExprError(f"cannot fetch {key!r} from {type(obj).__name__}")
    if kind == "call":
        func = node[1]
        name = func[1] if func[0] == "name" else (func[2][1] if func[0] == "member" else "?")
        if func[0] == "member" and func[1] == ("name", "sprig") or name == "jsonpath":
            raise UnsupportedConstruct(f"expression function {'sprig.' if func[0] == 'member' else ''}{name} is "
                                       "not implemented by the local executor")
        if func[0] != "name" or name not in _FUNCS:
            raise ExprError(f"unknown function {name!r}")
        try:
            return _FUNCS[name](*[_eval(a, env) for a in node[2]])
        except (TypeError, ValueError, AttributeError) as err:
            raise ExprError(f"{name}: {err}") from None
    if kind == "unary":
        value = _eval(node[2], env)
        if node[1] == "!":
            if not isinstance(value, bool):
                raise ExprError(f"!: expected a bool, got {value!r}")
            return not value
        return -_num(value, "-") if node[1] == "-" else _num(value, "+")
    if kind == "cond":
        test = _eval(node[1], env)
        if not isinstance(test, bool):
            raise ExprError(f"?: expected a bool condition, got {test!r}")
        return _eval(node[2] if test else node[3], env)
    op = node[1]
    if op == "??":  # Argo keeps skipped outputs as nil keys, so a nil chain on the left falls back too
        try:
            left = _eval(node[2], env)
        except ExprError:
            left = None
        return left if left is not None else _eval(node[3], env)
    left = _eval(node[2], env)
    if op in ("&&", "||"):
        if not isinstance(left, bool):
            raise ExprError(f"{op}: expected a bool, got {left!r}")
        if left == (op == "||"):
            return left
        right = _eval(node[3], env)
        if not isinstance(right, bool):
            raise ExprError(f"{op}: expected a bool, got {right!r}")
        return right
    return _binop(op, left, _eval(node[3], env))


_CACHE: dict[tuple[str, bool], tuple] = {}


def _parsed(text: str, govaluate: bool) -> tuple:
    key = (text, govaluate)
    if key not in _CACHE:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        _CACHE[key] = _Parser(text, govaluate).parse()
    return _CACHE[key]


def evaluate(text: str, env: dict[str, Any]) -> Any:
    """Evaluate an expr-lang expression against a nested env; nil results are an error, as in Argo."""
    result = _eval(_parsed(text, False), env)
    if result is None:
        raise ExprError(f"failed to evaluate expression {text!r}")
    return result


def render(value: Any) -> str:
    """How Argo writes an expression result into the surrounding string: strings bare, the rest as JSON."""
    return value if isinstance(value, str) else to_json(value)


def eval_when(text: str) -> bool:
    """Evaluate an already-substituted `when` the way govaluate does (bare words are strings)."""
    try:
        result = _eval(_parsed(text, True), {})
    except ExprError as err:
        raise ExprError(f"Invalid 'when' expression '{text}': {err}") from None
    if not isinstance(result, bool):
        raise ExprError(f"Expected boolean evaluation for '{text}'. Got {result}")
    return result


__all__ = ["ExprError", "eval_when", "evaluate", "render", "to_json"]
