"""MPIJob v2beta1 (kubeflow/mpi-operator v0.8): the default backend for mpi and torch categories.

Shape from shared/reference/argo-hera-kubeflow.md §4.1: sshd workers with a readiness probe on the ssh port, a
launcher with restartPolicy Never and backoffLimit 0 (a failed test is a result, not something to retry),
`WaitForWorkersReady` so the launcher never races the workers, `/dev/shm` as a memory emptyDir, GPU and NIC
resources, and the platform's NCCL environment exported to every rank with `-x NAME` (values stay in env, never
on a shell line). torch categories use mpirun only to start one torchrun per node (§4.4).

ssh (docs/workload-facts.md): mpi-operator sets no port (only OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10",
mpi_job_controller.go L192-193, appended after the container's env so an env var of ours would lose) and mounts its
key Secret at /root/.ssh (id_rsa, id_rsa.pub, authorized_keys; mode 0600, L1764-1787). The catalog images run as
root with the stock port 22, so workers listen on 22 and the launcher says so on mpirun's command line, which
overrides the environment (Open MPI MCA precedence), keeping the operator's ConnectionAttempts.
"""

from __future__ import annotations

from nvcre_hera.catalog import CLONED_CODE_DIR
from nvcre_hera.jobs.base import (JobPlan, env_list, launcher_affinity, metadata, pod_placement, worker_affinity,
                                  worker_labels)

SSH_PORT = 22  # the images' own sshd_config/ssh_config default (no Port line): both sides agree without a config file
# mpirun's rsh agent arguments: the port, the operator's own ConnectionAttempts that this value replaces, and no
# host-key prompt: worker pods get new host keys and names every job, and only CoreWeave's image says so in its
# ssh_config (NVCRE's catalog passes the same -o StrictHostKeyChecking=no: docs/workload-facts.md)
RSH_ARGS = (f"-p {SSH_PORT} -o ConnectionAttempts=10 -o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null")


def worker_command(plan: JobPlan) -> list[str]:
    """sshd in the foreground, logging to stderr, on SSH_PORT (argv, no shell)."""
    return [plan.entry.sshd, "-De", "-p", str(SSH_PORT)]


def launcher_command(plan: JobPlan, ranks: int, mapping: list[str], exports: list[str], argv: list[str]) -> list[str]:
    return [plan.mpirun, "--allow-run-as-root", "-np", str(ranks), *mapping, "--bind-to", "none",
            "--mca", "plm_rsh_args", RSH_ARGS, *plan.mpi_args, *exports, *argv]


def source_checkout(plan: JobPlan) -> tuple[list[str], dict | None, dict | None]:
    """With `sourceRepo`, workers clone it (argv, no shell: the URL is validated) into an emptyDir; the training
    command already points there ({megatronDir}, catalog.apply_workload_options); returns (argv, init container,
    volume)."""
    if not plan.source_repo:
        return plan.argv, None, None
    repo = plan.source_repo
    clone = ["git", "clone", "--depth", "1", *(["--branch", repo["ref"]] if repo.get("ref") else []), "--",
             repo["url"], CLONED_CODE_DIR]
    init = {"name": "checkout", "image": plan.image, "command": clone,
            "volumeMounts": [{"name": "workspace", "mountPath": "/workspace"}]}
    return plan.argv, init, {"name": "workspace", "emptyDir": {}}


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
        launcher_cmd = launcher_command(plan, ranks, mapping, exports, argv)
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
                                    "command": worker_command(plan),
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


__all__ = ["MPIJobBackend", "RSH_ARGS", "SSH_PORT", "launcher_command", "worker_command"]
