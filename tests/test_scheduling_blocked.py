"""WorkloadSchedulingBlocked (NVCRE ADR-083): time a test's pods spend unschedulable is kept off timeoutPerJob and
bounded by schedulingTimeout; the simulated cluster models it with the `scheduling-blocked` fault."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.cluster.base import TEST_SPEC_ANNOTATION
from nvcre_hera.errors import InputError
from nvcre_hera.sim.cluster import SimCluster
from nvcre_hera.sim.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent


def _sim(tmp_path: Path, faults: list[dict]) -> SimCluster:
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster",
                                    "metadata": {"name": "sb"}, "spec": {"platform": "aws", "gpu": "h100",
                                    "nodes": {"count": 2}, "seed": 3, "faults": faults}}))
    return SimCluster(load_spec(path))


def _job(sim: SimCluster, node: str) -> str:
    spec = {"category": "communication/nccl-loopback", "test": "all_reduce", "nodes": [node], "gpusPerNode": 8,
            "maxBytes": 17179869184}
    return sim.create_job({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                           "metadata": {"name": f"job-{node}", "annotations": {TEST_SPEC_ANNOTATION: json.dumps(spec)}}})


def test_pending_time_does_not_count_against_the_job_timeout(tmp_path: Path) -> None:
    faults = [{"node": "gpu-node-01", "kind": "scheduling-blocked", "pendingSeconds": 900}]
    sim = _sim(tmp_path, faults)
    ran = sim.wait_for_job(_job(sim, "gpu-node-01"), ["gpu-node-01"], 600, scheduling_timeout_s=1800)
    assert ran.phase == "Succeeded" and ran.blocked_s == 900 and ran.elapsed_s > 900
    assert "Insufficient nvidia.com/gpu" in ran.blocked_message
    legacy = _sim(tmp_path, faults)  # a caller without a scheduling timeout: Pending time counts (NVCRE <= v0.6)
    old = legacy.wait_for_job(_job(legacy, "gpu-node-01"), ["gpu-node-01"], 600)
    assert old.phase == "TimedOut" and old.elapsed_s == 600


def test_pods_never_placed_end_at_the_scheduling_timeout(tmp_path: Path) -> None:
    sim = _sim(tmp_path, [{"node": "gpu-node-02", "kind": "scheduling-blocked"}])
    out = sim.wait_for_job(_job(sim, "gpu-node-02"), ["gpu-node-02"], 3600, scheduling_timeout_s=1200)
    assert (out.phase, out.elapsed_s, out.blocked_s) == ("SchedulingBlocked", 1200, 1200)
    healthy = sim.wait_for_job(_job(sim, "gpu-node-01"), ["gpu-node-01"], 3600, scheduling_timeout_s=1200)
    assert healthy.phase == "Succeeded" and healthy.blocked_s == 0


def test_pending_seconds_belongs_to_scheduling_blocked_only(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="pendingSeconds applies only to scheduling-blocked"):
        _sim(tmp_path, [{"node": "gpu-node-01", "kind": "slow-nic", "pendingSeconds": 5}])


def test_certify_reports_blocked_groups_and_blames_no_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert = tmp_path / "cert.yaml"
    cert.write_text("apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: sb}\nspec:\n"
                    "  target: {nodeSelector: {nvidia.com/gpu.present: \"true\"}}\n  categories:\n"
                    "    - {domain: communication, variant: nccl-loopback, options: {timeoutPerJob: 10m}}\n")
    out = tmp_path / "out"
    code = main(["certify", str(cert), "--cluster", str(ROOT / "examples/clusters/scheduling-blocked.yaml"),
                 "--out", str(out), "--quiet"])
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert code == 1 and report["result"] == "FAILED"
    groups = {g["nodes"][0]: g for g in report["categories"][0]["groups"]}
    # 15 minutes Pending with a 10 minute timeoutPerJob, and still it ran: the wait was off the job's clock
    assert groups["gpu-node-03"]["status"] == "Passed"
    assert groups["gpu-node-03"]["schedulingBlocked"]["seconds"] == 900
    never = groups["gpu-node-05"]
    assert never["status"] == "Failed" and [r["reason"] for r in never["reasons"]] == ["WorkloadSchedulingBlocked"]
    assert "past schedulingTimeout 1800s" in never["reasons"][0]["message"]
    assert report["failedNodes"] == []  # nobody is blamed for pods the scheduler could not place
    assert [m["name"] for m in report["failedGroupMembers"]] == ["gpu-node-05"]
    assert report["categories"][0]["failureReason"] == "WorkloadSchedulingBlocked"


def test_schedulingtimeout_is_an_option_with_a_go_duration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert = tmp_path / "cert.yaml"
    cert.write_text("apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: sb}\nspec:\n"
                    "  target: {}\n  categories:\n    - {domain: communication, variant: nccl-loopback, "
                    "options: {schedulingTimeout: 2days}}\n")
    assert main(["compile", str(cert)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schedulingTimeout" in err and "Traceback" not in err


def test_the_test_pod_deadline_leaves_room_for_the_scheduling_timeout(tmp_path: Path) -> None:
    from nvcre_hera.compile.workflow import compile_certification
    from nvcre_hera.spec_load import load_certification

    base = ("apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: sb}\nspec:\n  target: {}\n"
            "  categories:\n"
            "    - {domain: communication, variant: nccl-loopback, options: {timeoutPerJob: 10m, "
            "measurementTimeout: 5m, schedulingTimeout: %s}}\n")
    deadlines = []
    for value in ("20m", "50m"):
        cert = tmp_path / f"{value}.yaml"
        cert.write_text(base % value)
        doc = compile_certification(load_certification(str(cert)))
        deadlines.append(next(t for t in doc["spec"]["templates"] if t["name"] == "test-0")["activeDeadlineSeconds"])
    assert deadlines == [(10 + 5 + 20) * 60 + 300, (10 + 5 + 50) * 60 + 300]


# --- KubeCluster: PodScheduled=False / Unschedulable pods, against kmock (see tests/test_kube_cluster.py) ---------
kmock = pytest.importorskip("kmock")


@pytest.mark.asyncio
@pytest.mark.kmock
async def test_kube_wait_keeps_unschedulable_time_off_the_timeout(kmock) -> None:  # noqa: F811
    from tests.test_kube_cluster import MPI, NS, FakeTime, _api, _cluster, _mpijob, _node
    from kubernetes import client

    def go():
        api = _api(kmock)
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        core.create_node(_node("n1"))
        pending = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                   "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu"}
        core.create_namespaced_pod(NS, {"metadata": {"name": "job-a-launcher", "labels": {
            "training.kubeflow.org/job-name": "job-a", "training.kubeflow.org/job-role": "launcher"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"conditions": [pending]}})

        def world(n_sleeps: int) -> None:  # placed after 4 polls (20 s), done 2 polls (10 s) later
            if n_sleeps == 4:
                core.patch_namespaced_pod("job-a-launcher", NS, {"spec": {"nodeName": "n1"}})
            if n_sleeps == 6:
                custom.patch_namespaced_custom_object(*MPI, "job-a", {"status": {
                    "replicaStatuses": {"Launcher": {"succeeded": 1}},
                    "conditions": [{"type": "Succeeded", "status": "True"}]}})
        cluster = _cluster(kmock, FakeTime(world))
        cluster.create_job(_mpijob("job-a"))
        ran = cluster.wait_for_job("job-a", ["n1"], 12, scheduling_timeout_s=60)
        placed = cluster.scheduling_blocked("job-a")
        core.patch_namespaced_pod("job-a-launcher", NS, {"spec": {"nodeName": None}})
        unplaced = cluster.scheduling_blocked("job-a")
        gated = {**pending, "reason": "SchedulingGated"}  # held on purpose (e.g. DRA): no scheduler rejection
        core.patch_namespaced_pod("job-a-launcher", NS, {"status": {"conditions": [gated]}})
        return ran, placed, unplaced, cluster.scheduling_blocked("job-a")
    ran, placed, unplaced, gated = await asyncio.to_thread(go)
    assert ran.phase == "Succeeded" and ran.elapsed_s == 30 and ran.blocked_s == 20  # 12 s timeout, 30 s wall
    assert ran.blocked_message == "0/3 nodes are available: 1 Insufficient nvidia.com/gpu"
    assert placed is None and unplaced == ran.blocked_message and gated is None


def test_progress_and_card_say_a_test_waited_pending_and_which_one_never_ran(tmp_path: Path, capsys) -> None:
    """The example cluster: gpu-node-03's pods wait 900 s Pending then run; gpu-node-05's are never placed. The
    expectations come from the cluster file (its fault list), not from the run."""
    cluster = ROOT / "examples/clusters/scheduling-blocked.yaml"
    faults = {f["node"]: f for f in yaml.safe_load(cluster.read_text())["spec"]["faults"]}
    assert faults["gpu-node-03"]["pendingSeconds"] == 900 and "pendingSeconds" not in faults["gpu-node-05"]
    code = main(["certify", str(ROOT / "examples/certifications/intra-node.yaml"), "--cluster", str(cluster),
                 "--out", str(tmp_path / "out")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    tests = [line for line in lines if line.startswith("[") and "/16  g" in line]
    waited = [line for line in tests if " gpu-node-03 " in line]
    never = [line for line in tests if " gpu-node-05 " in line]
    assert waited and all("✓" in line and "pods Pending 900s first: WorkloadSchedulingBlocked" in line
                          for line in waited)
    assert never and all("✗" in line and "WorkloadSchedulingBlocked: pods unschedulable" in line for line in never)
    assert not [line for line in tests if "Pending" in line and " gpu-node-03 " not in line]
    card = (tmp_path / "out" / "report.txt").read_text()
    assert "Waited:     g2 (gpu-node-03) Pending 15m0s before it ran" in card


def test_json_progress_carries_the_pending_seconds(tmp_path: Path, capsys) -> None:
    cluster = ROOT / "examples/clusters/scheduling-blocked.yaml"
    main(["certify", str(ROOT / "examples/certifications/intra-node.yaml"), "--cluster", str(cluster),
          "--out", str(tmp_path / "out"), "--progress", "json"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    by_node = {}
    for r in records:
        if r.get("event") == "test":
            by_node.setdefault(tuple(r["nodes"]), []).append(r.get("schedulingBlockedSec"))
    assert by_node[("gpu-node-03",)] == [900.0, 900.0]
    assert all(v == [None, None] for k, v in by_node.items() if k not in (("gpu-node-03",), ("gpu-node-05",)))
