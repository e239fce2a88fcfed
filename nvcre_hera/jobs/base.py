"""What every backend shares: resolving a category's options for the detected GPU and platform, the job's name,
its labels, owner reference and test-spec annotation, and the workload's argv with placeholders filled in.

Placeholders are filled into argv elements, never into a shell line: values are validated options (digits, byte
sizes) or numbers computed here, and node names only ever appear as data (affinity values, annotations).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from nvcre_hera.catalog import CatalogEntry, apply_workload_options, gpu_defaults, platform_settings
from nvcre_hera.cluster.base import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    TEST_SPEC_ANNOTATION,
    WORKFLOW_LABEL,
)
from nvcre_hera.nics import choose_nic
from nvcre_hera.units import parse_byte_size, parse_duration

CATEGORY_LABEL = "nvcre-hera.dev/category"
DIAGNOSE_BYTES = 4 << 30
DIAGNOSE_ITERATIONS = 20
GROUP_LABEL = "nvcre-hera.dev/group"
# On worker pods only (not the launcher): the anti-affinity between one job's workers selects on it. Our own label,
# because the operators' differ by backend (mpi-operator `training.kubeflow.org/job-name` + `job-role: worker`,
# JobSet `jobset.sigs.k8s.io/jobset-name`) and a TrainJob reuses the MPIJob worker template (docs/placement.md).
WORKER_LABEL = "nvcre-hera.dev/job-worker"
# The taint the GPU Operator's own daemonsets tolerate (deployments/gpu-operator/values.yaml), the usual one on
# GPU nodes; a target's taintSelectors add the others its nodes carry.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# spec.unschedulable shows to the scheduler as this taint (kubernetes pkg/apis/core well_known_taints.go).
UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"
MNNVL_AUTO_ARCHS = ("gb200", "gb300")  # NVCRE workloadrun_types.go: enableMNNVL nil = on for GB200/GB300


@dataclass(frozen=True)
class JobContext:
    """Where the job runs: the Workflow that owns it and what discovery found."""

    workflow_name: str
    workflow_uid: str
    namespace: str
    platform: str
    gpu: str | None
    scheduler_name: str | None = None
    queue: str | None = None
    queue_label_key: str | None = None
    priority_class_name: str | None = None
    # the Certification's target (camelCase, as in the plan): taintSelectors become tolerations; in Unpinned
    # placement its nodeSelector / matchExpressions / nodeNames become the workers' node affinity
    target: dict | None = None
    placement: str = "Pinned"  # Pinned | Unpinned (spec.orchestration.placement)
    # what discovery found in the nodes' status.allocatable ({"resource", "allocatable"}); None: no discovery ran
    nic: dict | None = None


@dataclass(frozen=True)
class JobPlan:
    """Everything a backend needs, resolved: no defaults left to guess."""

    entry: CatalogEntry
    name: str
    group_id: str
    nodes: list[str]
    repeat: int
    gpus_per_node: int
    nics_per_node: int
    nic_resource: str | None
    max_bytes: int
    timeout_s: float
    image: str
    argv: list[str]
    env: dict[str, str]
    mpi_args: list[str]
    labels: dict[str, str]
    annotations: dict[str, str]
    owner_references: list[dict]
    image_pull_secrets: list[dict] = field(default_factory=list)
    source_repo: dict | None = None
    resources: dict[str, Any] | None = None
    rdma_device_access: str = "devicePlugin"
    context: JobContext | None = None
    mpirun: str = "mpirun"
    nic_source: str = "none"  # nicResourceName | detected | platform | none: where nic_resource came from
    unpinned: bool = False  # the scheduler picks the workers' nodes among the target's (see unpinned_job)


class JobBackend(Protocol):
    kind: str

    def manifest(self, plan: JobPlan) -> dict:
        """The job object to create."""


def context_from_plan(plan: dict, *, workflow_name: str, workflow_uid: str, namespace: str, platform: str,
                      gpu: str | None, nic: dict | None) -> JobContext:
    """The JobContext of one test from the workflow's plan and what discovery found (the run step and
    `nvcre jobs` build it the same way)."""
    gang = plan.get("gangScheduler") or {}
    return JobContext(workflow_name, workflow_uid, namespace, platform, None if gpu in (None, "unknown") else gpu,
                      gang.get("schedulerName"), gang.get("queue"), gang.get("queueLabelKey"),
                      plan.get("priorityClassName"), target=plan.get("target") or {},
                      placement=plan.get("placement") or "Pinned", nic=nic if isinstance(nic, dict) else None)


def job_name(ctx: JobContext, category_index: int, group_id: str, repeat: int) -> str:
    """Deterministic and short (pods are `<name>-worker-<i>`, a DNS label of ≤ 63 characters)."""
    digest = hashlib.sha256(f"{ctx.workflow_uid}/{category_index}/{group_id}/{repeat}".encode()).hexdigest()[:8]
    return f"nvcre-c{category_index}-{group_id[:12]}-r{repeat}-{digest}".lower()


def _fill(text: str, values: dict[str, Any]) -> str:
    return text.format(**values) if "{" in text else text


def unpinned_job(entry: CatalogEntry, options: dict[str, Any], ctx: JobContext) -> bool:
    """Whether this test's job leaves node choice to the scheduler. `placement: Unpinned` is about one job of N
    nodes (NVCRE ADR-089); a per-node or intra-node test names its node by design (N one-node jobs placed anywhere
    could land twice on one node and miss another), and diagnose localizes by testing named subsets."""
    return (ctx.placement == "Unpinned" and entry.scope == "per-group"
            and options.get("testScale") not in ("intra-node", "diagnose"))


def plan_job(entry: CatalogEntry, category_index: int, options: dict[str, Any], group: dict, repeat: int,
             ctx: JobContext) -> JobPlan:
    """Resolve one test's job from the category's effective options, the group and the detected GPU/platform."""
    entry = apply_workload_options(entry, options)  # the Certification's overrides of unverified image facts
    arch = gpu_defaults(ctx.gpu)
    plat = platform_settings(ctx.platform)
    gpus = int(options.get("gpusPerNode") or arch["gpusPerNode"])
    nics = options.get("mlnxPerNode")
    if nics is None:
        nics = (plat.get("nicsPerNode") or {}).get(ctx.gpu or "", arch["nicsPerNode"])
    nic_resource, nic_source = choose_nic(options, ctx.nic, plat.get("nicResource"))
    offered = int((ctx.nic or {}).get("allocatable") or 0)
    if nic_source == "detected" and options.get("mlnxPerNode") is None and offered:
        nics = min(int(nics), offered)  # a pod asking for more than a node has never schedules
    max_bytes = parse_byte_size(str(options.get("maxBytes") or arch["maxBytes"]))
    min_bytes, iterations, cycles = 8, int(options.get("numIterations", 100)), int(options.get("numCycles", 10))
    if options.get("testScale") == "diagnose":
        # Diagnose runs many short jobs: one large size, few iterations (fault-localization.md §4.7), so a round
        # takes minutes and its value is comparable across group sizes.
        max_bytes = min_bytes = min(max_bytes, DIAGNOSE_BYTES)
        iterations, cycles = min(iterations, DIAGNOSE_ITERATIONS), 1
    nodes = list(group["nodes"])
    # unset (a WorkloadRun without enableMNNVL): on for the NVLink-domain architectures, as NVCRE does
    mnnvl = options.get("enableMNNVL")
    mnnvl = (ctx.gpu or "") in MNNVL_AUTO_ARCHS if mnnvl is None else bool(mnnvl)
    tp = min(gpus, 8) if entry.domain == "training" else 1
    values = {
        "minBytes": str(min_bytes),
        "maxBytes": str(max_bytes),
        "numIterations": str(iterations),
        "numCycles": str(cycles),
        "gpusPerNode": str(gpus),
        "numNodes": str(len(nodes)),
        "maxSteps": str(options.get("maxSteps", 50)),
        "exitDurationMins": str(options.get("exitDurationMins", 30)),
        "enableMNNVL": "1" if mnnvl else "0",
        "tensorParallel": str(tp),
        "globalBatchSize": str(max(1, len(nodes) * gpus // tp) * 8),
    }
    name = job_name(ctx, category_index, group["id"], repeat)
    env = {k: _fill(v, values) for k, v in entry.env.items()}
    if entry.framework != "exec":
        env = {**plat.get("env", {}), **env}
    labels = {
        **((options.get("workloadMetadata") or {}).get("labels") or {}),
        MANAGED_BY_LABEL: MANAGED_BY_VALUE,
        WORKFLOW_LABEL: ctx.workflow_name,
        CATEGORY_LABEL: f"c{category_index}",
        GROUP_LABEL: group["id"][:63],
    }
    if ctx.scheduler_name and ctx.queue and ctx.queue_label_key:
        labels[ctx.queue_label_key] = ctx.queue
    test_spec = {
        "category": entry.key, "test": entry.test, "group": group["id"], "nodes": nodes, "gpusPerNode": gpus,
        "minBytes": min_bytes, "maxBytes": max_bytes, "numIterations": int(values["numIterations"]), "numCycles": int(values["numCycles"]),
        "maxSteps": int(values["maxSteps"]), "enableMNNVL": mnnvl, "repeat": repeat,
    }
    owner = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": ctx.workflow_name,
             "uid": ctx.workflow_uid}
    return JobPlan(
        entry=entry, name=name, group_id=group["id"], nodes=nodes, repeat=repeat, gpus_per_node=gpus,
        nics_per_node=int(nics), nic_resource=nic_resource, nic_source=nic_source,
        max_bytes=max_bytes, timeout_s=parse_duration(str(options.get("timeoutPerJob") or "1h")),
        image=options.get("image") or entry.image,
        argv=[_fill(a, values) for a in [*entry.command, *entry.args]],
        env=env, mpi_args=[*(plat.get("mpiArgs") or []), *entry.mpi_args], labels=labels,
        annotations={TEST_SPEC_ANNOTATION: json.dumps(test_spec, separators=(",", ":"))},
        owner_references=[owner], image_pull_secrets=list(options.get("imagePullSecrets") or []),
        source_repo=options.get("sourceRepo") if entry.framework == "torch" else None,
        resources=options.get("resources"), rdma_device_access=options.get("rdmaDeviceAccess") or "devicePlugin",
        context=ctx, mpirun=entry.mpirun, unpinned=unpinned_job(entry, options, ctx),
    )


def tolerations(target: dict | None) -> list[dict]:
    """The GPU taint, each taint the target selected nodes by (`taintSelectors`: key, optional value and effect),
    and cordoned nodes' taint when the target includes unschedulable nodes. Nothing else: a node tainted for some
    other purpose is not ours to use (discovery excludes the targeted nodes whose taints these do not tolerate)."""
    out = [dict(GPU_TOLERATION)]
    for sel in (target or {}).get("taintSelectors") or []:
        tol: dict[str, Any] = {"key": sel["key"]}
        if sel.get("value") is not None:
            tol.update(operator="Equal", value=sel["value"])
        else:
            tol["operator"] = "Exists"
        if sel.get("effect") is not None:
            tol["effect"] = sel["effect"]
        if tol not in out:
            out.append(tol)
    if (target or {}).get("includeUnschedulable"):
        out.append(dict(UNSCHEDULABLE_TOLERATION))
    return out


def tolerated(taint: dict, tols: list[dict]) -> bool:
    """Whether one of `tols` tolerates `taint`, as the scheduler matches them (an empty toleration effect matches
    every effect; `Exists` ignores the value; `Equal` with no operator is the default)."""
    for tol in tols:
        if tol.get("key") not in (None, taint.get("key")):
            continue
        if tol.get("effect") not in (None, "", taint.get("effect")):
            continue
        if (tol.get("operator") or "Equal") == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def pod_placement(plan: JobPlan) -> dict:
    """Scheduler, priority, pull secrets and tolerations shared by every pod of the job."""
    spec: dict[str, Any] = {}
    ctx = plan.context
    if ctx and ctx.scheduler_name:
        spec["schedulerName"] = ctx.scheduler_name
    if ctx and ctx.priority_class_name:
        spec["priorityClassName"] = ctx.priority_class_name
    if plan.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": s["name"]} for s in plan.image_pull_secrets]
    spec["tolerations"] = tolerations(ctx.target if ctx else None)
    return spec


def launcher_affinity() -> dict:
    """The launcher needs no GPU, but never a control-plane node (kubeadm's role label, docs/placement.md)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": CONTROL_PLANE_LABEL, "operator": "DoesNotExist"}]}]}}}


def node_affinity(nodes: list[str]) -> dict:
    """Pin pods to exactly these Node objects (by name: the hostname label can differ from it, e.g. on EKS)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": sorted(set(nodes))}]}]}}}


def target_affinity(target: dict | None) -> dict:
    """Unpinned: the target as node affinity (one term: its requirements AND), so the scheduler picks among the
    targeted nodes. taintSelectors select through tolerations, not affinity."""
    target = target or {}
    selector = sorted((target.get("nodeSelector") or {}).items())
    expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in selector]
    for req in target.get("matchExpressions") or []:
        expr = {"key": req["key"], "operator": req["operator"]}
        if req.get("values"):
            expr["values"] = list(req["values"])
        expressions.append(expr)
    term: dict[str, Any] = {"matchExpressions": expressions} if expressions else {}
    if target.get("nodeNames"):
        term["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": sorted(set(target["nodeNames"]))}]
    if not term:  # no filter at all: GPU nodes are the ones with GPUs; keep at least off the control plane
        term = {"matchExpressions": [{"key": CONTROL_PLANE_LABEL, "operator": "DoesNotExist"}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def worker_labels(plan: JobPlan) -> dict[str, str]:
    return {**plan.labels, WORKER_LABEL: plan.name}


def worker_affinity(plan: JobPlan) -> dict:
    """Workers: on the group's nodes (Pinned) or on targeted nodes the scheduler picks (Unpinned), and never two
    of one job on the same node (required anti-affinity on WORKER_LABEL, per hostname), so `gpusPerNode` below a
    node's count cannot pack two ranks' pods on one node and skip the network."""
    ctx = plan.context
    affinity = target_affinity(ctx.target if ctx else None) if plan.unpinned else node_affinity(plan.nodes)
    if len(plan.nodes) > 1:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {WORKER_LABEL: plan.name}}, "topologyKey": HOSTNAME_TOPOLOGY}]}
    return affinity


def env_list(env: dict[str, str]) -> list[dict]:
    return [{"name": k, "value": v} for k, v in sorted(env.items())]


def metadata(plan: JobPlan, namespace: str) -> dict:
    return {"name": plan.name, "namespace": namespace, "labels": dict(plan.labels),
            "annotations": dict(plan.annotations), "ownerReferences": list(plan.owner_references)}


__all__ = [
    "CATEGORY_LABEL",
    "GPU_TOLERATION",
    "GROUP_LABEL",
    "WORKER_LABEL",
    "JobBackend",
    "JobContext",
    "JobPlan",
    "context_from_plan",
    "env_list",
    "job_name",
    "launcher_affinity",
    "metadata",
    "node_affinity",
    "plan_job",
    "pod_placement",
    "target_affinity",
    "tolerated",
    "tolerations",
    "unpinned_job",
    "worker_affinity",
    "worker_labels",
]
