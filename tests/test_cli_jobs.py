"""`nvcre jobs CERT [--cluster SIM.yaml] [--group N]`: the job objects a run would create, one YAML document each,
built by the run step's own function after the discover step ran on the (simulated) cluster; bad input is one line
and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.validate.crd import crd_errors

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _jobs(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(["jobs", *argv])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d is not None] if code == 0 else [], err


def _worker(mpijob: dict) -> dict:
    return mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]


def test_prints_one_valid_document_per_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _jobs(capsys, str(EXAMPLES / "certification.yaml"))
    # the announcement example on the default 16-node cluster: one full-scale group per category
    assert code == 0 and [d["kind"] for d in docs] == ["MPIJob", "MPIJob"]
    for doc in docs:
        assert crd_errors(doc) == []
        assert doc["metadata"]["namespace"] == "nvcre"


def test_group_picks_one_group_of_each_category(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _jobs(capsys, str(EXAMPLES / "certifications" / "intra-node.yaml"), "--group", "2")
    assert code == 0 and len(docs) == 2  # two categories, 16 one-node groups each: the third of each
    for doc in docs:
        values = _worker(doc)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]["matchFields"][0]["values"]
        assert values == ["gpu-node-03"]


def test_uses_what_discovery_found_on_the_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _jobs(capsys, str(EXAMPLES / "certifications" / "full-scale.yaml"), "--cluster",
                          str(EXAMPLES / "clusters" / "onprem-rdma.yaml"))
    assert code == 0
    (doc,) = docs
    assert _worker(doc)["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8",
                                                                     "rdma/rdma_shared_device_a": "8"}


def test_trainjob_prints_its_runtime_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _jobs(capsys, str(EXAMPLES / "certifications" / "trainjob.yaml"), "--group", "0")
    assert code == 0
    kinds = [d["kind"] for d in docs]
    half = len(kinds) // 2  # each test: its TrainingRuntime first, then the TrainJob that references it
    assert kinds and kinds[0::2] == ["TrainingRuntime"] * half and kinds[1::2] == ["TrainJob"] * half
    for doc in docs:
        if doc["kind"] == "TrainJob":
            assert crd_errors(doc) == []


@pytest.mark.parametrize("argv, where", [
    (["examples/certification.yaml", "--group", "7"], "--group"),
    (["examples/certification.yaml", "--group", "-1"], "--group"),
    (["examples/certification.yaml", "--cluster", "examples/clusters/no-such.yaml"], "no-such.yaml"),
    (["examples/no-such-cert.yaml"], "no-such-cert.yaml"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                         argv: list[str], where: str) -> None:
    monkeypatch.chdir(ROOT)
    code = main(["jobs", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and where in err and "Traceback" not in err


class _Recording:
    """The simulated cluster, keeping a copy of every object the run step creates."""

    def __init__(self, inner) -> None:
        self.inner, self.created = inner, []

    def create_job(self, manifest: dict) -> str:
        self.created.append(manifest)
        return self.inner.create_job(manifest)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_prints_what_the_run_step_creates(capsys: pytest.CaptureFixture[str]) -> None:
    """The run step, given the preview's workflow name and uid and what discovery found, creates exactly the
    objects `nvcre jobs` printed (so the preview is no second copy of the manifest code)."""
    import json

    from nvcre_hera.compile.plan import CompileOptions, workflow_plan
    from nvcre_hera.job_preview import PREVIEW_UID
    from nvcre_hera.sim.cluster import load_sim_cluster
    from nvcre_hera.spec_load import load_certification, resolve_categories
    from nvcre_hera.steps.io import Outputs
    from nvcre_hera.steps.main import main as step_main

    cert_path = EXAMPLES / "certifications" / "reserved-pool.yaml"
    cluster_path = EXAMPLES / "clusters" / "tainted.yaml"
    code, printed, _ = _jobs(capsys, str(cert_path), "--cluster", str(cluster_path))
    assert code == 0 and printed

    cert = load_certification(cert_path)
    plan = workflow_plan(cert, resolve_categories(cert), CompileOptions(step_image="img"))
    cluster = _Recording(load_sim_cluster(cluster_path))
    out = Outputs("/tmp/nvcre", in_memory=True)
    assert step_main(["discover", "--plan", json.dumps(plan)], cluster=cluster, outputs=out, log=lambda _: None) == 0
    found = {k.rsplit("/", 1)[1]: v for k, v in out.files.items()}
    for group in json.loads(found["groups-0"]):
        assert step_main(["run", "--plan", json.dumps(plan), "--category", "0", "--group", json.dumps(group),
                          "--platform", found["platform"], "--gpu", found["gpu"], "--nic", found["nic"],
                          "--workflow-name", f"{plan['name']}-preview", "--workflow-uid", PREVIEW_UID,
                          "--namespace", "nvcre"], cluster=cluster, outputs=Outputs("/tmp/nvcre", in_memory=True),
                         log=lambda _: None) == 0
    assert cluster.created == printed
