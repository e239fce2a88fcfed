"""Run one MPIJob manifest for real on a Fabric: its worker pods run the generated worker command (sshd), its
launcher runs the generated launcher command (mpirun), with what mpi-operator v0.8 adds (hostfile, env, ssh
Secret: `mpi_operator`) and what the kubelet does (env, `$(VAR)`: `kubelet`). Stand-ins for the workload (the
benchmark binary, the training script) are bind-mounted at the paths the command names, in the workers' and the
launcher's mount namespaces only, so the generated command runs unchanged.

What the images bring is modelled, not run: each pod's /etc/ssh is this machine's Debian openssh configuration plus
the lines its image's Dockerfile adds (`images`), with fresh host keys per worker; PATH and HOME are a root image's.

STAND-IN: Open MPI is Debian's (4.1), laid out at the image's MPI prefix (the directory above the generated mpirun's
bin/, e.g. HPC-X's /opt/hpcx/ompi): an absolute mpirun path acts as Open MPI's --prefix, so each worker's orted is
started from <prefix>/bin with <prefix>/lib on its library path (mpirun(1) "--prefix"), and the tree has to be on
every pod. Not proven: that the image's own Open MPI build behaves the same.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from e2e.launch import kubelet, mpi_operator
from e2e.launch.fabric import Fabric
from e2e.launch.images import ImageSSH, image_ssh

IMAGE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
READY_TIMEOUT_S = 20.0


@dataclass
class LaunchResult:
    rc: int | None  # the launcher's exit code; None: it never started (a worker never became ready)
    log: str  # the launcher container's output, as `kubectl logs` would give it
    ranks: list[dict]  # one record per rank the stand-in wrote: rank, size, host, pid, env
    hostfile: str
    launcher_argv: list[str]
    launcher_env: dict[str, str]
    image_ssh: ImageSSH
    worker_logs: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0


def _ssh_secret(dir_: Path, scratch: Path) -> None:
    """An ECDSA P-521 key in PEM, as newSSHAuthSecret makes, laid out as the Secret's volume (mode 0600)."""
    key = scratch / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "521", "-m", "PEM", "-N", "", "-C", "", "-f",
                    str(key)], check=True)
    public = " ".join(key.with_suffix(".pub").read_text().split()[:2]).encode() + b"\n"
    dir_.mkdir(mode=0o755)
    for name, data in mpi_operator.secret_files(key.read_bytes(), public).items():
        (dir_ / name).write_bytes(data)
        (dir_ / name).chmod(0o600)


def _etc_ssh(dir_: Path, image: ImageSSH, host_keys: bool) -> None:
    """This machine's /etc/ssh configuration (no host keys) plus the image's edits, in the files' include dirs."""
    src = Path("/etc/ssh")
    dir_.mkdir()
    for name in ("ssh_config", "sshd_config", "moduli"):
        if (src / name).exists():
            shutil.copy2(src / name, dir_ / name)
    for sub in ("ssh_config.d", "sshd_config.d"):
        (dir_ / sub).mkdir()
    if image.ssh_config:
        (dir_ / "ssh_config.d" / "image.conf").write_text("Host *\n" + "".join(f"    {o}\n" for o in image.ssh_config))
    if image.sshd_config:
        (dir_ / "sshd_config.d" / "image.conf").write_text("".join(f"{o}\n" for o in image.sshd_config))
    if host_keys:
        for kind in ("ed25519", "ecdsa"):
            subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(dir_ / f"ssh_host_{kind}_key")],
                           check=True)


def _mpi_at_image_prefix(scratch: Path, mpirun: str) -> list[tuple[str, str]]:
    """(source, mount point) binding Debian's Open MPI at the prefix the generated mpirun path names."""
    prefix = Path(mpirun).parent.parent
    if not Path(mpirun).is_absolute() or prefix == Path("/usr"):
        return []  # found on PATH, or Debian's own place
    tree = scratch / "mpi-prefix"
    (tree / "bin").mkdir(parents=True)
    for tool in ("mpirun", "mpiexec", "orterun", "orted"):
        found = shutil.which(tool)
        if found:
            (tree / "bin" / tool).symlink_to(Path(found).resolve())
    libdir = subprocess.run(["mpicc", "--showme:libdirs"], capture_output=True, text=True, check=True).stdout.split()
    (tree / "lib").symlink_to(libdir[0])
    return [(str(tree), str(prefix))]


def _read_ranks(report: Path) -> list[dict]:
    out = []
    for f in sorted(report.glob("rank-*.env")):
        head, _, env = f.read_bytes().partition(b"pid=")
        fields = dict(line.split("=", 1) for line in head.decode().splitlines() if "=" in line)
        pid_line, _, env = env.partition(b"\n")
        env_map = {}
        for item in env.split(b"\0"):
            if b"=" in item:
                k, v = item.decode(errors="replace").split("=", 1)
                env_map[k] = v
        out.append({"rank": int(fields["rank"]), "size": int(fields["size"]), "host": fields["host"],
                    "pid": int(pid_line), "env": env_map})
    return sorted(out, key=lambda r: r["rank"])


def run_mpijob(fabric: Fabric, manifest: dict, workload: dict[str, Path], report: Path,
               launcher_timeout_s: float = 180.0) -> LaunchResult:
    """`workload`: path in the image → stand-in file on this machine, bound on every pod. `report`: the directory
    the stand-ins write rank records to (visible in every namespace: plain files, no mount)."""
    started = time.monotonic()
    pods = mpi_operator.pods(manifest)
    image = manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    ssh = image_ssh(image)
    nodes = {p.hostname: fabric.add_node(p.hostname) for p in pods}
    scratch = fabric.scratch
    hosts = scratch / "hosts"
    hosts.write_text("127.0.0.1\tlocalhost\n" + "".join(f"{nodes[p.hostname].address}\t{p.fqdn} {p.hostname}\n"
                                                        for p in pods))
    secret = scratch / "ssh-secret"
    _ssh_secret(secret, scratch)
    mount = mpi_operator.ssh_mount_path(manifest)
    config = scratch / "mpi-config"
    config.mkdir()
    hostfile = mpi_operator.hostfile(manifest)
    (config / "hostfile").write_text(hostfile)
    (config / "hostfile").chmod(0o444)
    privsep = scratch / "run-sshd"
    privsep.mkdir(mode=0o755)
    launcher_argv = pods[0].command
    common = [(str(hosts), "/etc/hosts"), (str(secret), mount), *[(str(f), p) for p, f in workload.items()],
              *_mpi_at_image_prefix(scratch, launcher_argv[0])]
    port = mpi_operator.readiness_port(manifest)
    worker_logs: dict[str, Path] = {}
    for pod in pods[1:]:
        etc = scratch / f"ssh-{pod.hostname}"
        _etc_ssh(etc, ssh, host_keys=True)
        env = kubelet.container_env(IMAGE_ENV, pod.env)
        worker_logs[pod.hostname] = scratch / f"{pod.hostname}.log"
        fabric.start(nodes[pod.hostname], kubelet.command(pod.command, env), env,
                     [*common, (str(etc), "/etc/ssh"), (str(privsep), "/run/sshd")], worker_logs[pod.hostname])
    launcher = pods[0]
    env = kubelet.container_env(IMAGE_ENV, launcher.env)
    argv = kubelet.command(launcher.command, env)

    def result(rc: int | None, log: str) -> LaunchResult:
        return LaunchResult(rc, log, _read_ranks(report), hostfile, argv, env, ssh,
                            {h: p.read_text(errors="replace") for h, p in worker_logs.items() if p.exists()},
                            time.monotonic() - started)

    # WaitForWorkersReady: the launcher is created once every worker's readinessProbe (tcpSocket) passes.
    if port is None:
        return result(None, "worker pods have no tcpSocket readinessProbe: WaitForWorkersReady would never start")
    for pod in pods[1:]:
        if not fabric.wait_listening(nodes[pod.hostname], port, READY_TIMEOUT_S):
            return result(None, f"{pod.hostname}: nothing listens on the readinessProbe port {port}")
    etc = scratch / "ssh-launcher"
    _etc_ssh(etc, ssh, host_keys=False)
    log = scratch / "launcher.log"
    proc = fabric.start(nodes[launcher.hostname], argv, env,
                        [*common, (str(etc), "/etc/ssh"), (str(config), mpi_operator.CONFIG_MOUNT)], log)
    try:
        rc: int | None = proc.wait(timeout=launcher_timeout_s)
    except subprocess.TimeoutExpired:
        rc = None
    text = log.read_text(errors="replace")
    if rc is None:
        text += f"\n[launch test] launcher still running after {launcher_timeout_s:.0f}s: killed\n"
    return result(rc, text)


__all__ = ["IMAGE_ENV", "LaunchResult", "run_mpijob"]
