"""`testScale: diagnose` end to end: the compiled recursive workflow, run by the local executor on example clusters,
names the right suspects and nothing else (issue: diagnose mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nvcre_hera.local_run import run_local

ROOT = Path(__file__).resolve().parent.parent
CERT = str(ROOT / "examples" / "certifications" / "diagnose.yaml")


def diagnose(cluster: str) -> tuple[dict, object]:
    local = run_local(CERT, str(ROOT / "examples" / "clusters" / f"{cluster}.yaml"))
    (category,) = local.report["categories"]
    return local.report, category["diagnose"]


def test_two_faulty_nodes_among_64_are_named_and_nothing_else():
    report, verdict = diagnose("two-faulty-64")
    assert sorted(s["node"] for s in verdict["suspects"]) == ["gpu-node-13", "gpu-node-50"]
    assert verdict["infrastructureFaults"] == []
    assert {n["name"] for n in report["failedNodes"]} == {"gpu-node-13", "gpu-node-50"}
    assert report["result"] == "FAILED"
    assert report["execution"]["jobObjectsLeftBehind"] == 0
    # the report's own ledger (carried down the recursion) agrees with what the cluster saw
    # (diagnose.yaml runs every test repeatCount = 3 times: one job object per repeat)
    assert report["cleanup"]["jobsCreated"] == report["execution"]["jobObjectsCreated"] \
        == verdict["jobs"] * verdict["repeatsPerTest"] and verdict["repeatsPerTest"] == 3
    assert report["cleanup"]["jobsDeleted"] == report["cleanup"]["jobsCreated"] and report["cleanup"]["leftover"] == []


def test_link_fault_is_an_infrastructure_fault_not_a_node():
    report, verdict = diagnose("link-fault")
    assert verdict["suspects"] == []
    (fault,) = verdict["infrastructureFaults"]
    flat = sorted(n for side in fault["between"] for n in (side if isinstance(side, list) else [side]))
    assert flat == ["gpu-node-03", "gpu-node-04"]
    assert report["failedNodes"] == []  # neither end is blamed: the link between them is
    assert report["result"] == "FAILED" and report["categories"][0]["failureReason"] == "InfrastructureFault"


def test_halving_never_passes_a_bad_cable_between_its_screening_chunks(tmp_path: Path):
    """NVCRE's halving starts from a failing full run; the workflow hands none over. The cable between gpu-node-03
    and gpu-node-04 joins two ⌈√8⌉-node chunks, so every screen passed and the certification PASSED in one round.
    Now the whole group runs once and fails: NVCRE's stages name nothing there, so the eight nodes are unresolved,
    never PASSED."""
    cert = yaml.safe_load(Path(CERT).read_text())
    cert["spec"]["categories"][0]["options"].update(diagnoseStrategy="halving", diagnoseScreens=[])
    path = tmp_path / "halving.yaml"
    path.write_text(yaml.safe_dump(cert))
    local = run_local(str(path), str(ROOT / "examples" / "clusters" / "link-fault.yaml"))
    (category,) = local.report["categories"]
    verdict = category["diagnose"]
    assert local.report["result"] == "FAILED" and verdict["suspects"] == []
    assert [g["nodes"] for g in verdict["unresolved"]] == [[f"gpu-node-{i:02d}" for i in range(1, 9)]]
    assert local.report["execution"]["jobObjectsLeftBehind"] == 0


def test_flapping_node_is_caught():
    report, verdict = diagnose("flapping")
    assert [s["node"] for s in verdict["suspects"]] == ["gpu-node-05"]
    assert {n["name"] for n in report["failedNodes"]} == {"gpu-node-05"}


def test_healthy_cluster_passes_without_suspects():
    report, verdict = diagnose("healthy-h100-16")
    assert verdict["suspects"] == [] and verdict["infrastructureFaults"] == []
    assert report["result"] == "PASSED"


def test_recursion_stores_indices_not_names():
    """Tests travel as index ranges; node names never enter the recursion's parameters."""
    local = run_local(CERT, str(ROOT / "examples" / "clusters" / "two-faulty-64.yaml"))
    for node in local.run.nodes.values():
        if node.template in ("plan-0", "diagnose-0"):
            stored = "".join(node.inputs.values()) + "".join(node.outputs.get("parameters", {}).get(k, "")
                                                             for k in ("state", "tests", "next"))
            assert "gpu-node" not in stored, node.name


def test_cluster_evenly_below_its_threshold_fails_as_unresolved():
    """GB300 trays without MNNVL run at scale-out speed (≈190 GB/s) against `value >= 300`: no outlier to name,
    and never a pass."""
    report, verdict = diagnose("gb300-nvl72")
    assert verdict["suspects"] == [] and [g["nodeCount"] for g in verdict["unresolved"]] == [36]
    assert len(verdict["unresolved"][0]["nodes"]) == 36
    assert report["result"] == "FAILED" and report["categories"][0]["failureReason"] == "Unresolved"
    assert report["failedNodes"] == []


def test_diagnose_jobs_run_one_large_size_briefly():
    """Diagnose jobs sweep no sizes: one size of at most 4 GiB, 20 iterations, one cycle."""
    local = run_local(CERT, str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml"))
    args = next(t for t in local.workflow["spec"]["templates"] if t["name"] == "test-0")["container"]["args"]
    assert "--store" in args  # the test pods read their items and the node index in the diagnose store
    from nvcre_hera.catalog import get_entry
    from nvcre_hera.jobs import JobContext, render_job

    options = {"testScale": "diagnose", "maxBytes": "16G", "numIterations": 100, "numCycles": 10}
    job = render_job(get_entry("communication", "nccl-all-reduce"), 0, options, {"id": "r1-t0", "nodes": ["a", "b"]},
                     0, JobContext("wf", "uid", "nvcre", "aws", "h100"))
    cmd = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[cmd.index("-b") + 1] == cmd[cmd.index("-e") + 1] == str(4 << 30)
    assert cmd[cmd.index("-n") + 1] == "20" and cmd[cmd.index("-N") + 1] == "1"


def _judged_with(verdict: str):
    """The compiled workflow with the judge's diagnose input replaced by `verdict` (the certify DAG's argument)."""
    def mutate(wf: dict) -> dict:
        certify = next(t for t in wf["spec"]["templates"] if t["name"] == "certify")
        judge = next(t for t in certify["dag"]["tasks"] if t["name"] == "judge")
        for p in judge["arguments"]["parameters"]:
            if p["name"] == "results-0":
                p["value"] = verdict
        return wf
    return mutate


@pytest.mark.parametrize("verdict", ['{"packed": "nvcre-gz1:AAAA"}', '{"packed": "nvcre-gz1:!!"}', '{"packed": 7}',
                                     '{}'])
def test_a_verdict_that_does_not_decode_is_no_pass(verdict: str):
    """The verdict travels up the recursion packed (steps/packed_json.py); on a healthy cluster, which passes when
    the verdict arrives (test_healthy_cluster_passes_without_suspects), one that does not decode is no verdict: the
    certification does not pass."""
    local = run_local(CERT, str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml"), mutate=_judged_with(verdict))
    (category,) = local.report["categories"]
    assert local.report["result"] == "FAILED" and category["failureReason"] == "WorkloadFailed"
    assert "diagnose" not in category
