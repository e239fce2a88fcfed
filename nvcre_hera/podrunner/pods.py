"""Pure functions over Pod and WorkflowTaskResult dicts: what a pod asks to run, and what a kubelet and Argo's
executor write back. Sources (argo-workflows v4.0.5):
- workflow/controller/workflowpod.go: the main container's command is `/var/run/argo/argoexec emissary <log opts>
  -- <command> <args>`; the init container carries the template as `ARGO_TEMPLATE`; args longer than MaxEnvVarLen
  (128 KiB) go to a ConfigMap named after the pod, key `ARGO_CONTAINER_ARGS_FILE` (the template likewise).
- cmd/argoexec/commands/emissary.go: appends the offloaded args, then passes any single argument over 128 KiB as
  `@/tmp/argo_arg_<i>.txt`.
- workflow/executor/executor.go SaveParameters: an output parameter is read from its `valueFrom.path`, else its
  `valueFrom.default`, else the step fails.
- workflow/executor/taskresult.go: a WorkflowTaskResult named after the node ID, labelled with the workflow and
  `report-outputs-completed` ("false" on create, "true" once outputs are saved), owned by the Workflow.
- Kubernetes pkg/kubelet/active_deadline.go: a pod past `activeDeadlineSeconds` ends Failed, reason
  DeadlineExceeded, message "Pod was active on the node longer than the specified deadline".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

MAX_ARG_LEN = 131072
NODE_ID_ANNOTATION = "workflows.argoproj.io/node-id"
WORKFLOW_LABEL = "workflows.argoproj.io/workflow"
COMPLETED_LABEL = "workflows.argoproj.io/report-outputs-completed"
ARGS_FILE_ENV = "ARGO_CONTAINER_ARGS_FILE"
TEMPLATE_ENV = "ARGO_TEMPLATE"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"


@dataclass
class PodTask:
    """What one pod asks the runner to do."""

    name: str
    namespace: str
    uid: str
    workflow: str
    workflow_uid: str
    node_id: str
    command: list[str]  # the user's command and args, after the emissary's `--`
    template: dict
    deadline_s: float | None
    annotations: dict[str, str] = field(default_factory=dict)
    offloaded: bool = False  # args or template live in the pod's ConfigMap


def _env(container: dict, name: str) -> str | None:
    for e in container.get("env") or []:
        if e.get("name") == name:
            return e.get("value")
    return None


def read_pod(pod: dict, configmap: dict[str, str] | None = None) -> PodTask:
    """The task of a pod the controller made; `configmap` is the data of the pod's offload ConfigMap, if any."""
    meta, spec = pod["metadata"], pod["spec"]
    main = next(c for c in spec["containers"] if c["name"] == "main")
    argv = list(main.get("command") or []) + list(main.get("args") or [])
    command = argv[argv.index("--") + 1:] if "--" in argv else argv
    offloaded = False
    if _env(main, ARGS_FILE_ENV):
        if configmap is None or ARGS_FILE_ENV not in configmap:
            raise ValueError(f"pod {meta['name']}: args offloaded to a ConfigMap that has no {ARGS_FILE_ENV}")
        command += json.loads(configmap[ARGS_FILE_ENV])
        offloaded = True
    template_text = next((v for c in spec.get("initContainers") or [] if (v := _env(c, TEMPLATE_ENV))), None)
    if configmap and TEMPLATE_ENV in configmap:
        template_text, offloaded = configmap[TEMPLATE_ENV], True
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Workflow"), {})
    return PodTask(
        name=meta["name"], namespace=meta["namespace"], uid=meta.get("uid", ""),
        workflow=(meta.get("labels") or {}).get(WORKFLOW_LABEL, owner.get("name", "")),
        workflow_uid=owner.get("uid", ""), node_id=(meta.get("annotations") or {}).get(NODE_ID_ANNOTATION, ""),
        command=command, template=json.loads(template_text) if template_text else {},
        deadline_s=spec.get("activeDeadlineSeconds"), annotations=dict(meta.get("annotations") or {}),
        offloaded=offloaded,
    )


def offload_large_args(argv: list[str], write) -> list[str]:
    """The emissary's rewrite: an argument over 128 KiB becomes `@/tmp/argo_arg_<i>.txt` (`write(path, text)`)."""
    out = []
    for i, arg in enumerate(argv):
        if len(arg) > MAX_ARG_LEN:
            path = f"/tmp/argo_arg_{i}.txt"
            write(path, arg)
            arg = "@" + path
        out.append(arg)
    return out


def output_parameters(template: dict, files: dict[str, str]) -> tuple[list[dict], str | None]:
    """The output parameters `wait` saves from the files the step wrote, and an error if one is missing."""
    params = []
    for p in (template.get("outputs") or {}).get("parameters") or []:
        vf = p.get("valueFrom") or {}
        if not vf.get("path"):
            continue
        if vf["path"] in files:
            params.append({"name": p["name"], "value": files[vf["path"]]})
        elif "default" in vf:
            params.append({"name": p["name"], "value": str(vf["default"])})
        else:
            return params, f"open {vf['path']}: no such file or directory"
    return params, None


def task_result(task: PodTask, outputs: dict, completed: bool) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskResult",
        "metadata": {"name": task.node_id, "labels": {WORKFLOW_LABEL: task.workflow,
                                                      COMPLETED_LABEL: "true" if completed else "false"},
                     "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                                          "name": task.workflow, "uid": task.workflow_uid}]},
        "outputs": outputs,
    }


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_status(started: float) -> dict:
    """init done, wait and main running (an empty main list would read as "all mains exited" to Argo)."""
    at = stamp(started)
    return {
        "phase": "Running", "startTime": at,
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        "initContainerStatuses": [{"name": "init", "ready": True, "restartCount": 0, "image": "argoexec",
                                   "imageID": "", "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                                           "startedAt": at, "finishedAt": at}}}],
        "containerStatuses": [{"name": n, "ready": True, "restartCount": 0, "image": n, "imageID": "",
                               "started": True, "state": {"running": {"startedAt": at}}} for n in ("wait", "main")],
    }


def finished_status(started: float, finished: float, exit_code: int, *, deadline: bool = False,
                    message: str = "") -> dict:
    """The pod after main exited (or the kubelet killed it at its deadline)."""
    status = running_status(started)
    end = stamp(finished)
    phase = "Succeeded" if exit_code == 0 and not deadline else "Failed"
    status["phase"] = phase
    status["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
    reasons = {"main": "Completed" if exit_code == 0 else "Error", "wait": "Completed"}
    codes = {"main": exit_code, "wait": 0}
    if deadline:
        status["reason"], status["message"] = "DeadlineExceeded", DEADLINE_MESSAGE
    elif message:
        status["message"] = message
    for c in status["containerStatuses"]:
        c["ready"], c["started"] = False, False
        c["state"] = {"terminated": {"exitCode": codes[c["name"]], "reason": reasons[c["name"]],
                                     "startedAt": stamp(started), "finishedAt": end}}
    return status


__all__ = ["DEADLINE_MESSAGE", "MAX_ARG_LEN", "PodTask", "finished_status", "offload_large_args",
           "output_parameters", "read_pod", "running_status", "task_result"]
