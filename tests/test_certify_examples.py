"""`nvcre certify` on the example clusters gives the verdicts a user would expect (issue: local certify run).

Each case runs the compiled Workflow through the local executor against a SimulatedCluster from examples/clusters,
and pins the result and exactly which nodes are blamed for what.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre_hera.local_run import run_local

ROOT = Path(__file__).resolve().parent.parent
CERTS = ROOT / "examples" / "certifications"
CLUSTERS = ROOT / "examples" / "clusters"


def certify(cert: str, cluster: str):
    return run_local(str(CERTS / cert) if "/" not in cert else str(ROOT / cert), str(CLUSTERS / f"{cluster}.yaml"))


def blamed(report: dict) -> dict[str, list[str]]:
    return {n["name"]: n["reasons"] for n in report["failedNodes"]}


def category(report: dict, variant: str) -> dict:
    return next(c for c in report["categories"] if c["variant"] == variant)


@pytest.mark.parametrize("cert", ["intra-node.yaml", "full-scale.yaml", "examples/certification.yaml"])
def test_healthy_cluster_passes(cert):
    local = certify(cert, "healthy-h100-16")
    assert local.result == "PASSED", blamed(local.report)
    assert local.report["failedNodes"] == []
    assert local.run.phase == "Succeeded"
    ex = local.report["execution"]
    assert ex["jobObjectsLeftBehind"] == 0 and ex["jobObjectsCreated"] > 0
    assert local.report["cleanup"]["leftover"] == []


def test_slow_gpu_caught_by_intra_node_all_reduce():
    report = certify("intra-node.yaml", "slow-gpu").report
    assert report["result"] == "FAILED"
    assert blamed(report) == {"gpu-node-05": ["ThresholdViolation"]}
    assert category(report, "nccl-all-reduce")["status"] == "Failed"
    assert category(report, "nccl-loopback")["status"] == "Passed"  # loopback exercises the NIC, not the GPU


def test_slow_nic_caught_by_loopback_only_on_that_node():
    report = certify("intra-node.yaml", "slow-nic").report
    assert blamed(report) == {"gpu-node-07": ["ThresholdViolation"]}
    assert category(report, "nccl-loopback")["status"] == "Failed"
    assert category(report, "nccl-all-reduce")["status"] == "Passed"  # intra-node all-reduce never leaves NVLink


def test_slow_nic_caught_by_full_scale_threshold():
    report = certify("full-scale.yaml", "slow-nic").report
    cat = category(report, "nccl-all-reduce")
    assert report["result"] == "FAILED" and cat["failureReason"] == "ThresholdViolation"
    # One group of 16: NVCRE blames every node of a violating group (only diagnose narrows it down).
    assert len(blamed(report)) == 16 and all(r == ["ThresholdViolation"] for r in blamed(report).values())
    assert cat["thresholds"][0]["measuredValue"] < 300


def test_crash_is_a_workload_failure_of_that_group():
    report = certify("intra-node.yaml", "crash").report
    assert blamed(report) == {"gpu-node-03": ["WorkloadFailed"]}


def test_unschedulable_mid_run_blames_that_node_only():
    report = certify("full-scale.yaml", "unschedulable-midrun").report
    assert report["result"] == "FAILED"
    assert blamed(report) == {"gpu-node-02": ["HardwareFailureDetected"]}


def test_faults_without_thresholds_pass_with_notice_except_workload_failures():
    for cluster in ("slow-gpu", "slow-nic"):
        report = certify("no-thresholds.yaml", cluster).report
        assert report["result"] == "PASSED", cluster
        assert all(not c["thresholdsSet"] for c in report["categories"])
    local = certify("no-thresholds.yaml", "slow-nic")
    from nvcre_hera.report import render

    assert "No thresholds set" in render(local.report, "text")
    crashed = certify("no-thresholds.yaml", "crash").report
    assert crashed["result"] == "FAILED" and blamed(crashed) == {"gpu-node-03": ["WorkloadFailed"]}


def test_local_run_executes_the_compiled_workflow():
    """The executor runs the very dict `nvcre compile` prints: same templates, one pod per step and group."""
    local = certify("intra-node.yaml", "healthy-h100-16")
    templates = {t["name"] for t in local.workflow["spec"]["templates"]}
    ran = {n.template for n in local.run.nodes.values()}
    assert {"discover", "test-0", "test-1", "judge", "cleanup"} <= ran <= templates
    assert local.report["execution"]["podsStarted"] == 1 + 16 + 16 + 1 + 1


def with_spec(tmp_path: Path, cert: str, **fields) -> str:
    """An example Certification with extra `spec` fields (e.g. architecture: majority)."""
    import yaml

    doc = yaml.safe_load((CERTS / cert).read_text())
    doc["spec"].update(fields)
    path = tmp_path / cert
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_excluded_nodes_make_the_result_incomplete_under_architecture_majority(tmp_path):
    """`architecture: majority` keeps the old behaviour: the lone A100 is excluded as a minority."""
    report = run_local(with_spec(tmp_path, "full-scale.yaml", architecture="majority"),
                       str(CLUSTERS / "minority-arch.yaml")).report
    assert report["result"] == "INCOMPLETE"
    assert {e["name"]: e["reason"] for e in report["excludedNodes"]} == {
        "gpu-node-07": "InsufficientGPUs", "gpu-node-08": "MinorityArchitecture"}
    assert report["testedNodes"] == 6 and report["failedNodes"] == []
    assert "architectures" not in report


def test_lone_minority_node_is_tested_as_its_own_architecture_by_default():
    """By default the A100 node is its own architecture: tested alone (a full-scale group of one node cannot cross
    the network, so that is incomplete) and held to the only threshold given, an H100 figure, which it misses."""
    report = certify("full-scale.yaml", "minority-arch").report
    assert report["result"] == "FAILED"
    assert {e["name"]: e["reason"] for e in report["excludedNodes"]} == {"gpu-node-07": "InsufficientGPUs"}
    assert report["testedNodes"] == 7
    assert blamed(report) == {"gpu-node-08": ["ThresholdViolation"]}
    sections = {a["gpu"]: a for a in report["architectures"]}
    assert sections["h100"]["result"] == "PASSED" and sections["a100"]["result"] == "FAILED"
    a100 = next(c for c in report["categories"] if c.get("gpu") == "a100")
    assert "single node" in a100["incomplete"]


def test_fleet_relative_passes_a_healthy_cluster_with_no_number_given():
    report = certify("fleet-relative.yaml", "healthy-h100-16").report
    assert report["result"] == "PASSED", blamed(report)
    for variant in ("nccl-all-reduce", "nccl-loopback"):
        t = category(report, variant)["thresholds"][0]
        assert t["source"]["kind"] == "fleet-relative" and t["fleet"]["count"] == 16


@pytest.mark.parametrize(("cluster", "node", "variant"), [("slow-gpu", "gpu-node-05", "nccl-all-reduce"),
                                                          ("slow-nic", "gpu-node-07", "nccl-loopback")])
def test_fleet_relative_catches_the_one_slow_node(cluster, node, variant):
    report = certify("fleet-relative.yaml", cluster).report
    assert report["result"] == "FAILED"
    assert blamed(report) == {node: ["ThresholdViolation"]}
    assert "fleet median" in category(report, variant)["failedGroups"][0]["message"]


def test_fleet_relative_on_one_node_is_incomplete_not_passed():
    report = certify("fleet-relative.yaml", "one-node").report
    assert report["result"] == "INCOMPLETE" and report["failedNodes"] == []
    assert all(c["thresholds"][0]["reason"] == "FleetTooSmall" for c in report["categories"])


@pytest.mark.parametrize("cert", ["full-scale.yaml", "intra-node.yaml"])
def test_a_healthy_gb300_held_to_h100_figures_is_told_where_its_own_go(cert):
    """The H100 numbers of these examples fail every GB300 tray alike: the card says how to judge a GB300 by its own
    (the profile), and the profile example passes the same cluster."""
    report = certify(cert, "gb300-nvl72").report
    assert report["result"] == "FAILED"
    hinted = [c for c in report["categories"] if c["status"] == "Failed"]
    assert hinted and all("thresholdProfile: default or thresholds.gb300.busBandwidthGBps" in c["hint"]
                          for c in hinted)
    assert certify(f"profile-{cert}", "gb300-nvl72").report["result"] == "PASSED"


def test_no_hint_when_only_some_groups_miss_a_threshold():
    report = certify("intra-node.yaml", "slow-gpu").report
    assert report["result"] == "FAILED" and not any(c.get("hint") for c in report["categories"])
