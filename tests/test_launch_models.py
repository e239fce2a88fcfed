"""The launch test's models of mpi-operator v0.8 and the kubelet (e2e/launch/), and its checks, without root:
the hostfile and env as the operator's source writes them (strings from mpi_job_controller.go, cited in
e2e/launch/mpi_operator.py), `$(VAR)` expansion as Kubernetes documents it, and checks that fail on the failure
modes they exist for (every rank on the launcher, as Open MPI 5 does with these variables; a missing export)."""

from __future__ import annotations

import yaml

from e2e.launch import kubelet, mpi_operator
from e2e.launch.checks import rank_problems
from e2e.launch.images import image_ssh
from e2e.launch.mpijob import LaunchResult
from nvcre_hera.jobs import JobContext, render_job
from nvcre_hera.spec_load import parse_certification, resolve_categories

CTX = JobContext("wf-launch", "0b5e1a3c-0000-4000-8000-0000000000aa", "nvcre", "onprem", "h100")


def _manifest(workers: int = 2) -> dict:
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "m"},
           "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}}
    cat = resolve_categories(parse_certification(yaml.safe_dump(doc), "m.yaml"))[0]
    return render_job(cat.entry, cat.index, cat.options, {"id": "g0", "nodes": [f"n{i}" for i in range(workers)]},
                      0, CTX)


def test_hostfile_is_the_operators_format() -> None:
    m = _manifest(2)
    m["spec"]["slotsPerWorker"] = 3
    job = m["metadata"]["name"]
    assert mpi_operator.hostfile(m) == (f"{job}-worker-0.{job}.nvcre.svc slots=3\n"
                                        f"{job}-worker-1.{job}.nvcre.svc slots=3\n")


def test_launcher_gets_the_operators_env_after_its_own_and_workers_only_their_role() -> None:
    m = _manifest(1)
    launcher, worker = mpi_operator.pods(m)
    own = [(e["name"], e["value"]) for e in m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
           ["containers"][0]["env"]]
    assert launcher.env[:len(own)] == own
    assert launcher.env[len(own):] == [
        ("K_MPI_JOB_ROLE", "launcher"), ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"), ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ("OMPI_MCA_orte_set_default_slots", str(m["spec"]["slotsPerWorker"])),
        ("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    assert worker.env[-1] == ("K_MPI_JOB_ROLE", "worker")
    assert not any(name.startswith("OMPI_MCA") for name, _ in worker.env)


def test_worker_without_command_gets_plain_sshd() -> None:
    m = _manifest(1)
    del m["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"]
    assert mpi_operator.pods(m)[1].command == ["/usr/sbin/sshd", "-De"]


def test_kubelet_expansion() -> None:
    env = {"MASTER_ADDR": "w0.job.ns.svc"}
    assert kubelet.expand("$(MASTER_ADDR):29500", env) == "w0.job.ns.svc:29500"
    assert kubelet.expand("$$(MASTER_ADDR)", env) == "$(MASTER_ADDR)"
    assert kubelet.expand("$(UNSET)", env) == "$(UNSET)"


def test_image_ssh_models() -> None:
    assert "StrictHostKeyChecking no" in image_ssh("ghcr.io/coreweave/nccl-tests:12.9.1-x").ssh_config
    assert image_ssh("nvcr.io/nvidia/pytorch:25.08-py3").ssh_config == ()


def _result(hosts: list[str], env: dict[str, str], rc: int = 0) -> LaunchResult:
    hostfile = "j-worker-0.j.ns.svc slots=2\nj-worker-1.j.ns.svc slots=2\n"
    return LaunchResult(rc, "", [{"rank": i, "size": len(hosts), "host": h, "pid": 1, "env": env}
                                 for i, h in enumerate(hosts)],
                        hostfile, ["mpirun", "-np", "4", "x"], {}, image_ssh("x"))


def _job_env(env: dict[str, str]) -> dict:
    return {"spec": {"mpiReplicaSpecs": {"Launcher": {"template": {"spec": {"containers": [
        {"env": [{"name": k, "value": v} for k, v in env.items()]}]}}}}}}


def test_checks_pass_a_good_launch_and_fail_each_bad_one() -> None:
    env = {"NCCL_DEBUG": "INFO"}
    good = ["j-worker-0"] * 2 + ["j-worker-1"] * 2
    assert rank_problems(_result(good, env), _job_env(env)) == []
    on_launcher = rank_problems(_result(["j-launcher"] * 4, env), _job_env(env))
    assert any("j-worker-0: 0 ranks" in p for p in on_launcher)
    assert any("j-launcher, which the hostfile does not name" in p for p in on_launcher)
    assert any(p.startswith("env NCCL_DEBUG=") for p in rank_problems(_result(good, {}), _job_env(env)))
    assert any(p.startswith("launcher exit code 1") for p in rank_problems(_result(good, env, rc=1), _job_env(env)))
    assert any("3 ranks ran" in p for p in rank_problems(_result(good[:3], env), _job_env(env)))
