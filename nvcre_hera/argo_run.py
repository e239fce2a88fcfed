"""`nvcre certify --engine argo`: the same run as the local executor's, executed by the real Argo
workflow-controller on the loopback control plane (nvcre_hera.controlplane), its pods run by the pod runner
(nvcre_hera.podrunner) against the simulated cluster named by `--cluster`.

The Workflow is created through the Kubernetes API from the admin kubeconfig, as `kubectl create` (and `nvcre submit
--kube`) would; the run is watched until the controller gives it a final phase, or until `timeout_s` (then it is
reported as hung, phase Running). The report comes from the judge node's `report` output, as a user reads it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nvcre_hera.podrunner.process import ensure_runner, stop_runner
from nvcre_hera.workflow_report import workflow_nodes

FINAL = ("Succeeded", "Failed", "Error")


@dataclass
class ArgoNode:
    """A Workflow status node, in the shape the differential test compares with the local executor's."""

    name: str
    display_name: str
    type: str
    template: str
    phase: str
    message: str = ""
    outputs: dict = field(default_factory=dict)


@dataclass
class ArgoRun:
    name: str
    phase: str
    message: str
    nodes: dict[str, ArgoNode]
    wall_time_s: float
    pods_started: int
    exit_handler_phase: str | None = None
    uid: str = ""
    compressed_nodes: bool = False  # over MAX_WORKFLOW_SIZE, the controller gzipped status.nodes (packer.go)
    stored_parameter_bytes: int = 0  # every node's input and output parameter values and result, as stored
    object_bytes: int = 0  # the Workflow object as the API server returned it, compact JSON

    def nodes_of(self, template: str) -> list[ArgoNode]:
        return [n for n in self.nodes.values() if n.template == template]


def with_sim_cluster(workflow: dict, cluster_path: str) -> dict:
    """Name the simulated cluster on every pod (spec.podMetadata), for the pod runner."""
    from nvcre_hera.podrunner.runner import SIM_CLUSTER_ANNOTATION

    meta = workflow["spec"].setdefault("podMetadata", {})
    meta.setdefault("annotations", {})[SIM_CLUSTER_ANNOTATION] = str(Path(cluster_path).resolve())
    return workflow


def create_workflow(api: Any, namespace: str, workflow: dict) -> dict:
    from kubernetes import client

    plural = {"Workflow": "workflows", "WorkflowTemplate": "workflowtemplates", "CronWorkflow": "cronworkflows"}
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, plural[workflow["kind"]], workflow)


def watch(api: Any, namespace: str, name: str, timeout_s: float,
          on_node: Callable[[dict], None] | None = None, poll_s: float = 0.5) -> dict:
    """The Workflow once its phase is final (or as it is at `timeout_s`); `on_node` sees each node's last phase."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api)
    seen: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        wf = custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows", name)
        status = wf.get("status") or {}
        wf_nodes = workflow_nodes(wf).values()
        for node in wf_nodes:
            if on_node is not None and seen.get(node["id"]) != node.get("phase"):
                seen[node["id"]] = node.get("phase")
                on_node(node)
        if status.get("phase") in FINAL and not any(
                (n.get("phase") in ("Running", "Pending")) for n in wf_nodes):
            return wf
        if time.monotonic() > deadline:
            return wf
        time.sleep(poll_s)


def to_run(wf: dict, started: float) -> ArgoRun:
    status = wf.get("status") or {}
    name = wf["metadata"]["name"]
    nodes = {}
    for n in workflow_nodes(wf).values():
        params = {p["name"]: p.get("value", "") for p in ((n.get("outputs") or {}).get("parameters") or [])}
        nodes[n["id"]] = ArgoNode(n["name"], n.get("displayName", ""), n.get("type", ""), n.get("templateName", ""),
                                  n.get("phase", ""), n.get("message", ""), {"parameters": params} if params else {})
    exit_nodes = [n for n in nodes.values() if n.name == f"{name}.onExit"]
    phase = status.get("phase") or "Pending"
    return ArgoRun(name=name, phase=phase if phase in FINAL else "Running", message=status.get("message", ""),
                   nodes=nodes, wall_time_s=time.monotonic() - started,
                   pods_started=sum(1 for n in nodes.values() if n.type == "Pod"),
                   exit_handler_phase=exit_nodes[0].phase if exit_nodes else None, uid=wf["metadata"].get("uid", ""),
                   compressed_nodes=bool(status.get("compressedNodes")),
                   stored_parameter_bytes=stored_parameter_bytes(wf),
                   object_bytes=len(json.dumps(wf, separators=(",", ":")).encode()))


def stored_parameter_bytes(wf: dict) -> int:
    """Bytes of the parameter values the controller keeps in the Workflow's nodes (decompressed when it gzipped
    them): every node's inputs and outputs and its result, as the local executor counts them
    (executor/model.py `NodeStatus.stored_bytes`), so the two engines' figures compare."""
    total = 0
    for node in workflow_nodes(wf).values():
        for part in ("inputs", "outputs"):
            total += sum(len(str(p.get("value", "")).encode()) for p in (node.get(part) or {}).get("parameters") or [])
        total += len(str((node.get("outputs") or {}).get("result") or "").encode())
    return total


def run_argo(cert_path: str, cluster_path: str | None = None, *, step_image: str | None = None,
             state_dir: str = ".e2e/run", scale: float = 100.0, timeout_s: float = 600.0,
             mutate: Callable[[dict], dict] | None = None, on_node: Callable[[dict], None] | None = None,
             on_workflow: Callable[[dict], None] | None = None):
    """Compile, create on the loopback control plane, wait, and return a LocalRun-shaped result."""
    from kubernetes import config

    from nvcre_hera.compile.plan import CompileOptions
    from nvcre_hera.compile.workflow import compile_certification
    from nvcre_hera.controlplane import ensure_up
    from nvcre_hera.local_run import DEFAULT_CLUSTER, LocalRun
    from nvcre_hera.spec_load import load_certification

    cert = load_certification(cert_path)
    sd = Path(state_dir)
    state = ensure_up(sd)
    ensure_runner(sd, scale)
    cluster = str(cluster_path or DEFAULT_CLUSTER)
    opts = CompileOptions(namespace=state.namespace, step_image=step_image or "")
    workflow = compile_certification(cert, opts)
    runnable = with_sim_cluster(json.loads(json.dumps(workflow)), cluster)
    if mutate is not None:
        runnable = mutate(runnable)
    if on_workflow is not None:  # e.g. live progress, which reads the plan from the workflow's arguments
        on_workflow(runnable)
    api = config.new_client_from_config(str(state.admin_kubeconfig))
    t0 = time.monotonic()
    created = create_workflow(api, state.namespace, runnable)
    name = created["metadata"]["name"]
    wf = watch(api, state.namespace, name, timeout_s, on_node)
    run = to_run(wf, t0)
    judged = sorted((n for n in run.nodes.values() if n.template == "judge"), key=lambda n: n.name)
    reports = [n.outputs.get("parameters", {}).get("report") for n in judged]
    reports = [r for r in reports if r and r != "{}"]
    report = json.loads(reports[-1]) if reports else None
    sim = sim_record(sd, name)
    if report is not None:
        from nvcre_hera.report.timing import spans_from_argo, with_wall_runtimes

        report = with_wall_runtimes(report, spans_from_argo(name, workflow_nodes(wf).values()))
        report["execution"] = {
            "engine": f"Argo workflow-controller {state.versions.get('argo', '')} on the loopback control plane "
                      f"(pods run by the nvcre-hera pod runner, {sim.get('scale', scale):g} simulated s per s)"
                      .replace("  ", " "),
            "workflowName": name, "workflowPhase": run.phase,
            "simulatedWallTimeSec": sim.get("simulatedSeconds"), "realWallTimeSec": round(run.wall_time_s, 1),
            "podsStarted": run.pods_started, "jobObjectsCreated": sim.get("jobObjectsCreated"),
            "jobObjectsLeftBehind": sim.get("jobObjectsLeftBehind"),
            "storedParameterBytes": run.stored_parameter_bytes, "workflowObjectBytes": run.object_bytes,
            "nodesCompressed": run.compressed_nodes,
        }
    return LocalRun(workflow=workflow, run=run, report=report, cluster=sim)


def sim_record(state_dir: Path, workflow: str) -> dict:
    path = state_dir / "sims" / f"{workflow}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


__all__ = ["ArgoNode", "ArgoRun", "create_workflow", "run_argo", "stored_parameter_bytes", "watch",
           "with_sim_cluster"]
