"""WorkloadRun (nvcre.nvidia.com/v1alpha1): NVIDIA's own examples load unchanged and nothing in them is dropped;
`validate`, `compile` and `certify` take a WorkloadRun; it compiles to the Certification shape with one category
whose entry travels in the plan; the job objects carry the user's binary, mpirun path, mpiArgs and env as argv/env
data (braces never filled); bad input is one line naming the field, exit 2. Compiled golden files:
tests/golden/compile/workloadrun-*.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.jobs import JobContext, render_objects
from nvcre_hera.local_run import run_local
from nvcre_hera.spec_load import load_certification, resolve_categories
from nvcre_hera.validate.crd import crd_errors
from nvcre_hera.workloadrun.model import WorkloadRun

ROOT = Path(__file__).resolve().parent.parent
NVIDIA = sorted((ROOT / "examples" / "workloadruns").glob("*.yaml"))
OURS = sorted((ROOT / "tests" / "data" / "workloadrun").glob("*.yaml"))
HEALTHY = str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")


def test_nvidia_examples_are_vendored() -> None:
    assert {p.name for p in NVIDIA} == {"nccl-all-reduce.yaml", "my-workload.yaml", "gang-scheduled-workload.yaml"}
    sources = (ROOT / "examples" / "workloadruns" / "SOURCES.md").read_text()
    assert all(f"`{p.name}`" in sources for p in NVIDIA)


@pytest.mark.parametrize("path", NVIDIA + OURS, ids=lambda p: p.name)
def test_loads_without_dropping_a_field(path: Path) -> None:
    """The model reproduces the file exactly: every key the user wrote is a field we read."""
    data = yaml.safe_load(path.read_text())
    run = WorkloadRun.model_validate(data)
    assert run.model_dump(by_alias=True, exclude_unset=True, mode="json") == data


@pytest.mark.parametrize("path", NVIDIA + OURS, ids=lambda p: p.name)
def test_validate_accepts(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("path", NVIDIA + OURS, ids=lambda p: p.name)
def test_certify_on_the_healthy_cluster(path: Path) -> None:
    """Same discover → run → judge shape as a Certification, one category, PASSED, nothing left behind."""
    local = run_local(str(path), HEALTHY)
    assert local.result == "PASSED", local.report["failedNodes"]
    tasks = [t["name"] for t in next(t for t in local.workflow["spec"]["templates"]
                                     if t["name"] == "certify")["dag"]["tasks"]]
    assert tasks == ["discover", f"c0-{yaml.safe_load(path.read_text())['metadata']['name']}", "judge"]
    (category,) = local.report["categories"]
    assert category["domain"] == "workloadrun"
    assert local.report["execution"]["jobObjectsLeftBehind"] == 0


def test_numnodes_is_the_group_size() -> None:
    """numNodes: 4 on 16 eligible nodes produces four 4-node jobs (NVCRE's WorkloadRun guide)."""
    local = run_local(str(ROOT / "examples" / "workloadruns" / "my-workload.yaml"), HEALTHY)
    (category,) = local.report["categories"]
    assert category["jobs"] == 4 and category["nodesPerJob"] == 4


def test_measurement_picks_the_parser_and_metrics() -> None:
    bw = resolve_categories(load_certification(ROOT / "examples" / "workloadruns" / "nccl-all-reduce.yaml"))[0]
    assert (bw.entry.parser, bw.entry.test, bw.entry.metrics) == ("nccl", "all_reduce",
                                                                  ["busBandwidthGBps", "algBandwidthGBps"])
    plain = resolve_categories(load_certification(ROOT / "examples" / "workloadruns" / "my-workload.yaml"))[0]
    assert (plain.entry.parser, plain.entry.metrics) == ("exit", [])
    torch = resolve_categories(load_certification(ROOT / "tests" / "data" / "workloadrun" / "torch-trainjob.yaml"))[0]
    assert torch.entry.parser == "training" and torch.options["thresholds"] == {"avgTFLOPsPerGPU": "value >= 100"}


def _objects(path: Path, backend: str | None, gpu: str = "h100", platform: str = "aws") -> list[dict]:
    cert = load_certification(path)
    (cat,) = resolve_categories(cert)
    ctx = JobContext("wf", "uid", "nvcre", platform, gpu, "kai-scheduler", "high-priority", "kai.scheduler/queue")
    return render_objects(cat.entry, 0, cat.options, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx, backend)


@pytest.mark.parametrize("backend", ["mpijob", "trainjob"])
def test_mpi_workload_reaches_the_launcher_as_argv(backend: str) -> None:
    """mpirunPath starts the launcher command, the platform's mpirun args come before the user's mpiArgs, the
    binary and its args follow; the objects pass their CRDs."""
    path = ROOT / "examples" / "workloadruns" / "nccl-all-reduce.yaml"
    objects = _objects(path, backend)
    for obj in objects:
        assert crd_errors(obj) == []
    if backend == "mpijob":
        launcher = objects[-1]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    else:
        rjobs = {r["name"]: r for r in objects[0]["spec"]["template"]["spec"]["replicatedJobs"]}
        launcher = rjobs["launcher"]["template"]["spec"]["template"]["spec"]["containers"][0]
    cmd = launcher["command"]
    assert cmd[0] == "/usr/local/mpi/bin/mpirun"
    assert cmd[-9:] == ["/usr/local/bin/all_reduce_perf_mpi", "-b", "8", "-e", "32G", "-f", "2", "-n", "100"]
    assert launcher["image"] == "nvcr.io/nvidia/pytorch:26.01-py3"


def test_user_mpi_args_follow_the_platforms() -> None:
    data = yaml.safe_load((ROOT / "examples" / "workloadruns" / "my-workload.yaml").read_text())
    data["spec"]["framework"]["mpi"]["mpiArgs"] = ["-x", "NCCL_ALGO=Ring"]
    data["spec"]["env"] = [{"name": "NCCL_DEBUG", "value": "TRACE"}, {"name": "X", "value": "{numNodes}"}]
    from nvcre_hera.spec_load import parse_certification

    (cat,) = resolve_categories(parse_certification(yaml.safe_dump(data), "wr.yaml"))
    ctx = JobContext("wf", "uid", "nvcre", "aws", "gb300")
    (job,) = render_objects(cat.entry, 0, cat.options, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx)
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    cmd = launcher["command"]
    platform_args = ["--mca", "pml", "^ucx"]
    assert cmd.index("^ucx") < cmd.index("NCCL_ALGO=Ring")
    assert all(a in cmd for a in platform_args)
    env = {e["name"]: e["value"] for e in launcher["env"]}
    assert env["NCCL_DEBUG"] == "TRACE"  # the user's value wins over the catalog default
    assert env["X"] == "{numNodes}"  # a user's braces are data, never a placeholder
    assert env["NCCL_MNNVL_ENABLE"] == "1"  # enableMNNVL unset: on for GB300 (workloadrun_types.go)


def _load_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Any) -> str:
    path = tmp_path / "wr.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["compile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def _base() -> dict:
    return yaml.safe_load((ROOT / "examples" / "workloadruns" / "my-workload.yaml").read_text())


def _with(path: str, value: Any) -> dict:
    data = _base()
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(keys[-1])
    else:
        node[keys[-1]] = value
    return data


BAD = [
    (_with("spec.framework.exec", {"command": ["x"]}), "spec.framework", "exactly one of torch, mpi or exec"),
    (_with("spec.framework", {"torch": {"script": "a.py", "module": "m"}}), "spec.framework.torch",
     "mutually exclusive"),
    (_with("spec.framework", {"torch": {}}), "spec.framework.torch", "either script or module"),
    (_with("spec.framework.mpi.mpirunPath", None), "spec.framework.mpi.mpirunPath", "required"),
    (_with("spec.framework.mpi.binaryy", "x"), "spec.framework.mpi.binaryy", "unknown field"),
    (_with("spec.numNodes", 0), "spec.numNodes", "greater than or equal to 1"),
    (_with("spec.numNodes", "4"), "spec.numNodes", "integer"),
    (_with("spec.image", "bad image"), "spec.image", "not an image reference"),
    (_with("spec.volumes", [{"name": "v", "emptyDir": {}}]), "spec.volumes", "not supported"),
    (_with("spec.overrides", [{"when": {}}]), "spec.overrides", "not supported"),
    (_with("spec.env", [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]), "spec.env[0].valueFrom",
     "not supported"),
    (_with("spec.bandwidthMeasurement", {"logProfileRef": "my-profile"}), "spec.bandwidthMeasurement.logProfileRef",
     "my-profile"),
    (_with("spec.bandwidthMeasurement", {"logProfileRef": "nccl-bandwidth", "testType": "broadcast"}),
     "spec.bandwidthMeasurement.testType", "broadcast"),
    (_with("spec.thresholds", {"busBandwidthGBps": "value >= 1"}), "spec.thresholds.busBandwidthGBps",
     "does not produce metric"),
    (_with("spec.orchestration", {"testScale": "diagnose"}), "spec.orchestration.testScale", "diagnose"),
    (_with("spec.orchestration", {"timeoutPerJob": "soon"}), "spec.orchestration.timeoutPerJob", "soon"),
    (_with("spec.framework.mpi.mpiImplementation", "MPICH"), "spec.framework.mpi.mpiImplementation", "MPICH"),
    (_with("spec.nicResourceName", "kubernetes.io/ib"), "spec.nicResourceName", "reserved"),
    (_with("apiVersion", "cre.nvidia.com/v1alpha1"), "apiVersion", "cre.nvidia.com"),
    (_with("kind", "WorkloadRunn"), "kind", "neither Certification nor WorkloadRun"),
]


@pytest.mark.parametrize(("data", "where", "words"), BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_input_is_one_line_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict,
                                                where: str, words: str) -> None:
    err = _load_error(tmp_path, capsys, data)
    assert f"wr.yaml: {where}:" in err and words in err, err


def test_compiled_plan_carries_the_entry() -> None:
    from nvcre_hera.compile.workflow import compile_certification

    doc = compile_certification(load_certification(ROOT / "examples" / "workloadruns" / "nccl-all-reduce.yaml"))
    plan = json.loads(doc["spec"]["arguments"]["parameters"][0]["value"])
    (cat,) = plan["categories"]
    assert cat["entry"]["command"] == ["/usr/local/bin/all_reduce_perf_mpi"]
    assert cat["entry"]["mpirun"] == "/usr/local/mpi/bin/mpirun"
    assert plan["gangScheduler"] == {"schedulerName": "kai-scheduler", "queue": "high-priority",
                                     "queueLabelKey": "kai.scheduler/queue"}
    assert plan["target"] == {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
