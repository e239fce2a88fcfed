"""Run a compiled Argo Workflow dict locally, in simulated time, with Argo v4 semantics.

`run_workflow(workflow, pod_runner)` executes the same dict that would be submitted: DAG and steps templates,
depends/when/withParam, parameters and expression tags, aggregated fan-out outputs, recursion, parallelism and
semaphores, retries, deadlines and the exit handler. Each container becomes one call to `pod_runner`; anything the
executor does not implement raises `nvcre_hera.errors.UnsupportedConstruct`. See docs/internals.md.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable

from nvcre_hera.executor.dag import DagRun
from nvcre_hera.executor.engine import Abort, Call, Engine
from nvcre_hera.executor.model import NodeStatus, PodRequest, PodResult, WorkflowRun
from nvcre_hera.executor.spec import check_workflow
from nvcre_hera.executor.steps import StepsRun
from nvcre_hera.executor.template import Scope, parse_duration, render_item

DEFAULT_CREATION = "1970-01-01T00:00:00Z"


def start_invocation(engine: Engine, call: Call, tmpl: dict[str, Any], node: NodeStatus, scope: Scope,
                     done: Callable[[NodeStatus], None]) -> None:
    """A DAG or Steps template's body: the engine calls this for every non-container template."""
    run = DagRun if "dag" in tmpl else StepsRun
    run(engine, call, tmpl, node, scope, done).start()


def run_workflow(workflow: dict[str, Any], pod_runner: Callable[[PodRequest], PodResult], *,
                 pod_start_overhead_s: float = 5.0, on_event: Callable[[str], None] | None = None,
                 parameters: dict[str, str] | None = None, max_pods: int = 1_000_000,
                 semaphores: dict[str, int] | None = None,
                 on_node: Callable[[NodeStatus], None] | None = None) -> WorkflowRun:
    """Execute `workflow` (kind: Workflow) and return its phase, nodes and the run's numbers.

    `parameters` override `spec.arguments.parameters`; `semaphores` gives each `configMapName/key` its limit;
    `on_node` sees each node when it is fulfilled (with its inputs and outputs), `on_event` a line for it.
    """
    templates = check_workflow(workflow)
    meta, spec = workflow.get("metadata") or {}, workflow["spec"]
    name = meta.get("name") or f"{meta.get('generateName', 'workflow-')}local"
    wf_meta = {"name": name, "namespace": meta.get("namespace", "default"),
               "uid": meta.get("uid") or str(uuid.uuid5(uuid.NAMESPACE_URL, f"nvcre-hera/{name}"))}
    params = {p["name"]: render_item(p.get("value", "")) for p in (spec.get("arguments") or {}).get("parameters") or []}
    params.update(parameters or {})
    flat = {f"workflow.{k}": v for k, v in wf_meta.items()}
    flat["workflow.creationTimestamp"] = str(meta.get("creationTimestamp", DEFAULT_CREATION))
    flat["workflow.parameters.json"] = json.dumps([{"name": k, "value": v} for k, v in params.items()])
    flat.update({f"workflow.parameters.{k}": v for k, v in params.items()})
    if "serviceAccountName" in spec:
        flat["workflow.serviceAccountName"] = str(spec["serviceAccountName"])
    globals_ = Scope(flat)
    deadline = parse_duration(spec["activeDeadlineSeconds"], "spec.activeDeadlineSeconds") \
        if "activeDeadlineSeconds" in spec else None
    parallelism = int(spec["parallelism"]) if spec.get("parallelism") else None
    engine = Engine(name, templates, pod_runner, globals_=globals_, overhead=pod_start_overhead_s, on_event=on_event,
                    max_pods=max_pods, parallelism=parallelism, semaphores=dict(semaphores or {}), deadline=deadline,
                    wf_meta=wf_meta, start_invocation=start_invocation, on_node=on_node)
    for i, sem in enumerate((spec.get("synchronization") or {}).get("semaphores") or []):
        ref = sem.get("configMapKeyRef") or {}
        key = f"{ref.get('name')}/{ref.get('key')}"
        if (semaphores or {}).get(key, 0) < 1:
            from nvcre_hera.errors import UnsupportedConstruct
            raise UnsupportedConstruct(f"spec.synchronization.semaphores[{i}]: semaphore {key!r} has no limit; pass "
                                       f"run_workflow(..., semaphores={{'{key}': N}})")
    root: list[NodeStatus] = []
    exit_node: list[NodeStatus] = []
    try:
        engine.execute(Call(name, name, spec["entrypoint"], params, None, None, 1, root.append))
        engine.run_until_idle()
        if not root and engine.hung:  # as on Argo: still Running, and the exit handler never starts
            phase, message = "Running", engine.hung[0].message
        elif not root:
            raise Abort("workflow did not complete: a cap (parallelism/semaphore) is never released")
        else:
            phase, message = root[0].phase, root[0].message
        if root and spec.get("onExit"):
            engine.globals.set("workflow.status", phase)
            engine.globals.set("workflow.failures", json.dumps(_failures(engine.nodes.values())))
            engine.globals.set("workflow.duration", f"{engine.now:g}")
            engine.execute(Call(f"{name}.onExit", f"{name}.onExit", spec["onExit"], {}, None, None, 1,
                                exit_node.append, exit_handler=True))
            engine.run_until_idle()
            if phase == "Succeeded" and exit_node[0].phase in ("Failed", "Error"):
                phase, message = exit_node[0].phase, exit_node[0].message
    except Abort as err:
        phase, message = "Error", str(err)
    if on_event is not None:
        on_event(f"[{engine.now:7.1f}s] workflow {name} {phase}" + (f": {message}" if message else ""))
    return WorkflowRun(name=name, phase=phase if phase in ("Succeeded", "Failed", "Running") else "Error",
                       message=message,
                       nodes=engine.nodes, wall_time_s=engine.now, pods_started=engine.pods_started,
                       exit_handler_phase=exit_node[0].phase if exit_node else None,
                       max_concurrent_pods=engine.max_active)


def _failures(nodes: Any) -> list[dict[str, str]]:
    """`workflow.failures` as operator.go builds it: failed or errored pod nodes."""
    return [{"displayName": n.display_name, "message": n.message, "templateName": n.template, "phase": n.phase,
             "podName": n.name, "finishedAt": f"{n.finished or 0:g}"}
            for n in nodes if n.type == "Pod" and n.phase in ("Failed", "Error")]


__all__ = ["NodeStatus", "PodRequest", "PodResult", "WorkflowRun", "run_workflow"]
