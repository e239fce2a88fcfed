"""TrainJob (Kubeflow Trainer v2.3, trainer.kubeflow.org/v1alpha1): the backend `spec.orchestration.backend: trainjob`
selects. Facts and file:line citations: docs/trainjob-backend.md.

A TrainJob only says which runtime to run and how big (`runtimeRef`, `trainer.numNodes`, `numProcPerNode`); the pods
come from the referenced runtime's JobSet template. A shared ClusterTrainingRuntime cannot carry what each test needs
(the workers' image: a TrainJob's `trainer.image` reaches only the replicated job labelled
`trainjob-ancestor-step: trainer`; schedulerName and priorityClassName: not patchable through `runtimePatches`), so,
as NVCRE does for WorkloadRun, each test gets its own namespaced TrainingRuntime, created just before the TrainJob and
deleted just after it. Its pod templates are the ones the MPIJob / JobSet backends build, so every pod-level fix
(placement, ports, devices) reaches this backend too; only the names Trainer looks for change (container `node`).
"""

from __future__ import annotations

import copy

from nvcre_hera.jobs.base import JobPlan, metadata
from nvcre_hera.jobs.jobset import JobSetBackend
from nvcre_hera.jobs.mpijob import MPIJobBackend, source_checkout

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API = f"{TRAINER_GROUP}/v1alpha1"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"  # pkg/constants/constants.go:41
ANCESTOR_TRAINER = "trainer"  # constants.go:66: the replicated job that TrainJob.spec.trainer overrides
NODE = "node"  # constants.go:69: replicated job and container name the plugins look for
LAUNCHER = "launcher"  # constants.go:92
# Trainer v2.3 mounts the key Secret with the private key at mode 0640 (constants.go L153-154, for its runAsUser 1000
# runtimes); OpenSSH refuses a key its own user owns with any group/other bit (authfile.c sshkey_perm_ok), and the
# Secret's files are root's. So, running as root, the Secret goes to a side directory and an init container copies
# the keys into /root/.ssh at 0600 (NVCRE does the same copy, shared/reference/workload-images.md §7).
SSH_AUTH_MOUNT = "/mnt/mpi-ssh"  # MPIMLPolicySource.sshAuthMountPath
SSH_HOME = "/root/.ssh"
SSH_SECRET_VOLUME = "mpi-ssh-auth"  # constants.go L136, MPISSHAuthVolumeName
SSH_KEY_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys")  # constants.go L139-148
TORCH_MASTER_PORT = 29500  # constants.go:72, PET_MASTER_PORT


def runtime_name(plan: JobPlan) -> str:
    return f"{plan.name}-runtime"


def torch_master_addr(name: str) -> str:
    """Rank 0's DNS name under Trainer: `<trainjob>-node-0-0.<trainjob>` (plugins/torch/torch.go:162, PET_MASTER_ADDR)."""
    return f"{name}-{NODE}-0-0.{name}"


def _as_node(pod_template: dict, container: str) -> dict:
    """A copy of a pod template whose main container is named `node`, the name Trainer's plugins patch."""
    out = copy.deepcopy(pod_template)
    for c in out["spec"]["containers"]:
        if c["name"] == container:
            c["name"] = NODE
    return out


def _with_ssh_keys_copied(pod_template: dict, image: str) -> dict:
    """A copy of an MPI pod template whose `node` container finds the keys in /root/.ssh at 0700/0600 (argv lists:
    `install -d -m 0700`, then `install -m 0600 -t`), copied from Trainer's Secret mount by init containers."""
    out = copy.deepcopy(pod_template)
    spec = out["spec"]
    home = {"name": "ssh-home", "mountPath": SSH_HOME}
    secret = {"name": SSH_SECRET_VOLUME, "mountPath": SSH_AUTH_MOUNT, "readOnly": True}
    spec["initContainers"] = [
        *spec.get("initContainers", []),
        {"name": "ssh-dir", "image": image, "command": ["install", "-d", "-m", "0700", SSH_HOME],
         "volumeMounts": [home]},
        {"name": "ssh-keys", "image": image,
         "command": ["install", "-m", "0600", "-t", SSH_HOME, *(f"{SSH_AUTH_MOUNT}/{f}" for f in SSH_KEY_FILES)],
         "volumeMounts": [secret, home]},
    ]
    spec["volumes"] = [*spec.get("volumes", []), {"name": "ssh-home", "emptyDir": {}}]
    for c in spec["containers"]:
        if c["name"] == NODE:
            c["volumeMounts"] = [*c.get("volumeMounts", []), home]
    return out


def _replicated_job(name: str, pod_template: dict, labels: dict, trainer: bool, **extra: object) -> dict:
    job_labels = {**labels, **({ANCESTOR_LABEL: ANCESTOR_TRAINER} if trainer else {})}
    return {"name": name, **extra, "template": {"metadata": {"labels": job_labels},
                                                "spec": {"backoffLimit": 0, "template": pod_template}}}


class TrainJobBackend:
    kind = "TrainJob"

    def _runtime_spec(self, plan: JobPlan) -> dict:
        n, framework = len(plan.nodes), plan.entry.framework
        labels = dict(plan.labels)
        if framework == "mpi":
            mpi = MPIJobBackend().manifest(plan)
            specs = mpi["spec"]["mpiReplicaSpecs"]
            # Same launcher/worker split as MPIJob; JobSet's dependsOn Ready stands in for WaitForWorkersReady,
            # as in Trainer's own MPI runtime (manifests/base/runtimes/deepspeed_distributed.yaml:31-63).
            return {
                "mlPolicy": {"numNodes": n, "mpi": {"numProcPerNode": mpi["spec"]["slotsPerWorker"],
                                                    "mpiImplementation": "OpenMPI", "sshAuthMountPath": SSH_AUTH_MOUNT,
                                                    "runLauncherAsNode": False}},
                "template": {"metadata": {"labels": labels}, "spec": {
                    "network": {"publishNotReadyAddresses": True},
                    "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
                    "failurePolicy": {"maxRestarts": 0},
                    "replicatedJobs": [
                        _replicated_job(NODE, _with_ssh_keys_copied(_as_node(specs["Worker"]["template"], "worker"),
                                                                    plan.image), labels, False),
                        _replicated_job(LAUNCHER, _with_ssh_keys_copied(
                            _as_node(specs["Launcher"]["template"], "launcher"), plan.image), labels, True,
                                        dependsOn=[{"name": NODE, "status": "Ready"}]),
                    ]}},
            }
        if framework == "torch":
            # One torchrun per node, started by Trainer (no mpirun): the MPIJob worker's pod, running the workload.
            worker = _as_node(MPIJobBackend().manifest(plan)["spec"]["mpiReplicaSpecs"]["Worker"]["template"], "worker")
            container = next(c for c in worker["spec"]["containers"] if c["name"] == NODE)
            argv, _, _ = source_checkout(plan)
            container["command"], container["args"] = argv[:1], argv[1:]
            container.pop("readinessProbe", None)
            env = {e["name"]: e for e in container.get("env", [])}
            env["MASTER_ADDR"] = {"name": "MASTER_ADDR", "value": torch_master_addr(plan.name)}
            container["env"] = [env[k] for k in sorted(env)]
            policy = {"numNodes": n, "torch": {}}
            jobs = [_replicated_job(NODE, worker, labels, True)]
        else:
            pod = JobSetBackend().manifest(plan)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
            policy = {"numNodes": n}
            jobs = [_replicated_job(NODE, _as_node(pod, "launcher"), labels, True)]
        return {"mlPolicy": policy, "template": {"metadata": {"labels": labels}, "spec": {
            "failurePolicy": {"maxRestarts": 0}, "replicatedJobs": jobs}}}

    def dependencies(self, plan: JobPlan) -> list[dict]:
        """The TrainingRuntime this test's TrainJob references (namespaced, same namespace as the TrainJob)."""
        meta = metadata(plan, plan.context.namespace if plan.context else "default")
        meta["name"] = runtime_name(plan)
        meta.pop("annotations", None)  # the test-spec annotation belongs to the job object only
        return [{"apiVersion": TRAINER_API, "kind": "TrainingRuntime", "metadata": meta,
                 "spec": self._runtime_spec(plan)}]

    def manifest(self, plan: JobPlan) -> dict:
        namespace = plan.context.namespace if plan.context else "default"
        trainer: dict = {"numNodes": len(plan.nodes)}
        if plan.entry.framework == "mpi":  # hostfile slots (plugins/mpi/mpi.go:128-129)
            trainer["numProcPerNode"] = plan.gpus_per_node
        elif plan.entry.framework == "torch":  # PET_NPROC_PER_NODE (plugins/torch/torch.go:121-123)
            trainer["numProcPerNode"] = plan.gpus_per_node
        return {
            "apiVersion": TRAINER_API,
            "kind": "TrainJob",
            "metadata": metadata(plan, namespace),
            "spec": {
                "runtimeRef": {"apiGroup": TRAINER_GROUP, "kind": "TrainingRuntime", "name": runtime_name(plan)},
                "trainer": trainer,
                "activeDeadlineSeconds": max(1, int(plan.timeout_s)),
            },
        }


__all__ = ["ANCESTOR_LABEL", "TRAINER_API", "TrainJobBackend", "runtime_name", "torch_master_addr"]
