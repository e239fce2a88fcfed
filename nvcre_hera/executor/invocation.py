"""What DAG and Steps templates share: one running invocation, its scope, its `parallelism` cap and how it
publishes task outputs (argo-workflows v4.1.2 workflow/controller/operator.go buildLocalScope, docs/variables.md).

Split out of dag.py so that dag.py and steps.py both build on it without importing each other, and the engine
needs neither (it is handed a `start_invocation` callable by `run_workflow`).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from nvcre_hera.executor.caps import Cap
from nvcre_hera.executor.engine import Call, Engine
from nvcre_hera.executor.expr import ExprError, eval_when, evaluate
from nvcre_hera.executor.model import NodeStatus
from nvcre_hera.executor.template import MissingVariable, ResolveError, Scope, aggregate, render_item, substitute


class Invocation:
    """One running DAG/Steps template: its node, scope, child cap, and the task outputs it has seen."""

    def __init__(self, engine: Engine, call: Call, tmpl: dict[str, Any], node: NodeStatus, scope: Scope,
                 done: Callable[[NodeStatus], None], prefix: str) -> None:
        self.engine, self.call, self.tmpl, self.node, self.scope, self.done = engine, call, tmpl, node, scope, done
        self.prefix = prefix
        limit = tmpl.get("parallelism")
        self.cap = Cap(f"{node.name} parallelism", int(limit)) if limit else None

    def publish(self, name: str, node: NodeStatus, task: dict[str, Any], items: list[NodeStatus] | None) -> None:
        """Add `tasks.<name>.*` (or `steps.<name>.*`) to the scope, as buildLocalScope does."""
        key = f"{self.prefix}.{name}"
        flat = {f"{key}.status": node.phase, f"{key}.id": node.id, f"{key}.startedAt": f"{node.started:g}",
                f"{key}.finishedAt": f"{node.finished or 0:g}"}
        if items is not None:
            flat.update(aggregate(key, [(i, n.outputs) for i, n in enumerate(items) if n.phase == "Succeeded"]))
        for pname, value in (node.outputs.get("parameters") or {}).items():
            flat[f"{key}.outputs.parameters.{pname}"] = value
        if "result" in node.outputs:
            flat[f"{key}.outputs.result"] = node.outputs["result"]
        if node.exit_code is not None:
            flat[f"{key}.exitCode"] = str(node.exit_code)
        if node.phase in ("Skipped", "Omitted"):
            producer = self.engine.templates[task["template"]]
            for param in (producer.get("outputs") or {}).get("parameters") or []:
                if "default" in (param.get("valueFrom") or {}):
                    flat[f"{key}.outputs.parameters.{param['name']}"] = render_item(param["valueFrom"]["default"])
                else:
                    self.scope.absent.add(f"{key}.outputs.parameters.{param['name']}")
        for k, v in flat.items():
            self.scope.set(k, v)

    def child(self, name: str, display: str, task: dict[str, Any], scope: Scope, parent: NodeStatus,
              on_done: Callable[[NodeStatus], None]) -> NodeStatus:
        """Resolve a task's arguments strictly and execute its template under this invocation."""
        try:
            args = {p["name"]: substitute(render_item(p.get("value", "")), scope)
                    for p in (task.get("arguments") or {}).get("parameters") or []}
        except MissingVariable as err:
            return self.engine.hang(name, display, task["template"], parent, self, str(err))
        except ResolveError as err:
            node = self.engine.new_node(name, display, "Skipped", task["template"], parent, self, "Error", str(err))
            self.engine.at(self.engine.now, lambda: on_done(node))
            return node
        return self.engine.execute(Call(name, display, task["template"], args, self, parent, self.call.depth + 1,
                                        on_done, self.call.exit_handler))

    def expand(self, task: dict[str, Any], scope: Scope) -> list[Any] | None:
        """withItems / withParam items, or None when the task does not fan out."""
        if "withItems" in task:
            return list(task["withItems"])
        if "withParam" not in task:
            return None
        raw = substitute(render_item(task["withParam"]), scope)
        try:
            items = json.loads(raw)
        except ValueError as err:
            raise ResolveError(f"withParam value could not be parsed as a JSON list: {raw.strip()}: {err}") from None
        if not isinstance(items, list):
            raise ResolveError(f"withParam value could not be parsed as a JSON list: {raw.strip()}")
        return items

    def when(self, task: dict[str, Any], scope: Scope) -> str | None:
        """The resolved `when` if it evaluates false, else None (true or absent)."""
        if "when" not in task:
            return None
        resolved = substitute(render_item(task["when"]), scope)
        try:
            return None if eval_when(resolved) else resolved
        except ExprError as err:
            raise ResolveError(str(err)) from None

    def finish(self, phase: str, message: str = "") -> None:
        if phase == "Succeeded":
            try:
                outputs = self.outputs()
            except ResolveError as err:
                phase, message, outputs = "Error", str(err), {}
            if outputs:
                self.node.outputs = {"parameters": outputs}
        self.engine.finish(self.node, phase, message)
        self.done(self.node)

    def outputs(self) -> dict[str, str]:
        """DAG/Steps outputs from `valueFrom.parameter`/`expression`, falling back to `valueFrom.default`."""
        out: dict[str, str] = {}
        for param in (self.tmpl.get("outputs") or {}).get("parameters") or []:
            vf = param.get("valueFrom") or {}
            try:
                if "parameter" in vf:
                    out[param["name"]] = substitute(render_item(vf["parameter"]), self.scope)
                elif "expression" in vf:
                    value = evaluate(str(vf["expression"]), self.scope.env())
                    out[param["name"]] = render_item(value)
                elif "value" in param:
                    out[param["name"]] = substitute(render_item(param["value"]), self.scope)
                else:
                    raise ResolveError(f"outputs.parameters.{param['name']}: needs valueFrom.parameter or expression")
            except (ResolveError, ExprError) as err:
                if "default" not in vf:
                    raise ResolveError(str(err)) from None
                out[param["name"]] = render_item(vf["default"])
        return out


def continues_on(task: dict[str, Any], phase: str) -> bool:
    cont = task.get("continueOn") or {}
    return bool(cont.get("failed") and phase == "Failed" or cont.get("error") and phase == "Error")


__all__ = ["Invocation", "continues_on"]
