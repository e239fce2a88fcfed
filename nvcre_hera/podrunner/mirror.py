"""`MirroredCluster`: the simulated cluster, with every API call a step makes also made on the real API server, as
the workflow's service account.

Job objects still live in the simulator (no mpi-operator, JobSet or Trainer controller runs here). But each call is
repeated against the loopback kube-apiserver with the service account's token: creates and deletes as `dryRun=All`
(so the real CRD schemas and CEL rules judge every manifest, and nothing is stored), lists and gets for real. A verb
the Role does not grant is a real 403, which fails the step as it would in a cluster; a 404 for a dry-run object
(it never existed) proves only that authorization passed, which is all it is for. ConfigMaps are the exception:
they are stored for real (the diagnose store, steps/diagnose_store.py).
"""

from __future__ import annotations

from typing import Any

from nvcre_hera.cluster.base import Cluster, ConfigMapMissing, JobOutcome, StallCheck
from nvcre_hera.cluster.kube import JOB_KINDS, MERGE_PATCH

DEPENDENCY_KINDS = {"TrainingRuntime": ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes")}


class MirroredCluster:
    def __init__(self, sim: Cluster, api_client: Any, namespace: str) -> None:
        from kubernetes import client

        self.sim, self.namespace = sim, namespace
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.kinds: dict[str, str] = {}
        self.calls = 0  # API calls made as the service account (the e2e summary reports them)

    def _gvp(self, kind: str) -> tuple[str, str, str]:
        return JOB_KINDS.get(kind) or DEPENDENCY_KINDS[kind]

    def _tolerate_404(self, fn, *args, **kwargs) -> Any:
        from kubernetes.client.exceptions import ApiException

        self.calls += 1
        try:
            return fn(*args, **kwargs)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    # --- the Cluster protocol -----------------------------------------------------------------------------------
    def now(self) -> float:
        return self.sim.now()

    def sleep(self, seconds: float) -> None:
        self.sim.sleep(seconds)

    def list_nodes(self) -> list[dict]:
        self.calls += 1
        self.core.list_node(limit=1)  # the ClusterRole's nodes list; the simulator's nodes carry the health
        return self.sim.list_nodes()

    def create_job(self, manifest: dict) -> str:
        kind = manifest.get("kind", "")
        group, version, plural = self._gvp(kind)
        self.calls += 1
        self.custom.create_namespaced_custom_object(group, version, self.namespace, plural, manifest, dry_run="All")
        name = self.sim.create_job(manifest)
        self.kinds[name] = kind
        return name

    def wait_for_job(self, name: str, nodes: list[str], timeout_s: float,
                     stall_check: StallCheck | None = None, **kwargs: Any) -> JobOutcome:
        kind = self.kinds.get(name, "MPIJob")
        group, version, plural = self._gvp(kind)
        self._tolerate_404(self.custom.get_namespaced_custom_object, group, version, self.namespace, plural, name)
        return self.sim.wait_for_job(name, nodes, timeout_s, stall_check, **kwargs)

    def job_log(self, name: str) -> str:
        self.calls += 1
        self.core.list_namespaced_pod(self.namespace, label_selector=f"training.kubeflow.org/job-name={name}")
        return self.sim.job_log(name)

    def delete_job(self, name: str) -> bool:
        kind = self.kinds.get(name) or "MPIJob"
        group, version, plural = self._gvp(kind)
        self._tolerate_404(self.custom.delete_namespaced_custom_object, group, version, self.namespace, plural, name,
                           dry_run="All")
        return self.sim.delete_job(name)

    def list_jobs(self, labels: dict[str, str], kinds: list[str] | None = None) -> list[str]:
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        for kind in (kinds if kinds is not None else list(JOB_KINDS)):
            group, version, plural = self._gvp(kind)
            self.calls += 1
            self.custom.list_namespaced_custom_object(group, version, self.namespace, plural, label_selector=selector)
        return self.sim.list_jobs(labels, kinds)

    # ConfigMaps (the diagnose store) live on the real API server, not in the simulator: real writes as the service
    # account, so the store's merge patches, sizes and cleanup are the API server's own
    def create_configmap(self, manifest: dict) -> bool:
        from kubernetes.client.exceptions import ApiException

        self.sim.check_pod_alive()  # a step the runner lets run past its deadline writes nothing
        self.calls += 1
        try:
            self.core.create_namespaced_config_map(self.namespace, manifest)
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True

    def read_configmap(self, name: str) -> dict[str, str] | None:
        found = self._tolerate_404(self.core.read_namespaced_config_map, name, self.namespace)
        return None if found is None else dict(found.data or {})

    def patch_configmap(self, name: str, data: dict[str, str | None]) -> None:
        self.sim.check_pod_alive()  # a step the runner lets run past its deadline writes nothing
        if self._tolerate_404(self.core.patch_namespaced_config_map, name, self.namespace, {"data": data},
                              _content_type=MERGE_PATCH) is None:
            raise ConfigMapMissing(f"ConfigMap {self.namespace}/{name} does not exist")

    def delete_configmap(self, name: str) -> bool:
        self.sim.check_pod_alive()  # a step the runner lets run past its deadline writes nothing
        return self._tolerate_404(self.core.delete_namespaced_config_map, name, self.namespace) is not None

    def __getattr__(self, name: str) -> Any:  # set_clock, jobs_alive, ... of the simulator
        return getattr(self.sim, name)


__all__ = ["MirroredCluster"]
