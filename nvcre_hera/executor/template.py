"""`{{…}}` substitution as Argo does it (argo-workflows v4.1.2 docs/variables.md; util/template/).

A scope is a flat dict of Argo variable names (`inputs.parameters.x`, `tasks.t.outputs.result`) to string values;
expression tags see the same names expanded into nested maps (`tasks['t'].outputs.parameters['p']`). A simple tag
that is not in scope is an error with Argo's message, "failed to resolve {{tag}}". Fan-out outputs are aggregated
as in workflow/controller/operator.go `processAggregateNodeOutputs`: only Succeeded children, ordered by loop
index; `outputs.parameters.X` is a JSON list of the values, embedded as JSON only when *every* value is a JSON
object or list (`aggregatedJSONValueList`), else a list of strings; `outputs.result` embeds each result as JSON
when it parses, else as a string; `outputs.parameters` is a JSON list of {name: value} maps.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nvcre_hera.executor.expr import ExprError, evaluate, render
from nvcre_hera.units import go_duration_seconds

_TAG = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


class ResolveError(ValueError):
    """A tag could not be resolved: the node that needed it fails with this message."""


class MissingVariable(ResolveError):
    """A `{{tag}}` names a variable that is not (yet) in scope, such as the outputs of a failed task. Argo does not
    fail the task that needs it: `IsMissingVariableErr` requeues it without limit (workflow/controller/dag.go,
    executeDAGTask, and the `when` just before it), so the workflow waits for ever. The executor reproduces that as
a hung run."""


class Scope:
    """Flat variables plus objects for expression tags (`item` keeps its JSON shape there)."""

    __slots__ = ("flat", "objects", "absent", "_env")

    def __init__(self, flat: dict[str, str] | None = None, objects: dict[str, Any] | None = None) -> None:
        self.flat: dict[str, str] = dict(flat or {})
        self.objects: dict[str, Any] = dict(objects or {})
        # outputs of Skipped/Omitted producers that declare no default: absent, a terminal error when referenced
        # (v4.0.7+, docs/upgrading.md "Outputs of skipped and omitted steps and tasks now resolve")
        self.absent: set[str] = set()
        self._env: dict[str, Any] | None = None

    def child(self, flat: dict[str, str] | None = None, objects: dict[str, Any] | None = None) -> Scope:
        new = Scope(self.flat, self.objects)
        new.absent = set(self.absent)
        new.flat.update(flat or {})
        new.objects.update(objects or {})
        return new

    def set(self, key: str, value: str) -> None:
        self.flat[key] = value
        self._env = None

    def env(self) -> dict[str, Any]:
        """Nested maps for expr-lang: `a.b.c` keys become `env['a']['b']['c']`; deeper keys win conflicts."""
        if self._env is None:
            env: dict[str, Any] = {}
            for key in sorted(self.flat, key=lambda k: k.count(".")):
                parts = key.split(".")
                node = env
                for part in parts[:-1]:
                    nxt = node.get(part)
                    if not isinstance(nxt, dict):
                        nxt = node[part] = {}
                    node = nxt
                if not isinstance(node.get(parts[-1]), dict):
                    node[parts[-1]] = self.flat[key]
            env.update(self.objects)
            self._env = env
        return self._env


def substitute(text: str, scope: Scope, *, strict: bool = True) -> str:
    """Replace every `{{tag}}`; with strict=False unknown simple tags are left for a later pass."""
    if "{{" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        tag = match.group(1).strip()
        if tag.startswith("="):
            try:
                return render(evaluate(tag[1:].strip(), scope.env()))
            except ExprError as err:
                if not strict:
                    return match.group(0)
                raise ResolveError(f"failed to evaluate expression: {err}") from None
        if tag in scope.flat:
            return scope.flat[tag]
        if not strict:
            return match.group(0)
        if tag in scope.absent:
            raise ResolveError(f"failed to resolve {{{{{tag}}}}}: its producer was Skipped or Omitted and declares "
                               f"no default")
        if tag.startswith(("tasks.", "steps.")):  # ReplaceStrict's strict prefixes (dag.go resolveDependencyReferences)
            raise MissingVariable(f"failed to resolve {{{{{tag}}}}}")
        raise ResolveError(f"failed to resolve {{{{{tag}}}}}")

    return _TAG.sub(one, text)


def substitute_all(value: Any, scope: Scope, *, strict: bool = True) -> Any:
    """Substitute inside every string of a JSON-like value."""
    if isinstance(value, str):
        return substitute(value, scope, strict=strict)
    if isinstance(value, list):
        return [substitute_all(v, scope, strict=strict) for v in value]
    if isinstance(value, dict):
        return {k: substitute_all(v, scope, strict=strict) for k, v in value.items()}
    return value


def parse_duration(value: Any, where: str) -> float:
    """Go durations ("90s", "1h30m") or plain seconds (int or numeric string) -> seconds."""
    if isinstance(value, bool):
        raise ResolveError(f"{where}: {value!r} is not a duration")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return go_duration_seconds(text)
    except ValueError:
        raise ResolveError(f"{where}: {value!r} is not a duration (use 90s, 1h or seconds)") from None


def item_vars(prefix: str, item: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """`{{item}}` (JSON for maps/lists, %v for scalars) and `{{item.field}}`, as operator.go `processItem`."""
    flat = {prefix: render_item(item)}
    if isinstance(item, dict):
        for key, val in item.items():
            flat[f"{prefix}.{key}"] = render_item(val)
    return flat, {prefix: item if isinstance(item, (dict, list)) else flat[prefix]}


def render_item(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=isinstance(value, dict))
    return render(value)


def item_label(item: Any) -> str:
    """The `(i:desc)` part of an expanded node's name (operator.go `generateNodeName`)."""
    if isinstance(item, dict):
        desc = ",".join(sorted(f"{k}:{render_item(v)}" for k, v in item.items()))
    elif isinstance(item, list):
        desc = "[" + " ".join(render_item(v) for v in item) + "]"
    else:
        desc = render_item(item)
    return desc.replace("(", "").replace(")", "")


def aggregate(prefix: str, children: list[tuple[int, dict[str, Any]]]) -> dict[str, str]:
    """Scope entries for a fan-out's outputs; `children` = (loop index, outputs) of Succeeded children."""
    children = sorted(children, key=lambda c: c[0])
    param_list: list[dict[str, str]] = []
    by_name: dict[str, list[str]] = {}
    results: list[Any] = []
    for _, outputs in children:
        params = outputs.get("parameters") or {}
        if params:
            param_list.append(dict(params))
            for name, value in params.items():
                by_name.setdefault(name, []).append(value)
        if outputs.get("result") is not None:
            try:
                results.append(json.loads(outputs["result"]))
            except ValueError:
                results.append(outputs["result"])
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    flat = {f"{prefix}.outputs.result": json.dumps(results, **compact),
            f"{prefix}.outputs.parameters": json.dumps(param_list, **compact)}
    for name, values in by_name.items():
        flat[f"{prefix}.outputs.parameters.{name}"] = json.dumps(_json_values(values), **compact)
    return flat


def _json_values(values: list[str]) -> list[Any]:
    parsed = []
    for value in values:
        try:
            obj = json.loads(value)
        except ValueError:
            return values
        if not isinstance(obj, (dict, list)):
            return values
        parsed.append(obj)
    return parsed


__all__ = ["ResolveError", "Scope", "aggregate", "item_label", "item_vars", "parse_duration", "render_item",
           "substitute", "substitute_all"]
