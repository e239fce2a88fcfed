"""Overrides of image facts docs/workload-facts.md could not confirm (megatronDir, sshdPath, dcgmHost), the DCGM
command line, and the ssh port the MPIJob's two sides agree on.

Jobs are rendered from a Certification through the loader, as `nvcre` would, so an option must survive spec loading,
option merging and the job builder. Expected values are literals of this file or of the upstream sources named in
each test, never read back from the code under test. What this does not prove: that the real sshd, mpirun or dcgmi
accept these argv lists (that is the network-namespace launch test and a GPU run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.jobs import JobContext, render_job
from nvcre_hera.spec_load import parse_certification, resolve_categories

CTX = JobContext("wf", "uid", "nvcre", "onprem", "h100")


def _cert(domain: str, variant: str, **options: Any) -> dict:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
            "spec": {"target": {}, "categories": [{"domain": domain, "variant": variant, "options": options}]}}


def _job(domain: str, variant: str, **options: Any) -> dict:
    (cat,) = resolve_categories(parse_certification(yaml.safe_dump(_cert(domain, variant, **options)), "c.yaml"))
    nodes = ["a"] if cat.entry.scope == "per-node" else ["a", "b"]
    return render_job(cat.entry, 0, cat.options, {"id": "g0", "nodes": nodes}, 0, CTX)


def _mpi(job: dict) -> tuple[dict, list[str]]:
    specs = job["spec"]["mpiReplicaSpecs"]
    return (specs["Worker"]["template"]["spec"]["containers"][0],
            specs["Launcher"]["template"]["spec"]["containers"][0]["command"])


def _dcgm_container(job: dict) -> dict:
    return job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]


def test_megatron_dir_option_reaches_the_training_command():
    _, launcher = _mpi(_job("training", "nemotron5-8b", megatronDir="/models/Megatron-LM"))
    assert "/models/Megatron-LM/pretrain_gpt.py" in launcher
    assert not any(a.startswith("/opt/megatron-lm") for a in launcher)


def test_source_repo_wins_over_megatron_dir():
    repo = {"url": "https://github.com/NVIDIA/Megatron-LM.git", "ref": "core_v0.15.2"}
    _, launcher = _mpi(_job("training", "nemotron5-56b", megatronDir="/models/m", sourceRepo=repo))
    assert "/workspace/megatron-lm/pretrain_gpt.py" in launcher and "/models/m/pretrain_gpt.py" not in launcher


def test_sshd_path_option_reaches_the_workers():
    worker, _ = _mpi(_job("training", "nemotron5-8b", sshdPath="/usr/local/sbin/sshd"))
    assert worker["command"] == ["/usr/local/sbin/sshd", "-De", "-p", "22"]


def test_ssh_port_is_22_on_both_sides_and_set_on_the_mpirun_command_line():
    """mpi-operator v0.8 sets no ssh port and appends `OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10` after our env
    (mpi_job_controller.go L192-193, L1586), so the launcher's port must come from mpirun's own `--mca` (which
    overrides the environment) and the operator's ConnectionAttempts must be kept."""
    worker, launcher = _mpi(_job("communication", "nccl-all-reduce"))
    assert worker["command"] == ["/usr/sbin/sshd", "-De", "-p", "22"]
    assert worker["readinessProbe"]["tcpSocket"]["port"] == 22
    i = launcher.index("plm_rsh_args")
    assert launcher[i - 1:i + 2] == ["--mca", "plm_rsh_args", "-p 22 -o ConnectionAttempts=10 "
                                     "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"]
    assert not any(e["name"] == "OMPI_MCA_plm_rsh_args" for e in worker.get("env", []))


def test_nccl_launcher_runs_the_binary_coreweave_builds():
    """CoreWeave builds nccl-tests with `make MPI=1`, no NAME_SUFFIX (Dockerfile L279-283): no `_mpi` name."""
    _, launcher = _mpi(_job("communication", "nccl-alltoall"))
    assert launcher[0] == "/opt/hpcx/ompi/bin/mpirun"
    assert "/opt/nccl-tests/build/alltoall_perf" in launcher
    assert not any(a.endswith("_perf_mpi") for a in launcher)


def test_dcgm_host_option_connects_to_that_host_engine_and_the_default_uses_dcgmis_own():
    """Default, no `--host`: dcgmi diag falls back to an in-process host engine (DCGM v4.5.2 dcgmi/Diag.cpp
    L1475-1497); with dcgmHost it connects there (and fails if it cannot, Diag.cpp L1394-1396)."""
    c = _dcgm_container(_job("diagnostics", "dcgm-level4"))
    assert c["command"] == ["dcgmi"]
    assert c["args"][:3] == ["diag", "--run", "4"] and "--host" not in c["args"]
    c = _dcgm_container(_job("diagnostics", "dcgm-level4", dcgmHost="nvidia-dcgm.gpu-operator.svc:5555"))
    assert c["args"][:3] == ["diag", "--host", "nvidia-dcgm.gpu-operator.svc:5555"]
    assert c["args"][3:6] == ["--run", "4", "--json"]


def test_dcgm_host_option_leaves_other_categories_alone():
    _, launcher = _mpi(_job("communication", "nccl-all-reduce", dcgmHost="h:5555"))
    assert "--host" not in launcher and "h:5555" not in launcher


def test_dcgm_test_durations_are_plain_seconds():
    """`test_duration` is a double parameter (TargetedPower_wrapper.cpp L61 AddDouble); write a number, not `1200s`."""
    args = _dcgm_container(_job("diagnostics", "dcgm-level4"))["args"]
    params = [args[i + 1] for i, a in enumerate(args) if a == "-p"]
    durations = {p.split("=", 1)[0]: p.split("=", 1)[1] for p in params if ".test_duration=" in p}
    assert set(durations) == {"targeted_power.test_duration", "targeted_stress.test_duration"}
    for value in durations.values():
        assert float(value) == 1200.0


@pytest.mark.parametrize(("options", "field", "words"), [
    ({"dcgmHost": "host;reboot"}, "dcgmHost", "HOST:PORT"),
    ({"dcgmHost": "host:99999"}, "dcgmHost", "HOST:PORT"),
    ({"megatronDir": "relative/megatron"}, "megatronDir", "absolute path"),
    ({"megatronDir": "/opt/../etc"}, "megatronDir", "absolute path"),
    ({"sshdPath": "/usr/sbin/sshd -p 2222"}, "sshdPath", "absolute path"),
])
def test_bad_override_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         options: dict, field: str, words: str) -> None:
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(_cert("diagnostics", "dcgm-level4", **options)))
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert f"spec.categories[0].options.{field}" in line and words in line


def test_megatron_placeholder_without_a_default_is_a_load_time_error(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry that uses {megatronDir} must say where the image holds Megatron-LM (fail at load, not in a pod)."""
    import shutil

    from nvcre_hera import catalog
    from nvcre_hera.errors import InputError

    root = tmp_path / "catalog"
    shutil.copytree(catalog.catalog_dir(), root)
    path = root / "training" / "nemotron5-8b.yaml"
    path.write_text("\n".join(line for line in path.read_text().splitlines() if not line.startswith("megatronDir:")))
    monkeypatch.setenv("NVCRE_CATALOG_DIR", str(root))
    catalog.load_catalog.cache_clear()
    try:
        with pytest.raises(InputError, match=r"nemotron5-8b.yaml: args use \{megatronDir\}"):
            catalog.load_catalog()
    finally:
        monkeypatch.undo()
        catalog.load_catalog.cache_clear()
