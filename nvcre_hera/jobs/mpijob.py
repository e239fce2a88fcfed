"""MPIJob v2beta1 (kubeflow/mpi-operator v0.8): the default backend for mpi and torch categories.

Shape from shared/reference/argo-hera-kubeflow.md §4.1: sshd workers with a readiness probe on port 2222, a
launcher with restartPolicy Never and backoffLimit 0 (a failed test is a result, not something to retry),
`WaitForWorkersReady` so the launcher never races the workers, `/dev/shm` as a memory emptyDir, GPU and NIC
resources, and the platform's NCCL environment exported to every rank with `-x NAME` (values stay in env, never
on a shell line). torch categories use mpirun only to start one torchrun per node (§4.4).
"""

from __future__ import annotations

from nvcre_hera.jobs.base import (JobPlan, env_list, launcher_affinity, metadata, pod_placement, worker_affinity,
                                  worker_labels)

SSH_PORT = 2222
CATALOG_CODE_DIR = "/opt/megatron-lm"   # where the catalog's training image carries Megatron-LM
CLONED_CODE_DIR = "/workspace/megatron-lm"  # where `sourceRepo` is cloned instead


def source_checkout(plan: JobPlan) -> tuple[list[str], dict | None, dict | None]:
    """With `sourceRepo`, workers clone it (argv, no shell: the URL is validated) into an emptyDir and the training
    command points there; returns (argv, init container, volume)."""
    if not plan.source_repo:
        return plan.argv, None, None
    repo = plan.source_repo
    clone = ["git", "clone", "--depth", "1", *(["--branch", repo["ref"]] if repo.get("ref") else []), "--",
             repo["url"], CLONED_CODE_DIR]
    init = {"name": "checkout", "image": plan.image, "command": clone,
            "volumeMounts": [{"name": "workspace", "mountPath": "/workspace"}]}
    argv = [a.replace(CATALOG_CODE_DIR, CLONED_CODE_DIR) for a in plan.argv]
    return argv, init, {"name": "workspace", "emptyDir": {}}


class MPIJobBackend:
    kind = "MPIJob"

    def manifest(self, plan: JobPlan) -> dict:
        ctx = plan.context
        namespace = ctx.namespace if ctx else "default"
        n = len(plan.nodes)
        env = dict(plan.env)
        if plan.entry.framework == "torch":
            # torchrun's c10d rendezvous on the first worker; kubelet expands $(MASTER_ADDR) in args, no shell.
            env["MASTER_ADDR"] = f"{plan.name}-worker-0.{plan.name}.{namespace}.svc"
            ranks, mapping = n, ["--map-by", "ppr:1:node"]
        else:
            ranks, mapping = n * plan.gpus_per_node, ["--map-by", f"ppr:{plan.gpus_per_node}:node"]
        exports = [arg for key in sorted(env) for arg in ("-x", key)]
        argv, checkout, workspace = source_checkout(plan)
        launcher_cmd = [plan.mpirun, "--allow-run-as-root", "-np", str(ranks), *mapping, "--bind-to", "none",
                        *plan.mpi_args, *exports, *argv]
        placement = pod_placement(plan)
        limits: dict[str, str] = {"nvidia.com/gpu": str(plan.gpus_per_node)}
        if plan.nic_resource and plan.nics_per_node > 0 and plan.rdma_device_access == "devicePlugin":
            limits[plan.nic_resource] = str(plan.nics_per_node)
        worker_resources: dict = {"limits": limits}
        if plan.resources:
            for side in ("limits", "requests"):
                extra = {k: str(v) for k, v in (plan.resources.get(side) or {}).items()}
                if extra:
                    worker_resources[side] = {**worker_resources.get(side, {}), **extra}
        volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
        mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
        security = {"capabilities": {"add": ["IPC_LOCK"]}}
        if plan.rdma_device_access == "hostPath":
            volumes.append({"name": "infiniband", "hostPath": {"path": "/dev/infiniband"}})
            mounts.append({"name": "infiniband", "mountPath": "/dev/infiniband"})
            security = {"privileged": True}
        if checkout:
            volumes.append(workspace)
            mounts.append({"name": "workspace", "mountPath": "/workspace"})
        pod_labels = dict(plan.labels)
        return {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": metadata(plan, namespace),
            "spec": {
                "slotsPerWorker": plan.gpus_per_node if plan.entry.framework != "torch" else 1,
                "mpiImplementation": "OpenMPI",
                "launcherCreationPolicy": "WaitForWorkersReady",
                "runPolicy": {"backoffLimit": 0, "cleanPodPolicy": "Running",
                              "activeDeadlineSeconds": int(plan.timeout_s)},
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "replicas": 1,
                        "restartPolicy": "Never",
                        "template": {
                            "metadata": {"labels": pod_labels},
                            "spec": {
                                **placement,
                                "affinity": launcher_affinity(),
                                "containers": [{
                                    "name": "launcher", "image": plan.image, "command": launcher_cmd,
                                    "env": env_list(env),
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                }],
                            },
                        },
                    },
                    "Worker": {
                        "replicas": n,
                        "restartPolicy": "Never",
                        "template": {
                            "metadata": {"labels": worker_labels(plan)},
                            "spec": {
                                **placement,
                                "affinity": worker_affinity(plan),
                                **({"initContainers": [checkout]} if checkout else {}),
                                "containers": [{
                                    "name": "worker", "image": plan.image,
                                    "command": ["/usr/sbin/sshd", "-De", "-p", str(SSH_PORT)],
                                    "env": env_list(env),
                                    "readinessProbe": {"tcpSocket": {"port": SSH_PORT}, "initialDelaySeconds": 2,
                                                       "periodSeconds": 2},
                                    "resources": worker_resources,
                                    "securityContext": security,
                                    "volumeMounts": mounts,
                                }],
                                "volumes": volumes,
                            },
                        },
                    },
                },
            },
        }


__all__ = ["MPIJobBackend", "SSH_PORT"]
