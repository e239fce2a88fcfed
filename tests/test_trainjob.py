"""The TrainJob backend (`spec.orchestration.backend: trainjob`, Kubeflow Trainer v2.3): each test creates a
TrainingRuntime and a TrainJob that references it; both pass their vendored CRDs (schemas and CEL rules) for every
catalog entry × platform × architecture; the pods are the MPIJob / JobSet backends' pods under the names Trainer
patches (`node`, the `trainjob-ancestor-step: trainer` label); the simulator, the run step and cleanup handle both
objects; the Trainer RBAC is an optional kustomize component.

What this does not prove: that Kubeflow Trainer's controller builds the JobSet we expect from these objects (no
Trainer runs here); the facts it relies on are cited in docs/trainjob-backend.md.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from nvcre_hera.catalog import gpu_architectures, load_catalog, platforms
from nvcre_hera.cli import main
from nvcre_hera.cluster.base import MANAGED_BY_LABEL, WORKFLOW_LABEL
from nvcre_hera.jobs import JobContext, render_job, render_objects
from nvcre_hera.jobs.trainjob import ANCESTOR_LABEL
from nvcre_hera.local_run import run_local
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.spec_load import parse_certification, resolve_categories
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.main import main as step_main
from nvcre_hera.validate.crd import crd_errors
from nvcre_hera.validate.crd_rules import rule_errors

ROOT = Path(__file__).resolve().parent.parent
KEYS = tuple(sorted(load_catalog()))
UID = "0b5e1a3c-0000-4000-8000-000000000002"


@pytest.fixture(scope="module")
def cats() -> dict:
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": {}, "orchestration": {"backend": "trainjob"}, "categories": [
               {"domain": k.split("/")[0], "variant": k.split("/")[1]} for k in KEYS]}}
    return {c.key: c for c in resolve_categories(parse_certification(yaml.safe_dump(doc), "cert.yaml"))}


def _ctx(platform: str = "onprem", gpu: str = "h100", gang: bool = False) -> JobContext:
    if gang:
        return JobContext("wf-tj", UID, "nvcre", platform, gpu, "kai-scheduler", "gpu-cert", "kai.scheduler/queue",
                          "gpu-cert-high")
    return JobContext("wf-tj", UID, "nvcre", platform, gpu)


def _objects(cat, ctx: JobContext | None = None, backend: str = "trainjob") -> list[dict]:
    nodes = ["node-a"] if cat.entry.scope == "per-node" else ["node-a", "node-b"]
    return render_objects(cat.entry, cat.index, cat.options, {"id": "g0", "nodes": nodes}, 0, ctx or _ctx(), backend)


def _rjobs(runtime: dict) -> dict[str, dict]:
    return {rj["name"]: rj for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]}


def _pod(rjob: dict) -> dict:
    return rjob["template"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("key", KEYS)
def test_objects_pass_their_crds_everywhere(cats: dict, key: str) -> None:
    """Entry × platform × architecture (plain and with gang scheduling): a valid TrainingRuntime, then a valid
    TrainJob that references it by name in the same namespace."""
    for platform in platforms():
        for gpu in (*gpu_architectures()[:1], "gb300", "unknown"):
            for gang in (False, True):
                runtime, job = _objects(cats[key], _ctx(platform, gpu, gang))
                assert [runtime["kind"], job["kind"]] == ["TrainingRuntime", "TrainJob"]
                assert crd_errors(runtime) == [] and rule_errors(runtime) == []
                assert crd_errors(job) == [] and rule_errors(job) == []
                assert job["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                                                     "name": runtime["metadata"]["name"]}
                assert runtime["metadata"]["namespace"] == job["metadata"]["namespace"] == "nvcre"


def test_the_crd_check_can_fail(cats: dict) -> None:
    """A misspelled field in the runtime's JobSet template, and a TrainJob name that is not an RFC 1035 label, are
    caught (so the check above is not vacuous)."""
    runtime, job = _objects(cats["communication/nccl-all-reduce"])
    bad = copy.deepcopy(runtime)
    bad["spec"]["template"]["spec"]["replicatedJobs"][1]["dependOn"] = [{"name": "node", "status": "Ready"}]
    assert any("dependOn" in e for e in crd_errors(bad))
    bad_job = copy.deepcopy(job)
    bad_job["metadata"]["name"] = "9-starts-with-a-digit"
    assert any("RFC 1035" in e for e in rule_errors(bad_job))


def test_mpi_runtime_is_the_mpijob_pods_under_trainer_names(cats: dict) -> None:
    cat = cats["communication/nccl-all-reduce"]
    runtime, job = _objects(cat)
    mpijob = _objects(cat, backend="mpijob")[-1]
    specs = mpijob["spec"]["mpiReplicaSpecs"]
    rjobs = _rjobs(runtime)
    assert sorted(rjobs) == ["launcher", "node"]
    assert rjobs["launcher"]["template"]["metadata"]["labels"][ANCESTOR_LABEL] == "trainer"
    assert ANCESTOR_LABEL not in rjobs["node"]["template"]["metadata"]["labels"]
    assert rjobs["launcher"]["dependsOn"] == [{"name": "node", "status": "Ready"}]
    launcher, worker = _pod(rjobs["launcher"])["containers"][0], _pod(rjobs["node"])["containers"][0]
    assert launcher["name"] == worker["name"] == "node"
    assert launcher["command"] == specs["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert worker["command"] == specs["Worker"]["template"]["spec"]["containers"][0]["command"]
    assert _pod(rjobs["node"])["affinity"] == specs["Worker"]["template"]["spec"]["affinity"]
    mpi = runtime["spec"]["mlPolicy"]["mpi"]
    assert mpi["numProcPerNode"] == mpijob["spec"]["slotsPerWorker"] == 8 and mpi["sshAuthMountPath"] == "/mnt/mpi-ssh"
    assert runtime["spec"]["mlPolicy"]["numNodes"] == job["spec"]["trainer"]["numNodes"] == 2
    assert job["spec"]["trainer"]["numProcPerNode"] == 8
    assert runtime["spec"]["template"]["spec"]["successPolicy"] == {"operator": "All",
                                                                    "targetReplicatedJobs": ["launcher"]}


def test_torch_runtime_runs_torchrun_on_every_node(cats: dict) -> None:
    """No mpirun: Trainer's torch policy starts the workload on each of numNodes pods; MASTER_ADDR is the name
    Trainer gives rank 0 (plugins/torch/torch.go: `<trainjob>-node-0-0.<trainjob>`)."""
    runtime, job = _objects(cats["training/nemotron5-8b"])
    name = job["metadata"]["name"]
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 2, "torch": {}}
    (rjob,) = _rjobs(runtime).values()
    assert rjob["name"] == "node" and rjob["template"]["metadata"]["labels"][ANCESTOR_LABEL] == "trainer"
    (container,) = _pod(rjob)["containers"]
    assert container["command"] == ["torchrun"] and "--rdzv-endpoint" in container["args"]
    assert "readinessProbe" not in container
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["MASTER_ADDR"] == f"{name}-node-0-0.{name}"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_exec_runtime_is_the_jobset_pod(cats: dict) -> None:
    cat = cats["diagnostics/dcgm-level4"]
    runtime, job = _objects(cat)
    jobset = _objects(cat, backend="mpijob")[-1]
    (rjob,) = _rjobs(runtime).values()
    expected = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    (container,) = _pod(rjob)["containers"]
    assert container == {**expected, "name": "node"}
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 1} and job["spec"]["trainer"] == {"numNodes": 1}


@pytest.mark.parametrize("key", KEYS)
def test_gang_labels_owner_and_cleanup_labels(cats: dict, key: str) -> None:
    runtime, job = _objects(cats[key], _ctx(gang=True))
    assert job["metadata"]["labels"]["kai.scheduler/queue"] == "gpu-cert"
    for rjob in _rjobs(runtime).values():
        assert _pod(rjob)["schedulerName"] == "kai-scheduler"
        assert _pod(rjob)["priorityClassName"] == "gpu-cert-high"
    for obj in (runtime, job):  # what cleanup selects on, and the Workflow owns both
        assert obj["metadata"]["labels"][MANAGED_BY_LABEL] == "nvcre-hera"
        assert obj["metadata"]["labels"][WORKFLOW_LABEL] == "wf-tj"
        assert obj["metadata"]["ownerReferences"][0]["uid"] == UID
    assert "annotations" not in runtime["metadata"]  # the simulator runs the job object only


def test_default_backend_is_unchanged(cats: dict) -> None:
    cat = cats["communication/nccl-all-reduce"]
    assert render_job(cat.entry, 0, cat.options, {"id": "g0", "nodes": ["a", "b"]}, 0, _ctx())["kind"] == "MPIJob"
    assert [o["kind"] for o in _objects(cat, backend="mpijob")] == ["MPIJob"]


def test_simulator_refuses_a_trainjob_without_its_runtime(cats: dict) -> None:
    cluster = load_sim_cluster(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")
    runtime, job = _objects(cats["communication/nccl-all-reduce"])
    with pytest.raises(ValueError, match="names no existing TrainingRuntime"):
        cluster.create_job(job)
    cluster.create_job(runtime)
    cluster.create_job(job)
    assert cluster.list_jobs({WORKFLOW_LABEL: "wf-tj"}) == sorted([runtime["metadata"]["name"],
                                                                   job["metadata"]["name"]])
    assert cluster.jobs_alive() == 2 and cluster.jobs_created == 1


def test_cleanup_deletes_a_left_trainjob_and_its_runtime(cats: dict) -> None:
    cluster = load_sim_cluster(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")
    for obj in _objects(cats["communication/nccl-all-reduce"]):
        cluster.create_job(obj)
    outputs = Outputs("/tmp/nvcre", in_memory=True)
    code = step_main(["cleanup", "--workflow-name", "wf-tj", "--namespace", "nvcre", "--status", "Failed"],
                     cluster=cluster, outputs=outputs, log=lambda line: None)
    assert code == 0 and cluster.jobs_alive() == 0
    assert len(json.loads(outputs.files["/tmp/nvcre/cleanup"])["deleted"]) == 2


def test_certify_on_the_trainjob_backend_passes_and_leaves_nothing() -> None:
    local = run_local(str(ROOT / "examples" / "certifications" / "trainjob.yaml"),
                      str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml"))
    assert local.result == "PASSED", local.report["failedNodes"]
    assert local.report["execution"]["jobObjectsLeftBehind"] == 0
    plan = json.loads(local.workflow["spec"]["arguments"]["parameters"][0]["value"])
    assert plan["backend"] == "trainjob"


def test_unknown_backend_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load((ROOT / "examples" / "certifications" / "trainjob.yaml").read_text())
    doc["spec"]["orchestration"]["backend"] = "pytorchjob"
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "spec.orchestration.backend" in err and "pytorchjob" in err


def _rules(docs: list[dict]) -> dict[tuple[str, str], set[str]]:
    return {(g, r): set(rule["verbs"]) for d in docs if d["kind"] == "Role" for rule in d["rules"]
            for g in rule["apiGroups"] for r in rule["resources"]}


def test_trainjob_rbac_is_an_optional_component() -> None:
    """The base grants nothing on trainer.kubeflow.org; the component grants exactly what the steps call."""
    component = ROOT / "manifests" / "components" / "trainjob"
    kust = yaml.safe_load((component / "kustomization.yaml").read_text())
    assert kust["kind"] == "Component"
    docs = [d for f in kust["resources"] for d in yaml.safe_load_all((component / f).read_text()) if d]
    assert _rules(docs) == {("trainer.kubeflow.org", "trainjobs"): {"create", "get", "list", "delete"},
                            ("trainer.kubeflow.org", "trainingruntimes"): {"create", "get", "list", "delete"}}
    base = [d for p in sorted((ROOT / "manifests").glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    assert not any(g == "trainer.kubeflow.org" for g, _ in _rules(base))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (for its kustomize) is not installed")
def test_trainjob_component_builds_with_kustomize() -> None:
    overlay = ROOT / ".pytest-overlay-trainjob"  # kustomize wants a relative path, outside the base folder
    overlay.mkdir(exist_ok=True)
    try:
        (overlay / "kustomization.yaml").write_text(
            "resources: [../manifests]\ncomponents: [../manifests/components/trainjob]\n")
        out = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "KUBECONFIG": "/dev/null"})
    finally:
        shutil.rmtree(overlay)
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    roles = {d["metadata"]["name"] for d in docs if d["kind"] == "Role"}
    assert roles == {"nvcre-hera", "nvcre-hera-trainjob"}
    assert all(d["metadata"].get("namespace") == "nvcre" for d in docs if d["kind"] in ("Role", "RoleBinding"))
