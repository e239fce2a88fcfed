"""The MPIJob launch, run for real: the job the generator writes, stood up as processes in Linux network namespaces
(one per pod, `e2e/launch/fabric.py`), with what kubeflow/mpi-operator v0.8 adds (hostfile, launcher env, the ssh key
Secret at /root/.ssh: `e2e/launch/mpi_operator.py`, cited there). Workers run the generated worker command (sshd),
the launcher runs the generated mpirun command unchanged.

STAND-IN: the benchmark is `e2e/launch/nccl_standin.c`, a small MPI program bound over the path the command names;
it is NOT the CUDA nccl-tests binary. Proven: the launch plumbing (ssh port and options, the ssh key layout,
hostfile, slots, `-x` exports, rank count and placement, exit code, the log reaching the project's parser). Not
proven: anything about GPUs, NCCL, the network, or that the image holds the binaries and ssh configuration the test
assumes (`e2e/launch/images.py`). Open MPI is Debian's (4.1 on bookworm), not the image's HPC-X build.

Needs root (namespaces, mounts) and Debian's openmpi-bin, libopenmpi-dev, openssh-server, iproute2 (`make
e2e-launch` installs them); without root every test here is skipped with that reason.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nvcre_hera.jobs import JobContext, plan_job, render_job
from nvcre_hera.spec_load import parse_certification, resolve_categories

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces and bind mounts")]

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # e2e/launch is imported from the repository root
    sys.path.insert(0, str(REPO))
STANDIN = REPO / "e2e" / "launch" / "nccl_standin.c"
CTX = JobContext("wf-launch", "0b5e1a3c-0000-4000-8000-0000000000aa", "nvcre", "onprem", "h100")
TOOLS = ("ip", "unshare", "mount", "mpicc", "mpirun", "ssh", "ssh-keygen", "ss", "/usr/sbin/sshd")


def _category(variant: str, domain: str = "communication", **options: object):
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "launch"},
           "spec": {"target": {}, "categories": [{"domain": domain, "variant": variant, "options": options}]}}
    return resolve_categories(parse_certification(yaml.safe_dump(doc), "launch.yaml"))[0]


def _generated(workers: int, variant: str = "nccl-all-reduce", domain: str = "communication", **options: object):
    """The MPIJob and the plan, from the project's own job builder (as tests/test_jobs.py calls it)."""
    cat = _category(variant, domain, **options)
    group = {"id": "g0", "nodes": [f"node-{i}" for i in range(workers)]}
    return (render_job(cat.entry, cat.index, cat.options, group, 0, CTX),
            plan_job(cat.entry, cat.index, cat.options, group, 0, CTX))


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    assert not missing, f"missing {missing}: apt-get install openmpi-bin libopenmpi-dev openssh-server iproute2"


def _launch(manifest: dict, workload_path: str):
    from e2e.launch.fabric import Fabric
    from e2e.launch.mpijob import run_mpijob

    with Fabric() as fabric:
        report = fabric.scratch / "ranks"
        report.mkdir()
        binary = fabric.scratch / "nccl-standin"
        subprocess.run(["mpicc", "-O1", f'-DREPORT_DIR="{report}"', "-o", str(binary), str(STANDIN)], check=True)
        return run_mpijob(fabric, manifest, {workload_path: binary}, report)


def _worker(manifest: dict) -> dict:
    return manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


def _launcher(manifest: dict) -> dict:
    return manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]


def _rsh_args(cmd: list[str]) -> tuple[int, str] | None:
    """Where the launcher command sets `--mca plm_rsh_args VALUE` (it overrides the operator's env var)."""
    for i in range(1, len(cmd) - 2):
        if cmd[i] in ("--mca", "-mca") and cmd[i + 1] == "plm_rsh_args":
            return i, cmd[i + 2]
    return None


def _dialled_port(manifest: dict) -> int:
    """The port the launcher's ssh dials: `-p N` in the command's plm_rsh_args, else ssh's 22 (neither the
    operator's env nor the images' ssh_config sets one: e2e/launch/images.py)."""
    found = _rsh_args(_launcher(manifest)["command"])
    words = found[1].split() if found else []
    return int(words[words.index("-p") + 1]) if "-p" in words[:-1] else 22


def _sshd_on(manifest: dict, port: int) -> dict:
    out = copy.deepcopy(manifest)
    w = _worker(out)
    cmd = list(w["command"])
    if "-p" in cmd[:-1]:
        del cmd[cmd.index("-p"):cmd.index("-p") + 2]
    w["command"] = [*cmd, "-p", str(port)]
    w.setdefault("readinessProbe", {}).setdefault("tcpSocket", {})["port"] = port
    return out


def _aligned(manifest: dict) -> dict:
    """The generated MPIJob with the workers' sshd moved to the port the launcher's ssh dials: the harness's
    positive control, so that the mutations below fail for their own reason, not for the port."""
    return _sshd_on(manifest, _dialled_port(manifest))


def _rsh_args_fix(manifest: dict) -> dict:
    """The other way to agree on the port, on the launcher's side: `--mca plm_rsh_args` on the mpirun command line
    (it overrides the OMPI_MCA_plm_rsh_args env mpi-operator sets) dialling the port the workers' sshd listens on,
    and not asking about host keys (what mpi-operator's and CoreWeave's images put in ssh_config, and what NVCRE
    passes: shared/reference/workload-images.md). A positive control, not the generator's output."""
    out = copy.deepcopy(manifest)
    worker = _worker(out)["command"]
    port = worker[worker.index("-p") + 1] if "-p" in worker[:-1] else "22"
    cmd = _launcher(out)["command"]
    found = _rsh_args(cmd)
    if found:
        del cmd[found[0]:found[0] + 3]
    cmd[1:1] = ["--mca", "plm_rsh_args",
                f"-p {port} -o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"]
    return out


def _problems(result, manifest: dict) -> list[str]:
    from e2e.launch.checks import nccl_log_problems, rank_problems

    return rank_problems(result, manifest) + nccl_log_problems(result)


@pytest.mark.parametrize("workers", [2, 4])
def test_generated_mpijob_launches(workers: int) -> None:
    """The generated nccl-all-reduce MPIJob, unchanged: 2 and 4 workers × slotsPerWorker ranks, each worker holding
    its hostfile slots, every launcher env var in every rank, exit 0, the log parsed as a complete nccl-tests run."""
    manifest, plan = _generated(workers)
    result = _launch(manifest, plan.argv[0])
    problems = _problems(result, manifest)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("fix", [_aligned, _rsh_args_fix], ids=["sshd-on-dialled-port", "plm-rsh-args"])
def test_positive_control_with_the_port_agreed(fix) -> None:
    """Only the port agreed on (either side) from the generated job: everything else must already hold."""
    manifest, plan = _generated(2)
    result = _launch(fix(manifest), plan.argv[0])
    problems = _problems(result, manifest)
    assert not problems, "\n".join(problems)
    assert result.rc == 0 and len(result.ranks) == 2 * manifest["spec"]["slotsPerWorker"]


def test_mutation_missing_export_is_caught() -> None:
    """Drop one `-x NAME`: the rank no longer sees NAME (ssh sessions do not inherit the worker's env)."""
    manifest, plan = _generated(2)
    mutated = _aligned(manifest)
    cmd = _launcher(mutated)["command"]
    at = cmd.index("-x")
    name = cmd[at + 1]
    del cmd[at:at + 2]
    problems = _problems(_launch(mutated, plan.argv[0]), mutated)
    assert any(p.startswith(f"env {name}=") for p in problems), problems


def test_mutation_wrong_slot_count_is_caught() -> None:
    """slotsPerWorker smaller than the ranks per node the command maps: mpirun refuses, the launch fails."""
    manifest, plan = _generated(2)
    mutated = _aligned(manifest)
    mutated["spec"]["slotsPerWorker"] = manifest["spec"]["slotsPerWorker"] // 2
    problems = _problems(_launch(mutated, plan.argv[0]), mutated)
    assert any(p.startswith("launcher exit code") for p in problems), problems


def test_mutation_wrong_port_is_caught() -> None:
    """The positive control with sshd on a port nobody dials: connection refused, exit code non-zero."""
    manifest, plan = _generated(2)
    dialled = _dialled_port(manifest)
    mutated = _sshd_on(manifest, 2200 if dialled != 2200 else 2201)
    result = _launch(mutated, plan.argv[0])
    problems = _problems(result, mutated)
    assert any(p.startswith("launcher exit code") for p in problems), problems
    assert f"port {dialled}: Connection refused" in result.log


GLOO_STANDIN = REPO / "e2e" / "launch" / "gloo_standin.py"
TORCHRUN_PATH = "/usr/local/bin/torchrun"  # where the worker's ssh session PATH finds it (image layout: unverified)


def _torch_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin, (
        "torch is not installed: `pip install -e '.[launch]'` (make e2e-launch does; CPU use of the PyPI wheel)")
    return str(Path(spec.origin).parent.parent)


def _torch_workload(scratch: Path, report: Path, script_path: str) -> dict[str, Path]:
    """The training script stand-in (REPORT_DIR prepended) and a torchrun on the path the worker's PATH finds,
    running this machine's torch (PyPI) with this interpreter."""
    script = scratch / "train-standin.py"
    script.write_text(f"REPORT_DIR = {str(report)!r}\n" + GLOO_STANDIN.read_text())
    torch_dir = _torch_dir()
    runner = scratch / "torchrun"
    runner.write_text(
        f"#!{sys.executable}\nimport os, sys\nsys.path.insert(0, {torch_dir!r})\n"
        f"os.environ['PYTHONPATH'] = os.pathsep.join(filter(None, [{torch_dir!r}, os.environ.get('PYTHONPATH')]))\n"
        "from torch.distributed.run import main\nsys.exit(main())\n")
    runner.chmod(0o755)
    return {script_path: script, TORCHRUN_PATH: runner}


def _launch_torch(manifest: dict, script_path: str):
    from e2e.launch.fabric import Fabric
    from e2e.launch.mpijob import run_mpijob

    with Fabric() as fabric:
        report = fabric.scratch / "ranks"
        report.mkdir()
        return run_mpijob(fabric, manifest, _torch_workload(fabric.scratch, report, script_path), report,
                          launcher_timeout_s=300)


def _nproc(argv: list[str]) -> int:
    return int(argv[argv.index("--nproc-per-node") + 1])


def _torch_problems(result, manifest: dict, plan) -> list[str]:
    from e2e.launch.checks import rank_problems
    from nvcre_hera.parsers.training import parse_training

    nproc = _nproc(result.launcher_argv)
    problems = rank_problems(result, manifest, ranks_per_process=nproc)
    world = {r["size"] for r in result.ranks}
    if result.ranks and world != {len(plan.nodes) * nproc}:
        problems.append(f"world sizes {sorted(world)}, want nnodes × nproc-per-node = {len(plan.nodes) * nproc}")
    if sorted(r["rank"] for r in result.ranks) != list(range(len(result.ranks))):
        problems.append("torch ranks are not 0..N-1 exactly once")
    parsed = parse_training(result.log)
    if not parsed.get("iterations"):
        problems.append(f"the launcher log has no training step lines the parser reads: {parsed}")
    return problems


def _torch_job(workers: int = 2):
    return _generated(workers, "nemotron5-8b", "training")


def test_generated_torch_mpijob_launches() -> None:
    """The generated training MPIJob (one torchrun per worker under mpirun, c10d rendezvous at $(MASTER_ADDR)) on 2
    worker namespaces. STAND-IN: a gloo all_reduce script at the path of Megatron's pretrain_gpt.py; real torchrun
    and torch (CPU use of the PyPI wheel)."""
    manifest, plan = _torch_job()
    script = next(a for a in plan.argv if a.endswith(".py"))
    result = _launch_torch(manifest, script)
    problems = _torch_problems(result, manifest, plan)
    assert not problems, "\n".join(problems)


def test_torch_positive_control_with_rsh_args() -> None:
    """The training job with the launcher's ssh told the port and not to ask about host keys (the PyTorch image has
    no verified ssh configuration, so the stock one applies): everything else must already hold."""
    manifest, plan = _torch_job()
    script = next(a for a in plan.argv if a.endswith(".py"))
    result = _launch_torch(_rsh_args_fix(manifest), script)
    problems = _torch_problems(result, manifest, plan)
    assert not problems, "\n".join(problems)


def test_fabric_cleans_up_after_a_failure() -> None:
    """An exception inside the Fabric: its namespaces, processes (also ones left in a namespace by a child),
    mount points and scratch directory are all gone afterwards."""
    from e2e.launch.fabric import Fabric

    point = f"/run/nvcre-launch-cleanup-{os.getpid()}/deeper/file"
    with pytest.raises(RuntimeError, match="boom"):
        with Fabric() as fabric:
            node = fabric.add_node("cleanup-probe")
            src = fabric.scratch / "file"
            src.write_text("x")
            proc = fabric.start(node, ["sleep", "300"], {"PATH": os.environ["PATH"]}, [(str(src), point)],
                                fabric.scratch / "log")
            namespaces, scratch, pid = [fabric.switch, node.netns], fabric.scratch, proc.pid
            raise RuntimeError("boom")
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in listed for ns in namespaces), listed
    assert not Path(point).parents[1].exists() and not scratch.exists()
    assert not Path(f"/proc/{pid}").exists()
