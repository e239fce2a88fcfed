"""Steps templates (argo-workflows v4.1.2 docs/walk-through/steps.md, loops.md, conditionals.md,
workflow/controller/steps.go).

Groups run in order; the steps of a group run in parallel under a StepGroup node `<steps>[i]`. A group fails if a
child Failed/Errored without a matching `continueOn`, and then the Steps template fails ("child '…' failed").
Fan-out children hang directly under the StepGroup (no TaskGroup); an empty list gives a Skipped node ("Skipped,
empty params"). After a group, `steps.<name>.*` enter the scope, aggregated over non-Skipped children for fan-outs
(steps.go excludes Skipped-type nodes there), and Skipped steps expose their `valueFrom.default` outputs.
"""

from __future__ import annotations

from typing import Any

from nvcre_hera.executor.invocation import Invocation, continues_on
from nvcre_hera.executor.model import NodeStatus
from nvcre_hera.executor.template import ResolveError, item_label, item_vars


class StepsRun(Invocation):
    """Runs step groups one after another."""

    def __init__(self, *a: Any) -> None:
        super().__init__(*a, prefix="steps")
        self.groups: list[list[dict[str, Any]]] = [list(g or []) for g in self.tmpl["steps"] or []]
        self.index = -1
        self.previous: NodeStatus = self.node

    def start(self) -> None:
        self.next_group()

    def next_group(self) -> None:
        self.index += 1
        if self.index >= len(self.groups):
            self.finish("Succeeded")
            return
        group = self.engine.new_node(f"{self.node.name}[{self.index}]", f"[{self.index}]", "StepGroup",
                                     self.call.template, self.previous, self, "Running")
        self.previous = group
        pending: dict[str, list[NodeStatus]] = {}
        self.open = 0
        self.results: list[tuple[dict[str, Any], NodeStatus]] = []
        for step in self.groups[self.index]:
            self.start_step(group, step, pending)
        if self.open == 0:
            self.engine.at(self.engine.now, lambda: self.group_done(group, pending))

    def start_step(self, group: NodeStatus, step: dict[str, Any], pending: dict[str, list[NodeStatus]]) -> None:
        name = f"{group.name}.{step['name']}"
        members = pending.setdefault(step["name"], [])

        def settled(node: NodeStatus) -> None:
            self.results.append((step, node))
            members.append(node)

        try:
            skip = self.when(step, self.scope) if "{{item" not in str(step.get("when", "")) else None
            items = self.expand(step, self.scope) if skip is None else None
        except ResolveError as err:
            settled(self.engine.new_node(name, step["name"], "Skipped", step["template"], group, self, "Error",
                                         str(err)))
            return
        if skip is not None or items == []:
            why = f"when '{skip}' evaluated false" if skip is not None else "Skipped, empty params"
            settled(self.engine.new_node(name, step["name"], "Skipped", step["template"], group, self, "Skipped",
                                         why))
            return
        for i, item in enumerate(items if items is not None else [None]):
            scope, cname, display = self.scope, name, step["name"]
            if items is not None:
                display = f"{step['name']}({i}:{item_label(item)})"
                cname = f"{group.name}.{display}"
                scope = self.scope.child(*item_vars("item", item))
                try:
                    skip = self.when(step, scope)
                except ResolveError as err:
                    settled(self.engine.new_node(cname, display, "Skipped", step["template"], group, self, "Error",
                                                 str(err)))
                    continue
                if skip is not None:
                    settled(self.engine.new_node(cname, display, "Skipped", step["template"], group, self,
                                                 "Skipped", f"when '{skip}' evaluated false"))
                    continue
            self.open += 1

            def done(node: NodeStatus) -> None:
                settled(node)
                self.open -= 1
                if self.open == 0:
                    self.group_done(group, pending)

            self.child(cname, display, step, scope, group, done)

    def group_done(self, group: NodeStatus, pending: dict[str, list[NodeStatus]]) -> None:
        failed = [(s, n) for s, n in self.results if n.phase in ("Failed", "Error") and not continues_on(s, n.phase)]
        if failed:
            message = f"child '{failed[0][1].id}' failed"
            self.engine.finish(group, "Failed", message)
            self.finish("Failed", message)
            return
        self.engine.finish(group, "Succeeded")
        for step in self.groups[self.index]:
            members = pending.get(step["name"], [])
            expanded = "withParam" in step or "withItems" in step
            if expanded and not (len(members) == 1 and members[0].name == f"{group.name}.{step['name']}"):
                ran = sorted((n for n in members if n.type != "Skipped"), key=_loop_index)
                if ran:
                    self.publish(step["name"], group, step, ran)
                continue
            if members:
                self.publish(step["name"], members[0], step, None)
        self.next_group()


def _loop_index(node: NodeStatus) -> int:
    return int(node.name.rsplit("(", 1)[1].split(":", 1)[0])


__all__ = ["StepsRun"]
