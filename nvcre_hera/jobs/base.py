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
from nvcre_hera.units import parse_byte_size, parse_duration

CATEGORY_LABEL = "nvcre-hera.dev/category"
DIAGNOSE_BYTES = 4 << 30
DIAGNOSE_ITERATIONS = 20
GROUP_LABEL = "nvcre-hera.dev/group"
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


class JobBackend(Protocol):
    kind: str

    def manifest(self, plan: JobPlan) -> dict:
        """The job object to create."""


def job_name(ctx: JobContext, category_index: int, group_id: str, repeat: int) -> str:
    """Deterministic and short (pods are `<name>-worker-<i>`, a DNS label of ≤ 63 characters)."""
    digest = hashlib.sha256(f"{ctx.workflow_uid}/{category_index}/{group_id}/{repeat}".encode()).hexdigest()[:8]
    return f"nvcre-c{category_index}-{group_id[:12]}-r{repeat}-{digest}".lower()


def _fill(text: str, values: dict[str, Any]) -> str:
    return text.format(**values) if "{" in text else text


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
        nics_per_node=int(nics), nic_resource=options.get("nicResourceName") or plat.get("nicResource"),
        max_bytes=max_bytes, timeout_s=parse_duration(str(options.get("timeoutPerJob") or "1h")),
        image=options.get("image") or entry.image,
        argv=[_fill(a, values) for a in [*entry.command, *entry.args]],
        env=env, mpi_args=[*(plat.get("mpiArgs") or []), *entry.mpi_args], labels=labels,
        annotations={TEST_SPEC_ANNOTATION: json.dumps(test_spec, separators=(",", ":"))},
        owner_references=[owner], image_pull_secrets=list(options.get("imagePullSecrets") or []),
        source_repo=options.get("sourceRepo") if entry.framework == "torch" else None,
        resources=options.get("resources"), rdma_device_access=options.get("rdmaDeviceAccess") or "devicePlugin",
        context=ctx, mpirun=entry.mpirun,
    )


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
    # GPU nodes are commonly tainted; tests must land on exactly the nodes chosen, whatever their taints.
    spec["tolerations"] = [{"operator": "Exists"}]
    return spec


def node_affinity(nodes: list[str]) -> dict:
    """Pin pods to exactly these Node objects (by name: the hostname label can differ from it, e.g. on EKS)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": sorted(set(nodes))}]}]}}}


def env_list(env: dict[str, str]) -> list[dict]:
    return [{"name": k, "value": v} for k, v in sorted(env.items())]


def metadata(plan: JobPlan, namespace: str) -> dict:
    return {"name": plan.name, "namespace": namespace, "labels": dict(plan.labels),
            "annotations": dict(plan.annotations), "ownerReferences": list(plan.owner_references)}


__all__ = [
    "CATEGORY_LABEL",
    "GROUP_LABEL",
    "JobBackend",
    "JobContext",
    "JobPlan",
    "env_list",
    "job_name",
    "metadata",
    "node_affinity",
    "plan_job",
    "pod_placement",
]
