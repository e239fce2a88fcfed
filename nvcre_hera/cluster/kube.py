"""`KubeCluster`: the `Cluster` protocol on the official `kubernetes` client, for real clusters.

Job objects are custom resources (MPIJob kubeflow.org/v2beta1, TrainJob trainer.kubeflow.org/v1alpha1, JobSet
jobset.x-k8s.io/v1alpha2); the launcher log comes from the launcher pod (MPIJob) or the first pod of the JobSet that
a TrainJob or JobSet runs. Transient API errors (5xx, connection trouble) are retried with backoff and end as
`TransientError`; a 4xx is the caller's mistake and is raised at once. Sleep and clock are injectable so tests never
wait. Label selectors are also applied client-side (cheap, and some API fakes ignore them).
"""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

from nvcre_hera.cluster.base import ConfigMapMissing, JobOutcome, StallCheck
from nvcre_hera.errors import TransientError

T = TypeVar("T")

# kind -> (group, version, plural)
JOB_KINDS: dict[str, tuple[str, str, str]] = {
    "MPIJob": ("kubeflow.org", "v2beta1", "mpijobs"),
    "TrainJob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    # Not a job: the per-test runtime a TrainJob references. Listed so create, delete and cleanup handle it alike.
    "TrainingRuntime": ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes"),
}
MPIJOB_NAME_LABEL = "training.kubeflow.org/job-name"
MPIJOB_ROLE_LABEL = "training.kubeflow.org/job-role"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


# RFC 7386: keys merge one by one, a null removes its key (no resourceVersion: the API server applies each patch to
# the object it holds, so concurrent patches of different keys all land)
MERGE_PATCH = "application/merge-patch+json"


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _matches(obj: dict, labels: dict[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _condition(obj: dict, kind: str) -> bool:
    return any(c.get("type") == kind and str(c.get("status")) == "True"
               for c in ((obj.get("status") or {}).get("conditions") or []))


def job_phase(kind: str, obj: dict) -> str | None:
    """"Succeeded" / "Failed" once the job object says it ended, else None (MPIJob, TrainJob, JobSet status)."""
    status = obj.get("status") or {}
    if kind == "MPIJob":
        launcher = (status.get("replicaStatuses") or {}).get("Launcher") or {}
        if _condition(obj, "Failed") or (launcher.get("failed") or 0) > 0:
            return "Failed"
        if _condition(obj, "Succeeded") or (launcher.get("succeeded") or 0) > 0:
            return "Succeeded"
        return None
    terminal = status.get("terminalState")
    if terminal in ("Completed", "Failed"):
        return "Succeeded" if terminal == "Completed" else "Failed"
    if _condition(obj, "Failed"):
        return "Failed"
    if _condition(obj, "Completed") or _condition(obj, "Complete"):
        return "Succeeded"
    return None


def node_problem(node: dict) -> str | None:
    """"Unschedulable" (cordoned) or "NotReady" for a Node dict, None when it is healthy."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "Unschedulable"
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return None if str(cond.get("status")) == "True" else "NotReady"
    return "NotReady"


class KubeCluster:
    """A real cluster, through the API server the kubeconfig (or in-cluster service account) points at."""

    def __init__(
        self,
        namespace: str,
        api_client: Any = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        poll_s: float = 5.0,
        retries: int = 4,
        backoff_s: float = 1.0,
        log_every: int = 6,
    ) -> None:
        from kubernetes import client, config

        if api_client is None:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            api_client = client.ApiClient()
        self.namespace = namespace
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self._sleep, self._clock = sleep, clock
        self.poll_s, self.retries, self.backoff_s, self.log_every = poll_s, retries, backoff_s, log_every
        self._kinds: dict[str, str] = {}  # job name -> kind, for the jobs this instance created

    # --- plumbing -------------------------------------------------------------------------------------------------
    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call the API, retrying transient failures with exponential backoff; 4xx errors pass through at once."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError as Urllib3Error

        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                return fn(*args, **kwargs)
            except ApiException as err:
                if err.status and 400 <= err.status < 500:
                    raise
                last = err
            except (Urllib3Error, ConnectionError, TimeoutError) as err:
                last = err
            if attempt < self.retries:
                self._sleep(self.backoff_s * 2**attempt)
        name = getattr(fn, "__name__", "API call")
        raise TransientError(f"{name} failed after {self.retries + 1} attempts: {last}") from last

    def _dict(self, obj: Any) -> dict:
        return obj if isinstance(obj, dict) else self.api_client.sanitize_for_serialization(obj)

    @staticmethod
    def _not_found(err: Exception) -> bool:
        return getattr(err, "status", None) == 404

    # --- Cluster protocol -----------------------------------------------------------------------------------------
    def now(self) -> float:
        return self._clock()

    def sleep(self, seconds: float) -> None:
        self._sleep(max(0.0, float(seconds)))

    def list_nodes(self) -> list[dict]:
        return [self._dict(n) for n in self._call(self.core.list_node).items]

    def _read_node(self, name: str) -> dict | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return self._dict(self._call(self.core.read_node, name))
        except ApiException as err:
            if self._not_found(err):
                return None
            raise

    def create_job(self, manifest: dict) -> str:
        kind = manifest.get("kind", "")
        if kind not in JOB_KINDS:
            raise ValueError(f"unsupported job kind {kind!r} (one of {', '.join(JOB_KINDS)})")
        group, version, plural = JOB_KINDS[kind]
        namespace = (manifest.get("metadata") or {}).get("namespace") or self.namespace
        created = self._call(self.custom.create_namespaced_custom_object, group, version, namespace, plural, manifest)
        name = ((created or {}).get("metadata") or {}).get("name") or manifest["metadata"]["name"]
        self._kinds[name] = kind
        return name

    def apply_configmap(self, manifest: dict) -> str:
        """Create the ConfigMap, or replace it when it exists (the judge's NVSentinel node lists; RBAC for it in
        manifests/components/nvsentinel)."""
        name = manifest["metadata"]["name"]
        if not self.create_configmap(manifest):
            namespace = manifest["metadata"].get("namespace") or self.namespace
            self._call(self.core.replace_namespaced_config_map, name, namespace, manifest)
        return name

    def create_configmap(self, manifest: dict) -> bool:
        from kubernetes.client.exceptions import ApiException

        namespace = manifest["metadata"].get("namespace") or self.namespace
        try:
            self._call(self.core.create_namespaced_config_map, namespace, manifest)
        except ApiException as err:
            if getattr(err, "status", None) != 409:
                raise
            return False
        return True

    def read_configmap(self, name: str) -> dict[str, str] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            obj = self._dict(self._call(self.core.read_namespaced_config_map, name, self.namespace))
        except ApiException as err:
            if self._not_found(err):
                return None
            raise
        return dict(obj.get("data") or {})

    def patch_configmap(self, name: str, data: dict[str, str | None]) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self._call(self.core.patch_namespaced_config_map, name, self.namespace, {"data": data},
                       _content_type=MERGE_PATCH)
        except ApiException as err:
            if self._not_found(err):
                raise ConfigMapMissing(f"ConfigMap {self.namespace}/{name} does not exist") from None
            raise

    def delete_configmap(self, name: str) -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            self._call(self.core.delete_namespaced_config_map, name, self.namespace)
        except ApiException as err:
            if self._not_found(err):
                return False
            raise
        return True

    def get_job(self, name: str) -> tuple[str, dict] | None:
        """(kind, object) of a job object, None if it does not exist."""
        from kubernetes.client.exceptions import ApiException

        kinds = [self._kinds[name]] if name in self._kinds else list(JOB_KINDS)
        for kind in kinds:
            group, version, plural = JOB_KINDS[kind]
            try:
                obj = self._call(self.custom.get_namespaced_custom_object, group, version, self.namespace, plural, name)
            except ApiException as err:
                if self._not_found(err):
                    continue
                raise
            self._kinds[name] = kind
            return kind, obj
        return None

    def wait_for_job(
        self, name: str, nodes: list[str], timeout_s: float, stall_check: StallCheck | None = None,
        scheduling_timeout_s: float | None = None,
    ) -> JobOutcome:
        start = self._clock()
        polls = 0
        blocked_s, message, last, was_blocked = 0.0, "", start, False
        while True:
            now = self._clock()
            elapsed = now - start
            if scheduling_timeout_s is not None:
                # NVCRE ADR-083: the clock pauses from the first poll that sees a pod unschedulable until the first
                # poll that sees none
                if was_blocked:
                    blocked_s += now - last
                reason = self.scheduling_blocked(name)
                was_blocked, last = reason is not None, now
                message = reason or message
                if blocked_s > scheduling_timeout_s:
                    return JobOutcome("SchedulingBlocked", elapsed, None, blocked_s=blocked_s, blocked_message=message)
            running = elapsed - blocked_s
            bad = {n: p for n in nodes if (p := node_problem(self._read_node(n) or {})) is not None}
            if bad:
                return JobOutcome("Failed", elapsed, None, bad, blocked_s=blocked_s, blocked_message=message)
            found = self.get_job(name)
            if found is None:
                return JobOutcome("Failed", elapsed, None, blocked_s=blocked_s, blocked_message=message)
            phase = job_phase(*found)
            if phase is not None:
                return JobOutcome(phase, elapsed, self._exit_code(name, found[0], phase),  # type: ignore[arg-type]
                                  blocked_s=blocked_s, blocked_message=message)
            if stall_check is not None and polls % self.log_every == 0 and stall_check(self.job_log(name), running):
                return JobOutcome("Stalled", elapsed, blocked_s=blocked_s, blocked_message=message)
            if running >= timeout_s:
                return JobOutcome("TimedOut", elapsed, blocked_s=blocked_s, blocked_message=message)
            polls += 1
            self._sleep(min(self.poll_s, max(timeout_s - running, 0.0) or self.poll_s))

    def scheduling_blocked(self, name: str) -> str | None:
        """The scheduler's message when a pod of the job has no node and PodScheduled=False with reason
        Unschedulable (NVCRE ADR-083: not SchedulingGated, not a pod the scheduler has not seen yet); else None."""
        kind = self._kinds.get(name, "MPIJob")
        labels = {MPIJOB_NAME_LABEL: name} if kind == "MPIJob" else {JOBSET_NAME_LABEL: name}
        pods = self._call(self.core.list_namespaced_pod, self.namespace, label_selector=_selector(labels))
        for pod in map(self._dict, pods.items):
            if not _matches(pod, labels) or (pod.get("spec") or {}).get("nodeName"):
                continue
            for cond in (pod.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "PodScheduled" and str(cond.get("status")) == "False" \
                        and cond.get("reason") == "Unschedulable":
                    return str(cond.get("message") or "Unschedulable")
        return None

    def _launcher_pod(self, name: str, kind: str | None = None) -> dict | None:
        kind = kind or self._kinds.get(name, "MPIJob")
        if kind == "MPIJob":
            labels = {MPIJOB_NAME_LABEL: name, MPIJOB_ROLE_LABEL: "launcher"}
        else:  # a TrainJob runs a JobSet of the same name
            labels = {JOBSET_NAME_LABEL: name}
        pods = self._call(self.core.list_namespaced_pod, self.namespace, label_selector=_selector(labels))
        mine = [p for p in map(self._dict, pods.items) if _matches(p, labels)]

        def rank(pod: dict) -> tuple:
            pl = (pod.get("metadata") or {}).get("labels") or {}
            return (pl.get(JOBSET_REPLICATED_JOB_LABEL) not in ("launcher", "node"),
                    pl.get(COMPLETION_INDEX_LABEL, "0") != "0", (pod.get("metadata") or {}).get("name", ""))
        return min(mine, key=rank) if mine else None

    def _exit_code(self, name: str, kind: str, phase: str) -> int | None:
        pod = self._launcher_pod(name, kind)
        for status in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
            terminated = (status.get("state") or {}).get("terminated")
            if terminated and terminated.get("exitCode") is not None:
                return int(terminated["exitCode"])
        return 0 if phase == "Succeeded" else 1

    def job_log(self, name: str) -> str:
        from kubernetes.client.exceptions import ApiException

        pod = self._launcher_pod(name)
        if pod is None:
            return ""
        try:
            text = self._call(self.core.read_namespaced_pod_log, pod["metadata"]["name"], self.namespace)
        except ApiException as err:
            if self._not_found(err) or err.status == 400:  # gone, or its container has not started yet
                return ""
            raise
        return text.decode() if isinstance(text, bytes) else str(text or "")

    def delete_job(self, name: str) -> bool:
        from kubernetes.client.exceptions import ApiException

        found = self.get_job(name)
        if found is None:
            return False
        group, version, plural = JOB_KINDS[found[0]]
        try:
            self._call(self.custom.delete_namespaced_custom_object, group, version, self.namespace, plural, name,
                       propagation_policy="Background")
        except ApiException as err:
            if self._not_found(err):
                return False
            raise
        self._kinds.pop(name, None)
        return True

    def list_jobs(self, labels: dict[str, str], kinds: list[str] | None = None) -> list[str]:
        from kubernetes.client.exceptions import ApiException

        names: set[str] = set()
        for kind, (group, version, plural) in JOB_KINDS.items():
            if kinds is not None and kind not in kinds:
                continue
            try:
                listing = self._call(self.custom.list_namespaced_custom_object, group, version, self.namespace, plural,
                                     label_selector=_selector(labels))
            except ApiException as err:
                if self._not_found(err):  # that CRD is not installed
                    continue
                raise
            for obj in (listing or {}).get("items") or []:
                if _matches(obj, labels):
                    names.add(obj["metadata"]["name"])
                    self._kinds.setdefault(obj["metadata"]["name"], kind)
        return sorted(names)


__all__ = ["JOB_KINDS", "KubeCluster", "job_phase", "node_problem"]
