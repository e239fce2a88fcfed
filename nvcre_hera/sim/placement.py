"""Stand-in for the scheduler and the device plugins: would a job's GPU pods fit the nodes they are meant for, and
would they get the nodes' RDMA devices?

It replaces kube-scheduler's TaintToleration and NodeResourcesFit filters and the device plugins' device mounts,
for the checks that matter to a certification, on the nodes the test-spec annotation names (the simulator places
every job there, pinned or not). Not proven here: the real scheduler's full filter set (affinity, anti-affinity,
topology spread, preemption), and that a device plugin really mounts `/dev/infiniband` for the resource it serves.

A manifest with no pod template (unit tests' minimal ones) is not checked: there is nothing to schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from nvcre_hera.jobs.base import tolerated
from nvcre_hera.nics import is_nic_resource
from nvcre_hera.sim.nodes import GPU_RESOURCE

RDMA_HOST_PATH = "/dev/infiniband"
CORE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


@dataclass(frozen=True)
class PodFit:
    """Why the job's GPU pods cannot run (None: they can), and whether they reach the RDMA devices."""

    unschedulable: str | None
    rdma: bool
    checked: bool  # False: the manifest held no GPU pod template


def pod_specs(obj: Any) -> Iterator[dict]:
    """Every pod spec in a manifest (a dict holding `containers`), at any depth."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            yield obj
            return
        for value in obj.values():
            yield from pod_specs(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from pod_specs(item)


def _limits(pod: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in pod.get("containers") or []:
        res = c.get("resources") or {}
        out.update({**(res.get("requests") or {}), **(res.get("limits") or {})})
    return out


def _host_rdma(pod: dict) -> bool:
    return any((v.get("hostPath") or {}).get("path") == RDMA_HOST_PATH for v in pod.get("volumes") or [])


def _count(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def check_pods(manifests: list[dict], nodes: list[dict]) -> PodFit:
    """Fit the GPU pods of `manifests` (the job and what it depends on, e.g. a TrainingRuntime) onto `nodes`."""
    pods = [p for m in manifests for p in pod_specs(m) if GPU_RESOURCE in _limits(p)]
    if not pods:
        return PodFit(None, True, False)
    rdma = True
    for pod in pods:
        limits = _limits(pod)
        tols = pod.get("tolerations") or []
        pod_rdma = _host_rdma(pod)
        for node in nodes:
            name = node["metadata"]["name"]
            for taint in (node.get("spec") or {}).get("taints") or []:
                if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(taint, tols):
                    return PodFit(f"{name}: taint {taint.get('key')}:{taint.get('effect')} not tolerated", False, True)
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            for resource, want in limits.items():
                if resource in CORE_RESOURCES or "/" not in resource:
                    continue
                if _count(allocatable.get(resource, 0)) < _count(want):
                    return PodFit(f"{name}: {want} {resource} requested, {allocatable.get(resource, 0)} allocatable",
                                  False, True)
            offered = [r for r in allocatable if is_nic_resource(r)]
            pod_rdma = pod_rdma or any(r in limits for r in offered)
        rdma = rdma and pod_rdma
    return PodFit(None, rdma, True)


__all__ = ["PodFit", "RDMA_HOST_PATH", "check_pods", "pod_specs"]
