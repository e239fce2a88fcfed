"""The Argo checks a schema cannot make, over a compiled Workflow / WorkflowTemplate / CronWorkflow dict.

Mirrors the rules of Argo's `workflow/validate/validate.go` (v4.1.2) that matter for what we generate
(shared/reference/argo-hera-kubeflow.md §1.2 and §3): legal names and lengths, every `{{…}}` reference resolvable,
`depends` naming existing tasks and acyclic, a task that reads another task's outputs depending on it, and every
output that may be skipped declaring `valueFrom.default`.
"""

from __future__ import annotations

import re

import networkx as nx

TEMPLATE_NAME = re.compile(r"^[a-zA-Z0-9][-a-zA-Z0-9]*$")
PARAM_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")
TAG = re.compile(r"{{\s*([^}]*?)\s*}}")
DEPENDS_TOKEN = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_]*(?:\.[A-Za-z]+)?")
DEPENDS_RESULTS = {"Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed"}
GLOBAL_VARS = {"workflow.name", "workflow.uid", "workflow.namespace", "workflow.status", "workflow.failures",
               "workflow.creationTimestamp", "workflow.serviceAccountName", "pod.name", "retries"}


def _spec_of(doc: dict) -> dict:
    if doc.get("kind") == "CronWorkflow":
        return doc["spec"]["workflowSpec"]
    return doc["spec"]


def _strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _depends_names(expr: str) -> list[str]:
    names = []
    for token in DEPENDS_TOKEN.findall(expr.replace("&&", " ").replace("||", " ").replace("!", " ")):
        base, _, result = token.partition(".")
        if result and result not in DEPENDS_RESULTS:
            raise ValueError(f"unknown task result {result!r} in depends {expr!r}")
        names.append(base)
    return names


def lint(doc: dict) -> list[str]:
    """Problems as `where: what`; empty when the document is sound."""
    problems: list[str] = []
    meta = doc.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or ""
    limit = 58 if "generateName" in meta and "name" not in meta else 63  # Argo appends 5 characters
    if not name or len(name) > limit:
        problems.append(f"metadata: workflow name {name!r} must be 1–{limit} characters")
    spec = _spec_of(doc)
    templates = {t["name"]: t for t in spec.get("templates", [])}
    workflow_params = {p["name"] for p in (spec.get("arguments") or {}).get("parameters", [])}
    for ref in (spec.get("entrypoint"), spec.get("onExit")):
        if ref and ref not in templates:
            problems.append(f"spec: template {ref!r} does not exist")
    for tname, tmpl in templates.items():
        where = f"templates.{tname}"
        if not TEMPLATE_NAME.match(tname) or len(tname) > 128:
            problems.append(f"{where}: template name is not legal for Argo")
        for kind in ("inputs", "outputs"):
            for p in (tmpl.get(kind) or {}).get("parameters", []):
                if not PARAM_NAME.match(p["name"]):
                    problems.append(f"{where}.{kind}: parameter name {p['name']!r} is not legal")
                vf = p.get("valueFrom")
                if kind == "outputs" and vf and ("path" in vf or "parameter" in vf) and "default" not in vf:
                    problems.append(f"{where}.outputs: {p['name']!r} may be skipped and declares no valueFrom.default")
        inputs = {p["name"] for p in (tmpl.get("inputs") or {}).get("parameters", [])}
        own = {k: v for k, v in tmpl.items() if k not in ("dag", "metrics") and not (k == "outputs" and "dag" in tmpl)}
        problems += _check_tags(where, own, inputs, workflow_params,
                                tasks={}, item_ok=False)
        problems += _lint_metrics(where, tmpl, inputs, workflow_params)
        if "dag" in tmpl:
            problems += _lint_dag(where, tmpl, templates, inputs, workflow_params)
    return problems


def _lint_metrics(where: str, tmpl: dict, inputs: set[str], workflow_params: set[str]) -> list[str]:
    """Template metrics see the node's own outputs and its status and duration (argo-workflows v4.0.5
    workflow/controller/steps.go L661-710, prepareMetricScope): a reference to an output the template does not
    declare would never resolve (a MetricsError condition on the workflow)."""
    problems = []
    declared = {p["name"] for p in (tmpl.get("outputs") or {}).get("parameters", [])}
    for text in _strings(tmpl.get("metrics") or {}):
        for expr in TAG.findall(text):
            parts = expr.split(".")
            if parts[:2] == ["outputs", "parameters"] and len(parts) == 3:
                if parts[2] not in declared:
                    problems.append(f"{where}.metrics: {{{{{expr}}}}} names an output the template does not declare")
            elif expr not in ("status", "duration", "exitCode", "retries", "outputs.result"):
                problem = _resolve(expr, inputs, workflow_params, {}, False)
                if problem:
                    problems.append(f"{where}.metrics: {{{{{expr}}}}} {problem}")
    return problems


def _lint_dag(where: str, tmpl: dict, templates: dict, inputs: set[str], workflow_params: set[str]) -> list[str]:
    problems: list[str] = []
    tasks = {t["name"]: t for t in tmpl["dag"]["tasks"]}
    graph = nx.DiGraph()
    graph.add_nodes_from(tasks)
    for tname, task in tasks.items():
        tw = f"{where}.dag.{tname}"
        if not TEMPLATE_NAME.match(tname) or len(tname) > 128:
            problems.append(f"{tw}: task name is not legal for Argo")
        if "depends" in task and tname[0].isdigit():
            problems.append(f"{tw}: a task using depends may not start with a digit")
        if task.get("template") not in templates:
            problems.append(f"{tw}: template {task.get('template')!r} does not exist")
        try:
            deps = _depends_names(task.get("depends", "")) + list(task.get("dependencies") or [])
        except ValueError as exc:
            problems.append(f"{tw}: {exc}")
            deps = []
        for dep in deps:
            if dep not in tasks:
                problems.append(f"{tw}: depends on unknown task {dep!r}")
            else:
                graph.add_edge(dep, tname)
        target = templates.get(task.get("template"), {})
        declared = {p["name"] for p in (target.get("inputs") or {}).get("parameters", [])}
        required = {p["name"] for p in (target.get("inputs") or {}).get("parameters", [])
                    if "default" not in p and "value" not in p}
        given = {p["name"] for p in (task.get("arguments") or {}).get("parameters", [])}
        for missing in sorted(required - given):
            problems.append(f"{tw}: input {missing!r} of template {task.get('template')!r} is not given")
        for extra in sorted(given - declared):
            problems.append(f"{tw}: argument {extra!r} is not an input of template {task.get('template')!r}")
    if not nx.is_directed_acyclic_graph(graph):
        problems.append(f"{where}.dag: depends has a cycle: {nx.find_cycle(graph)}")
    ancestors = {t: nx.ancestors(graph, t) for t in tasks} if not problems else {t: set(tasks) for t in tasks}
    for tname, task in tasks.items():
        problems += _check_tags(f"{where}.dag.{tname}", task, inputs, workflow_params,
                                tasks={t: templates.get(tasks[t].get("template"), {}) for t in ancestors[tname]},
                                item_ok="withParam" in task or "withItems" in task)
    outputs = tmpl.get("outputs") or {}
    all_tasks = {t: templates.get(tasks[t].get("template"), {}) for t in tasks}
    problems += _check_tags(f"{where}.outputs", outputs, inputs, workflow_params, tasks=all_tasks, item_ok=False)
    return problems


def _check_tags(where: str, node: object, inputs: set[str], workflow_params: set[str], *, tasks: dict[str, dict],
                item_ok: bool) -> list[str]:
    problems = []
    for text in _strings(node):
        for expr in TAG.findall(text):
            if expr.startswith("="):
                continue  # expr-lang tags are checked by the executor's evaluator, not here
            problem = _resolve(expr, inputs, workflow_params, tasks, item_ok)
            if problem:
                problems.append(f"{where}: {{{{{expr}}}}} {problem}")
    return problems


def _resolve(expr: str, inputs: set[str], workflow_params: set[str], tasks: dict[str, dict], item_ok: bool) -> str:
    parts = expr.split(".")
    if expr in GLOBAL_VARS:
        return ""
    if parts[0] == "item":
        return "" if item_ok else "is used outside withParam/withItems"
    if parts[:2] == ["inputs", "parameters"] and len(parts) == 3:
        return "" if parts[2] in inputs else "names an input the template does not declare"
    if parts[:2] == ["workflow", "parameters"] and len(parts) == 3:
        return "" if parts[2] in workflow_params else "names a workflow parameter that is not declared"
    if parts[0] == "tasks" and len(parts) >= 3:
        task = parts[1]
        if task not in tasks:
            return "names a task that is not an upstream dependency"
        if parts[2] in ("status", "exitCode", "startedAt", "finishedAt", "id", "ip") and len(parts) == 3:
            return ""
        if parts[2:4] == ["outputs", "result"] and len(parts) == 4:
            return ""
        if parts[2:4] == ["outputs", "parameters"] and len(parts) == 5:
            declared = {p["name"] for p in (tasks[task].get("outputs") or {}).get("parameters", [])}
            return "" if parts[4] in declared else f"names an output {task!r} does not declare"
    return "is not a reference this lint knows"


__all__ = ["lint"]
