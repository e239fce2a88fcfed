"""The cluster interface the runtime steps talk through (DESIGN.md "cluster interface").

Two implementations: `nvcre_hera.cluster.kube.KubeCluster` (the `kubernetes` client, for real clusters) and
`nvcre_hera.sim.cluster.SimCluster` (simulated time, injectable faults). Steps never import either directly;
they receive a `Cluster`.

Node objects are plain dicts in the Kubernetes JSON shape (`metadata.name`, `metadata.labels`, `spec.providerID`,
`spec.unschedulable`, `spec.taints`, `status.conditions`, `status.allocatable`), so pure code can read both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol

# SchedulingBlocked: the job's pods stayed unschedulable (PodScheduled=False, reason Unschedulable) for longer than
# the scheduling timeout (NVCRE ADR-083 WorkloadSchedulingBlocked); that time never counts against timeoutPerJob.
DEFAULT_SCHEDULING_TIMEOUT = "30m"  # the `schedulingTimeout` option's default (spec_load.OPTION_DEFAULTS)
JobPhase = Literal["Succeeded", "Failed", "TimedOut", "Stalled", "SchedulingBlocked"]

# Labels and annotations every job object we create carries (cleanup and the simulator rely on them).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "nvcre-hera"
WORKFLOW_LABEL = "nvcre-hera.dev/workflow"
TEST_SPEC_ANNOTATION = "nvcre-hera.dev/test-spec"  # JSON: category, test, nodes, gpusPerNode, maxBytes, ...


@dataclass
class JobOutcome:
    """What watching one job object until it ended (or we gave up) showed."""

    phase: JobPhase
    elapsed_s: float
    exit_code: int | None = None
    # node name -> "Unschedulable" | "NotReady", for nodes that turned bad while the job ran
    unhealthy_nodes: dict[str, str] = field(default_factory=dict)
    # seconds the job's pods sat Pending unschedulable (not counted in timeoutPerJob), and the scheduler's message
    blocked_s: float = 0.0
    blocked_message: str = ""


# Called while a job runs with (log so far, seconds since start); returns True to declare a stall.
StallCheck = Callable[[str, float], bool]


class Cluster(Protocol):
    def now(self) -> float:
        """Seconds on this cluster's clock (wall clock for real clusters, simulated time for the simulator)."""

    def sleep(self, seconds: float) -> None:
        """Wait on this cluster's clock (a real sleep on a real cluster; the simulator moves its clock): the run
        step waits this way for a launcher log that lags behind its job (`measurementTimeout`)."""

    def list_nodes(self) -> list[dict]:
        """All Node objects, as dicts."""

    def create_job(self, manifest: dict) -> str:
        """Create a job object (MPIJob, TrainJob, JobSet); return its name."""

    def wait_for_job(
        self, name: str, nodes: list[str], timeout_s: float, stall_check: StallCheck | None = None,
        scheduling_timeout_s: float | None = None,
    ) -> JobOutcome:
        """Watch the job and the group's nodes until the job ends, a node turns bad, a stall, or `timeout_s`.
        With `scheduling_timeout_s`, time the job's pods spend unschedulable is kept off `timeout_s` (and off the
        stall check) and bounded by it instead (phase SchedulingBlocked); without it, it counts like any other."""

    def job_log(self, name: str) -> str:
        """The launcher's log (the rank-0 output nccl-tests, dcgmi or Megatron printed)."""

    def delete_job(self, name: str) -> bool:
        """Delete the job object; True if it existed."""

    def list_jobs(self, labels: dict[str, str], kinds: list[str] | None = None) -> list[str]:
        """Names of job objects carrying all `labels` (for the onExit cleanup), of `kinds` only (None: every kind)."""

    # ConfigMaps: the diagnose store (steps/diagnose_store.py) and the judge's NVSentinel node lists
    def create_configmap(self, manifest: dict) -> bool:
        """Create the ConfigMap; False when one of its name already exists (left as it is)."""

    def read_configmap(self, name: str) -> dict[str, str] | None:
        """The ConfigMap's `data`; None when it does not exist."""

    def patch_configmap(self, name: str, data: dict[str, str | None]) -> None:
        """Merge `data` into the ConfigMap's (a JSON merge patch: a None value removes its key). Concurrent patches
        of different keys all land: the API server applies each to the object it holds. ConfigMapMissing when
        the ConfigMap does not exist."""

    def delete_configmap(self, name: str) -> bool:
        """Delete the ConfigMap; True if it existed."""


class ConfigMapMissing(LookupError):
    """A ConfigMap that should exist does not (deleted, or never created)."""


__all__ = [
    "DEFAULT_SCHEDULING_TIMEOUT",
    "Cluster",
    "ConfigMapMissing",
    "JobOutcome",
    "JobPhase",
    "StallCheck",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "WORKFLOW_LABEL",
    "TEST_SPEC_ANNOTATION",
]
