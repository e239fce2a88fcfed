"""DAG templates (argo-workflows v4.1.2 docs/walk-through/dag.md, docs/enhanced-depends-logic.md,
workflow/controller/dag.go).

- `depends`: `T.Succeeded|Failed|Errored|Skipped|Omitted|Daemoned|AnySucceeded|AllFailed`, `&&`, `||`, `!`,
  parentheses; a bare `T` means `(T.Succeeded || T.Skipped || T.Daemoned)`, widened by T's `continueOn`;
  `dependencies: [A, B]` means `A && B`. A task whose condition is false once its dependencies are done is Omitted.
- `when` false => Skipped ("when '…' evaluated false"); `withParam`/`withItems` fan out under a TaskGroup node,
  an empty list => Skipped ("Skipped, empty params").
- DAG phase (`assessDAGPhase`): each target task (`dag.target`, else the tasks nothing depends on) gets its branch
  phase: its own phase if it Succeeded/Failed/Errored, else (Skipped/Omitted) the phase inherited from its
  dependencies, Failed/Error preferred. The DAG fails if a target branch failed, unless that target has a matching
  `continueOn`. So a failed test followed by a successful step leaves the DAG Succeeded.
- Outputs of Skipped/Omitted tasks resolve to the producer's `valueFrom.default` (v4.0.7+, docs/variables.md).
Node children are recorded at task level (a task hangs under each dependency's node), not via Argo's outbound nodes.
"""

from __future__ import annotations

import re
from typing import Any

from nvcre_hera.errors import InputError
from nvcre_hera.executor.expr import evaluate
from nvcre_hera.executor.invocation import Invocation, continues_on
from nvcre_hera.executor.model import NodeStatus
from nvcre_hera.executor.template import MissingVariable, ResolveError, item_label, item_vars

_DEP = re.compile(r"\s*(?:(&&|\|\||!|\(|\))|([A-Za-z0-9_][-A-Za-z0-9_]*)(?:\.([A-Za-z]+))?)")
_RESULTS = ("Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed")


def compile_depends(task: dict[str, Any], tasks: dict[str, dict[str, Any]], where: str) -> tuple[list[str], str]:
    """Turn `depends`/`dependencies` into (dependency names, an expression over `d<i>.<Result>` booleans)."""
    text = task.get("depends")
    if text is None:
        text = " && ".join(task.get("dependencies") or [])
    deps: list[str] = []
    out: list[str] = []
    pos = 0
    text = str(text).strip()
    while pos < len(text):
        m = _DEP.match(text, pos)
        if not m or m.end() == pos:
            raise InputError(f"cannot parse depends {text!r}", where)
        pos = m.end()
        if m.group(1):
            out.append(m.group(1))
            continue
        name, result = m.group(2), m.group(3)
        if name not in tasks:
            raise InputError(f"depends names unknown task {name!r}", where)
        if name not in deps:
            deps.append(name)
        var = f"d{deps.index(name)}"
        if result is None:
            cont = tasks[name].get("continueOn") or {}
            alts = ["Succeeded", "Skipped", "Daemoned"] + (["Failed"] if cont.get("failed") else []) + \
                (["Errored"] if cont.get("error") else [])
            out.append("(" + " || ".join(f"{var}.{a}" for a in alts) + ")")
        elif result not in _RESULTS:
            raise InputError(f"unknown task result {result!r} in depends {text!r}", where)
        else:
            out.append(f"{var}.{result}")
    return deps, " ".join(out)


class DagRun(Invocation):
    """Starts each task once its dependencies are fulfilled; assesses the DAG phase when nothing is left."""

    def __init__(self, *a: Any) -> None:
        super().__init__(*a, prefix="tasks")
        where = f"spec.templates[{self.call.template}].dag"
        self.tasks = {t["name"]: t for t in self.tmpl["dag"].get("tasks") or []}
        self.deps: dict[str, list[str]] = {}
        self.logic: dict[str, str] = {}
        self.dependents: dict[str, list[str]] = {name: [] for name in self.tasks}
        for name, task in self.tasks.items():
            self.deps[name], self.logic[name] = compile_depends(task, self.tasks, f"{where}.tasks[{name}]")
            for dep in self.deps[name]:
                self.dependents[dep].append(name)
        target = self.tmpl["dag"].get("target")
        self.targets = sorted(str(target).split() if target else [n for n in self.tasks if not self.dependents[n]])
        self.fail_fast = self.tmpl["dag"].get("failFast", True) is not False
        self.task_nodes: dict[str, NodeStatus] = {}
        self.open = 0  # tasks created and not yet fulfilled

    def start(self) -> None:
        if not self.tasks:
            self.finish("Succeeded")
            return
        for name in self.tasks:
            if not self.deps[name]:
                self.try_task(name)
        self.check_done()

    def try_task(self, name: str) -> None:
        if name in self.task_nodes or any(d not in self.task_nodes or not self.task_nodes[d].fulfilled
                                          for d in self.deps[name]):
            return
        task = self.tasks[name]
        parents = [self.task_nodes[d] for d in self.deps[name]] or [self.node]
        node_name = f"{self.node.name}.{name}"
        env = {f"d{i}": self.results(self.task_nodes[d]) for i, d in enumerate(self.deps[name])}
        if self.deps[name] and not evaluate(self.logic[name], env):
            self.settle(name, self.new(node_name, name, task, parents, "Skipped", "Omitted",
                                       "omitted: depends condition not met"))
            return
        try:
            skip = self.when(task, self.scope) if "{{item" not in str(task.get("when", "")) else None
            items = self.expand(task, self.scope) if skip is None else None
        except MissingVariable as err:
            self.open += 1
            self.task_nodes[name] = self.engine.hang(node_name, name, task["template"], parents[0], self, str(err))
            return
        except ResolveError as err:
            self.settle(name, self.new(node_name, name, task, parents, "Skipped", "Error", str(err)))
            return
        if skip is not None:
            self.settle(name, self.new(node_name, name, task, parents, "Skipped", "Skipped",
                                       f"when '{skip}' evaluated false"))
            return
        if items is not None and not items:
            self.settle(name, self.new(node_name, name, task, parents, "Skipped", "Skipped", "Skipped, empty params"))
            return
        self.open += 1
        if items is None:
            node = self.child(node_name, name, task, self.scope, parents[0], lambda n: self.task_done(name, n))
            for extra in parents[1:]:
                extra.children.append(node.id)
            self.task_nodes[name] = node
            return
        group = self.new(node_name, name, task, parents, "TaskGroup", "Running")
        self.task_nodes[name] = group
        members: list[NodeStatus | None] = [None] * len(items)
        remaining = [len(items)]

        def member_done(i: int, node: NodeStatus) -> None:
            members[i] = node
            remaining[0] -= 1
            if remaining[0] == 0:
                failed = [n.phase for n in members if n is not None and n.phase in ("Failed", "Error")]
                self.engine.finish(group, failed[-1] if failed else "Succeeded")
                self.task_done(name, group, [n for n in members if n is not None])

        for i, item in enumerate(items):
            label = f"{name}({i}:{item_label(item)})"
            flat, objects = item_vars("item", item)
            scope = self.scope.child(flat, objects)
            try:
                skip = self.when(task, scope)
            except ResolveError as err:
                member = self.engine.new_node(f"{self.node.name}.{label}", label, "Skipped", task["template"], group,
                                              self, "Error", str(err))
                self.engine.at(self.engine.now, lambda i=i, m=member: member_done(i, m))
                continue
            if skip is not None:
                member = self.engine.new_node(f"{self.node.name}.{label}", label, "Skipped", task["template"], group,
                                              self, "Skipped", f"when '{skip}' evaluated false")
                self.engine.at(self.engine.now, lambda i=i, m=member: member_done(i, m))
                continue
            self.child(f"{self.node.name}.{label}", label, task, scope, group, lambda n, i=i: member_done(i, n))

    def new(self, node_name: str, name: str, task: dict[str, Any], parents: list[NodeStatus], type_: str,
            phase: str, message: str = "") -> NodeStatus:
        node = self.engine.new_node(node_name, name, type_, task["template"], parents[0], self, phase, message)
        for extra in parents[1:]:
            extra.children.append(node.id)
        return node

    def settle(self, name: str, node: NodeStatus) -> None:
        """A task decided without running: record it and move on to its dependents."""
        self.task_nodes[name] = node
        self.publish(name, node, self.tasks[name], None)
        for dep in self.dependents[name]:
            self.try_task(dep)

    def task_done(self, name: str, node: NodeStatus, members: list[NodeStatus] | None = None) -> None:
        self.task_nodes[name] = node
        self.open -= 1
        self.publish(name, node, self.tasks[name], members)
        for dep in self.dependents[name]:
            self.try_task(dep)
        self.check_done()

    def results(self, node: NodeStatus) -> dict[str, bool]:
        phases = [self.engine.nodes[c].phase for c in node.children] if node.type == "TaskGroup" else []
        return {"Succeeded": node.phase == "Succeeded", "Failed": node.phase == "Failed",
                "Errored": node.phase == "Error", "Skipped": node.phase == "Skipped",
                "Omitted": node.phase == "Omitted", "Daemoned": False,
                "AnySucceeded": "Succeeded" in phases, "AllFailed": bool(phases) and set(phases) == {"Failed"}}

    def check_done(self) -> None:
        if self.open or self.node.fulfilled:
            return
        branch: dict[str, str] = {}
        for name in self._topo():
            node = self.task_nodes.get(name)
            if node is None:
                continue
            if node.phase in ("Succeeded", "Failed", "Error"):
                branch[name] = node.phase
            else:
                inherited = [branch[d] for d in self.deps[name] if d in branch] or ["Succeeded"]
                bad = [p for p in inherited if p in ("Failed", "Error")]
                branch[name] = bad[0] if bad else "Succeeded"
        result = "Succeeded"
        for name in self.targets:
            phase = branch.get(name, "Succeeded")
            if phase in ("Failed", "Error") and not continues_on(self.tasks[name], phase):
                result = phase
                if self.fail_fast:
                    break
        self.finish(result)

    def _topo(self) -> list[str]:
        order: list[str] = []
        seen: set[str] = set()

        def visit(name: str) -> None:
            if name not in seen:
                seen.add(name)
                for dep in self.deps[name]:
                    visit(dep)
                order.append(name)

        for name in self.tasks:
            visit(name)
        return order


__all__ = ["DagRun", "compile_depends"]
