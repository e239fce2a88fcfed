"""The CRDs' own CEL rules (`x-kubernetes-validations`), evaluated with cel-python the way the API server does.

The schema check (`crd.py`) covers structure; these rules cover what a structural schema cannot say (Argo: a DAG
task may not use both `depends` and `dependencies`, a task name may not start with a digit when it has
dependencies; TrainJob: its name is an RFC 1035 label). Walk the schema alongside the document and evaluate each
rule with `self` bound to the value it sits on. Transition rules (`oldSelf`) only apply to updates: skipped.
"""

from __future__ import annotations

import functools
from typing import Any

import celpy

from nvcre_hera.validate.crd import KIND_TO_SCHEMA, crd_payload


@functools.lru_cache(maxsize=None)
def _program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _check(schema: dict, value: Any, path: str, out: list[str]) -> None:
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule.get("rule", "")
        if "oldSelf" in text:
            continue
        try:
            ok = _program(text).evaluate({"self": celpy.json_to_cel(value)})
        except Exception as exc:  # noqa: BLE001 - a rule that cannot be evaluated is reported, never passed
            out.append(f"{path or '(root)'}: CEL rule {text!r} could not be evaluated: {' '.join(str(exc).split())[:200]}")
            continue
        if ok is not True and not (isinstance(ok, celpy.celtypes.BoolType) and bool(ok)):
            out.append(f"{path or '(root)'}: {rule.get('message') or 'violates ' + repr(text)}")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            child = props.get(key) if key in props else (extra if isinstance(extra, dict) else None)
            if child is not None:
                _check(child, sub, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            _check(schema["items"], sub, f"{path}[{i}]", out)


def rule_errors(doc: dict) -> list[str]:
    """Every CEL rule of the document's CRD that it breaks, as `path: message`."""
    if doc.get("kind") not in KIND_TO_SCHEMA:
        return []
    out: list[str] = []
    _check(crd_payload(doc["kind"])["schema"], doc, "", out)
    return out


__all__ = ["rule_errors"]
