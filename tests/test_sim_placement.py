"""The simulator's stand-in for the scheduler and device plugins (nvcre_hera/sim/placement.py), and discovery's
taint exclusions, end to end through `nvcre certify`.

What the stand-in replaces: kube-scheduler's TaintToleration and NodeResourcesFit filters, and a device plugin
mounting the RDMA devices of the resource a pod requests. Not proven: the real scheduler, or the real plugins.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from nvcre_hera.cli import main
from nvcre_hera.jobs import JobContext, backend_for, job_objects, plan_job
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.spec_load import parse_certification, resolve_categories

ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = ROOT / "examples" / "clusters"
CERTS = ROOT / "examples" / "certifications"


def _cat(variant: str = "nccl-all-reduce", backend: str | None = None):
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": {}, "categories": [{"domain": "communication", "variant": variant}],
                    **({"orchestration": {"backend": backend}} if backend else {})}}
    return resolve_categories(parse_certification(yaml.safe_dump(doc), "cert.yaml"))[0]


def _run(cluster_file: str, ctx: JobContext, nodes: list[str], backend: str | None = None) -> tuple[object, dict]:
    cluster = load_sim_cluster(CLUSTERS / cluster_file)
    cat = _cat(backend=backend)
    job = plan_job(cat.entry, 0, cat.options, {"id": "g0", "nodes": nodes}, 0, ctx)
    objects = job_objects(backend_for(cat.entry, backend), job)
    for obj in objects[:-1]:
        cluster.create_job(obj)
    name = cluster.create_job(objects[-1])
    outcome = cluster.wait_for_job(name, nodes, 3600)
    return outcome, cluster.job_values(name)


def test_a_job_that_requests_no_rdma_runs_over_sockets() -> None:
    ctx = JobContext("wf", "u", "nvcre", "onprem", "h100", nic={"resource": None, "allocatable": 0})
    outcome, values = _run("onprem-rdma.yaml", ctx, ["gpu-node-01", "gpu-node-02"])
    assert outcome.phase == "Succeeded" and values["transport"] == "NET/Socket"


def test_a_job_that_requests_the_nodes_rdma_resource_runs_over_ib() -> None:
    ctx = JobContext("wf", "u", "nvcre", "onprem", "h100",
                     nic={"resource": "rdma/rdma_shared_device_a", "allocatable": 63})
    for backend in (None, "trainjob"):  # a TrainJob's pods live in its TrainingRuntime
        outcome, values = _run("onprem-rdma.yaml", ctx, ["gpu-node-01", "gpu-node-02"], backend)
        assert outcome.phase == "Succeeded" and values["transport"] == "NET/IB", backend


def test_a_resource_the_nodes_lack_never_schedules() -> None:
    ctx = JobContext("wf", "u", "nvcre", "onprem", "h100", nic={"resource": "rdma/ib", "allocatable": 8})
    outcome, _ = _run("onprem-rdma.yaml", ctx, ["gpu-node-01", "gpu-node-02"])
    assert outcome.phase == "TimedOut"


def test_an_untolerated_taint_never_schedules_and_a_selected_one_does() -> None:
    nodes = ["gpu-node-15", "gpu-node-16"]
    nic = {"resource": "vpc.amazonaws.com/efa", "allocatable": 32}
    plain = JobContext("wf", "u", "nvcre", "aws", "h100", nic=nic, target={})
    assert _run("tainted.yaml", plain, nodes)[0].phase == "TimedOut"
    selected = JobContext("wf", "u", "nvcre", "aws", "h100", nic=nic,
                          target={"taintSelectors": [{"key": "reserved", "value": "inference"}]})
    assert _run("tainted.yaml", selected, nodes)[0].phase == "Succeeded"


def test_tainted_nodes_outside_the_selection_are_excluded_not_run(tmp_path: Path) -> None:
    code = main(["certify", str(CERTS / "full-scale.yaml"), "--cluster", str(CLUSTERS / "tainted.yaml"),
                 "--out", str(tmp_path), "--quiet"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(e["name"], e["reason"]) for e in report["excludedNodes"]] == [
        ("gpu-node-15", "UntoleratedTaint"), ("gpu-node-16", "UntoleratedTaint")]
    assert (code, report["result"], report["testedNodes"]) == (1, "INCOMPLETE", 14)


def test_the_reserved_pool_is_certified_through_its_taint(tmp_path: Path) -> None:
    code = main(["certify", str(CERTS / "reserved-pool.yaml"), "--cluster", str(CLUSTERS / "tainted.yaml"),
                 "--out", str(tmp_path), "--quiet"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert (code, report["result"], report["testedNodes"]) == (0, "PASSED", 2)


def test_unpinned_blames_the_group_not_a_node(tmp_path: Path) -> None:
    """slow-nic.yaml slows gpu-node-07; pinned, the full-scale job blames all 16 nodes by name. Unpinned, no node
    was pinned, so none is named: the category fails on its group."""
    code = main(["certify", str(CERTS / "unpinned.yaml"), "--cluster", str(CLUSTERS / "slow-nic.yaml"),
                 "--out", str(tmp_path), "--quiet"])
    report = json.loads((tmp_path / "report.json").read_text())
    (cat,) = report["categories"]
    assert (code, report["result"], cat["status"]) == (1, "FAILED", "Failed")
    assert report["failedNodes"] == []
    (group,) = cat["failedGroups"]
    assert (group["nodeCount"], group["nodes"], group["unpinned"]) == (16, [], True)
    assert "chosen by the scheduler" in (tmp_path / "report.txt").read_text()


def test_bad_nics_and_taints_are_one_line_errors(tmp_path: Path, capsys) -> None:
    base = yaml.safe_load((CLUSTERS / "tainted.yaml").read_text())
    cases = [
        ({"taints": [{"key": "a", "effect": "NoSchedule", "nodes": ["gpu-node-99"]}]}, "spec.taints[0].nodes"),
        ({"taints": [{"key": "a", "effect": "Sometimes"}]}, "spec.taints[0].effect"),
        ({"nics": {"resource": "not a resource"}}, "spec.nics.resource"),
    ]
    for i, (patch, where) in enumerate(cases):
        path = tmp_path / f"c{i}.yaml"
        path.write_text(yaml.safe_dump({**base, "spec": {**base["spec"], **patch}}))
        code = main(["certify", str(CERTS / "full-scale.yaml"), "--cluster", str(path), "--out", str(tmp_path)])
        err = capsys.readouterr().err
        assert code == 2 and where in err and len(err.strip().splitlines()) == 1, (where, err)


def test_unpinned_leaves_per_node_and_intra_node_tests_pinned(tmp_path: Path) -> None:
    """Unpinned is about one job of N nodes. On slow-nic.yaml (gpu-node-07's NICs at 60 %): the intra-node loopback
    still names gpu-node-07; the full-scale all-reduce of the same run fails on its group and names no node."""
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "mixed"},
           "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                    "orchestration": {"placement": "Unpinned"},
                    "categories": [
                        {"domain": "communication", "variant": "nccl-loopback",
                         "options": {"testScale": "intra-node", "thresholds": {"busBandwidthGBps": "value >= 300"}}},
                        {"domain": "communication", "variant": "nccl-all-reduce",
                         "options": {"thresholds": {"busBandwidthGBps": "value >= 300"}}}]}}
    cert = tmp_path / "cert.yaml"
    cert.write_text(yaml.safe_dump(doc))
    code = main(["certify", str(cert), "--cluster", str(CLUSTERS / "slow-nic.yaml"), "--out", str(tmp_path / "o"),
                 "--quiet"])
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    loopback, full = report["categories"]
    assert code == 1 and [n["name"] for n in report["failedNodes"]] == ["gpu-node-07"]
    assert [g["nodes"] for g in loopback["failedGroups"]] == [["gpu-node-07"]]
    assert [(g["nodes"], g.get("unpinned")) for g in full["failedGroups"]] == [([], True)]
