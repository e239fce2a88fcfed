"""What the local executor accepts: an explicit allow-list, checked before anything runs.

Keys that only matter on a real cluster (placement, pod security, GC, UI metadata) are ignored silently; every other
key the executor does not implement raises UnsupportedConstruct naming its path, so nothing is skipped unnoticed.
Field names follow argo-workflows v4.1.2 docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from nvcre_hera.errors import InputError, UnsupportedConstruct

CLUSTER_ONLY = frozenset({
    "nodeSelector", "tolerations", "affinity", "serviceAccountName", "schedulerName", "metadata", "podGC",
    "ttlStrategy", "securityContext", "resources", "volumes", "volumeMounts", "imagePullSecrets",
    "priorityClassName", "workflowMetadata", "podMetadata", "archiveLogs", "podSpecPatch", "sidecars",
    "initContainers", "automountServiceAccountToken", "executor", "hostAliases", "dnsPolicy", "dnsConfig",
    "hostNetwork", "podDisruptionBudget", "volumeClaimTemplates", "volumeClaimGC", "imagePullPolicy",
    "workingDir", "ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "tty", "stdin", "stdinOnce", "description", "metrics", "priority",
    "podPriorityClassName", "serviceAccount", "hostPID", "hostIPC", "runtimeClassName", "enum", "name",
})
_SPEC = {"entrypoint", "templates", "arguments", "onExit", "parallelism", "activeDeadlineSeconds", "synchronization"}
_TEMPLATE = {"name", "inputs", "outputs", "container", "dag", "steps", "retryStrategy", "activeDeadlineSeconds",
             "timeout", "parallelism", "synchronization"}
_CONTAINER = {"image", "command", "args", "env"}
_TASK = {"name", "template", "arguments", "depends", "dependencies", "when", "withParam", "withItems",
         "continueOn"}
_KINDS = ("container", "dag", "steps")
_OTHER_KINDS = ("script", "resource", "suspend", "http", "plugin", "containerSet", "data")


def _check(obj: Any, allowed: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise InputError(f"expected a mapping, got {type(obj).__name__}", where)
    for key in obj:
        if key not in allowed and key not in CLUSTER_ONLY:
            raise UnsupportedConstruct(f"{where}.{key}: not supported by the local executor")


def _check_params(params: Any, allowed: set[str], where: str) -> None:
    for i, param in enumerate(params or []):
        _check(param, allowed, f"{where}[{i}]")
        if "valueFrom" in param:
            vf_allowed = {"path", "default", "parameter", "expression"} if "outputs" in where else set()
            _check(param["valueFrom"], vf_allowed, f"{where}[{i}].valueFrom")


def _check_args(args: Any, where: str) -> None:
    _check(args or {}, {"parameters"}, where)
    _check_params((args or {}).get("parameters"), {"name", "value"}, f"{where}.parameters")


def _check_sync(sync: Any, where: str) -> None:
    _check(sync, {"semaphores", "mutexes"}, where)
    for i, sem in enumerate(sync.get("semaphores") or []):
        _check(sem, {"configMapKeyRef", "namespace"}, f"{where}.semaphores[{i}]")
    for i, mutex in enumerate(sync.get("mutexes") or []):
        _check(mutex, {"name", "namespace"}, f"{where}.mutexes[{i}]")


def template_kind(tmpl: dict[str, Any], where: str) -> str:
    for kind in _OTHER_KINDS:
        if kind in tmpl:
            raise UnsupportedConstruct(f"{where}.{kind}: {kind} templates are not supported by the local executor")
    kinds = [k for k in _KINDS if k in tmpl]
    if len(kinds) != 1:
        raise InputError("a template needs exactly one of container, dag or steps", where)
    return kinds[0]


def check_template(tmpl: dict[str, Any], names: set[str]) -> None:
    """Raise UnsupportedConstruct/InputError for anything in `tmpl` the executor would otherwise ignore."""
    where = f"spec.templates[{tmpl.get('name')}]"
    for kind in _OTHER_KINDS:
        if kind in tmpl:
            template_kind(tmpl, where)
    _check(tmpl, _TEMPLATE, where)
    kind = template_kind(tmpl, where)
    _check(tmpl.get("inputs") or {}, {"parameters"}, f"{where}.inputs")
    _check_params((tmpl.get("inputs") or {}).get("parameters"), {"name", "value", "default"},
                  f"{where}.inputs.parameters")
    _check(tmpl.get("outputs") or {}, {"parameters"}, f"{where}.outputs")
    _check_params((tmpl.get("outputs") or {}).get("parameters"), {"name", "valueFrom", "value"},
                  f"{where}.outputs.parameters")
    if "retryStrategy" in tmpl:
        retry = tmpl["retryStrategy"]
        _check(retry, {"limit", "retryPolicy", "backoff"}, f"{where}.retryStrategy")
        _check(retry.get("backoff") or {}, {"duration", "factor", "maxDuration"}, f"{where}.retryStrategy.backoff")
        policy = retry.get("retryPolicy", "OnFailure")
        if policy not in ("Always", "OnFailure", "OnError", "OnTransientError"):
            raise InputError(f"unknown retryPolicy {policy!r}", f"{where}.retryStrategy.retryPolicy")
    if "synchronization" in tmpl:
        _check_sync(tmpl["synchronization"], f"{where}.synchronization")
    if kind == "container":
        _check(tmpl["container"], _CONTAINER, f"{where}.container")
        for i, env in enumerate(tmpl["container"].get("env") or []):
            _check(env, {"name", "value"}, f"{where}.container.env[{i}]")
        return
    if "timeout" in tmpl or "activeDeadlineSeconds" in tmpl:
        raise UnsupportedConstruct(f"{where}: timeout/activeDeadlineSeconds on a {kind} template")
    if kind == "dag":
        _check(tmpl["dag"], {"tasks", "target", "failFast"}, f"{where}.dag")
        tasks = tmpl["dag"].get("tasks") or []
        task_names = {t.get("name") for t in tasks}
        for task in tasks:
            twhere = f"{where}.dag.tasks[{task.get('name')}]"
            _check_task(task, names, twhere)
            for dep in task.get("dependencies") or []:
                if dep not in task_names:
                    raise InputError(f"dependency {dep!r} is not a task of this DAG", twhere)
        return
    for i, group in enumerate(tmpl["steps"] or []):
        for step in group or []:
            _check_task(step, names, f"{where}.steps[{i}][{step.get('name')}]", steps=True)


def _check_task(task: dict[str, Any], names: set[str], where: str, steps: bool = False) -> None:
    if "templateRef" in task or "inline" in task:
        raise UnsupportedConstruct(f"{where}: templateRef/inline templates are not supported by the local executor")
    _check(task, _TASK - ({"depends", "dependencies"} if steps else set()), where)
    if task.get("template") not in names:
        raise InputError(f"template {task.get('template')!r} is not defined", where)
    if task.get("continueOn"):
        _check(task["continueOn"], {"failed", "error"}, f"{where}.continueOn")
    _check_args(task.get("arguments"), f"{where}.arguments")


def check_workflow(wf: Any) -> dict[str, dict[str, Any]]:
    """Validate the whole Workflow up front; returns templates by name."""
    if not isinstance(wf, dict) or wf.get("kind") != "Workflow":
        kind = wf.get("kind") if isinstance(wf, dict) else type(wf).__name__
        raise InputError(f"expected kind: Workflow, got {kind!r} (compile with --as workflow)", "workflow")
    _check(wf, {"apiVersion", "kind", "spec", "status"}, "workflow")
    spec = wf.get("spec") or {}
    _check(spec, _SPEC, "spec")
    if "synchronization" in spec:
        _check_sync(spec["synchronization"], "spec.synchronization")
    _check_args(spec.get("arguments"), "spec.arguments")
    templates = {t.get("name"): t for t in spec.get("templates") or []}
    for tmpl in templates.values():
        check_template(tmpl, set(templates))
    for key in ("entrypoint", "onExit"):
        if key in spec and spec[key] not in templates:
            raise InputError(f"template {spec[key]!r} is not defined", f"spec.{key}")
    if "entrypoint" not in spec:
        raise InputError("spec.entrypoint is required", "spec")
    return templates


__all__ = ["CLUSTER_ONLY", "check_template", "check_workflow", "template_kind"]
