"""What kubeflow/mpi-operator v0.8 adds around an MPIJob before its pods run: the hostfile, the launcher's and the
workers' extra environment, the ssh key Secret and where it is mounted, and the pods' DNS names. Pure functions of
the MPIJob manifest (plain dicts), so the launch test gives the processes exactly what the operator would.

Source: kubeflow/mpi-operator at v0.8.2 (commit caa3c47fc42eb762635f78045ec0fcd1a89eb038),
`pkg/controller/mpi_job_controller.go` (MJC below) and `pkg/apis/kubeflow/v2beta1/default.go`:
- hostfile `<job>-worker-<i>.<job>.<ns>.svc slots=<slotsPerWorker>` per worker, OpenMPI syntax (MJC L1335-1363);
  mounted at /etc/mpi/hostfile in the launcher only (MJC L75-77, L1646-1662); no `--cluster-domain` suffix by default
  (cmd/mpi-operator/app/options/options.go L93).
- launcher env appended after the container's: `K_MPI_JOB_ROLE=launcher`, `OMPI_MCA_orte_keep_fqdn_hostnames=true`,
  `OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile`, `OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10`,
  `OMPI_MCA_orte_set_default_slots=<slots>`, then `NVIDIA_VISIBLE_DEVICES` and `NVIDIA_DRIVER_CAPABILITIES` empty
  (MJC L117, L169-219, L1612-1635). Workers get `K_MPI_JOB_ROLE=worker` only (MJC L175-180, L1532). No port.
- the Secret `<job>-ssh` holds an ECDSA P-521 key (PEM `EC PRIVATE KEY`) and its authorized-key line; files
  `id_rsa`, `id_rsa.pub`, `authorized_keys`, mode 0600 when mounted at /root/.ssh, on launcher and workers
  (MJC L79-92, L142-155, L1442-1476, L1793-1816); `sshAuthMountPath` defaults to /root/.ssh (default.go L65-67).
- pod hostname `<job>-worker-<i>` / `<job>-launcher`, subdomain = the job's Service, named after the job
  (MJC L1479-1481, L1512-1513, L1603-1604, L1410-1415); `slotsPerWorker` defaults to 1 (default.go L62-64).
- a worker without command and args gets `/usr/sbin/sshd -De` (MJC L1528-1530): the operator never sets a port.
"""

from __future__ import annotations

from dataclasses import dataclass

CONFIG_MOUNT = "/etc/mpi"
HOSTFILE = f"{CONFIG_MOUNT}/hostfile"
DEFAULT_SSH_MOUNT = "/root/.ssh"
SSH_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys")


@dataclass(frozen=True)
class Pod:
    """One pod the operator creates: its hostname, DNS name and its main container's command and env."""

    role: str  # launcher | worker
    hostname: str
    fqdn: str
    command: list[str]
    env: list[tuple[str, str]]  # in order: the container's, then the operator's (a later entry wins)


def _job(manifest: dict) -> tuple[str, str, dict]:
    if manifest.get("kind") != "MPIJob":
        raise ValueError(f"not an MPIJob: kind {manifest.get('kind')!r}")
    meta = manifest["metadata"]
    return meta["name"], meta.get("namespace") or "default", manifest["spec"]


def slots_per_worker(manifest: dict) -> int:
    return int(_job(manifest)[2].get("slotsPerWorker", 1))


def ssh_mount_path(manifest: dict) -> str:
    return _job(manifest)[2].get("sshAuthMountPath") or DEFAULT_SSH_MOUNT


def _fqdn(pod: str, job: str, ns: str) -> str:
    return f"{pod}.{job}.{ns}.svc"


def hostfile(manifest: dict) -> str:
    """The ConfigMap's `hostfile` (OpenMPI, no runLauncherAsWorker): one line per worker replica."""
    job, ns, spec = _job(manifest)
    if spec.get("mpiImplementation", "OpenMPI") != "OpenMPI":
        raise ValueError(f"mpiImplementation {spec.get('mpiImplementation')!r}: only OpenMPI is modelled")
    if spec.get("runLauncherAsWorker"):
        raise ValueError("runLauncherAsWorker is not modelled")
    replicas = int(spec["mpiReplicaSpecs"]["Worker"].get("replicas", 0))
    slots = slots_per_worker(manifest)
    return "".join(f"{_fqdn(f'{job}-worker-{i}', job, ns)} slots={slots}\n" for i in range(replicas))


def _container(spec: dict, role: str) -> dict:
    return spec["mpiReplicaSpecs"][role]["template"]["spec"]["containers"][0]


def _env(container: dict) -> list[tuple[str, str]]:
    out = []
    for e in container.get("env") or []:
        if "valueFrom" in e:
            raise ValueError(f"env {e['name']}: valueFrom is not modelled")
        out.append((e["name"], str(e.get("value", ""))))
    return out


def pods(manifest: dict) -> list[Pod]:
    """The launcher first, then the workers in index order, as the operator would create them."""
    job, ns, spec = _job(manifest)
    slots = str(slots_per_worker(manifest))
    launcher = _container(spec, "Launcher")
    launcher_env = [*_env(launcher), ("K_MPI_JOB_ROLE", "launcher"),
                    ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"), ("OMPI_MCA_orte_default_hostfile", HOSTFILE),
                    ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
                    ("OMPI_MCA_orte_set_default_slots", slots),
                    ("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    out = [Pod("launcher", f"{job}-launcher", _fqdn(f"{job}-launcher", job, ns),
               [*launcher.get("command", []), *launcher.get("args", [])], launcher_env)]
    worker = _container(spec, "Worker")
    command = [*worker.get("command", []), *worker.get("args", [])] or ["/usr/sbin/sshd", "-De"]
    for i in range(int(spec["mpiReplicaSpecs"]["Worker"].get("replicas", 0))):
        name = f"{job}-worker-{i}"
        out.append(Pod("worker", name, _fqdn(name, job, ns), command,
                       [*_env(worker), ("K_MPI_JOB_ROLE", "worker")]))
    return out


def readiness_port(manifest: dict) -> int | None:
    """The workers' tcpSocket readinessProbe port: with WaitForWorkersReady the launcher starts only when it opens."""
    probe = _container(_job(manifest)[2], "Worker").get("readinessProbe") or {}
    port = (probe.get("tcpSocket") or {}).get("port")
    return int(port) if port is not None else None


def secret_files(private_pem: bytes, authorized_key: bytes) -> dict[str, bytes]:
    """The Secret's items as files in the mount (sshVolumeItems, MJC L142-155): the public key twice."""
    return {"id_rsa": private_pem, "id_rsa.pub": authorized_key, "authorized_keys": authorized_key}


__all__ = ["CONFIG_MOUNT", "DEFAULT_SSH_MOUNT", "HOSTFILE", "Pod", "hostfile", "pods", "readiness_port",
           "secret_files", "slots_per_worker", "ssh_mount_path"]
