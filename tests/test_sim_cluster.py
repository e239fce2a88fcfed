"""SimCluster implements the Cluster protocol in simulated time, with the fault catalog of nvcre_hera.sim.faults."""

from __future__ import annotations

import json

import pytest

from nvcre_hera.cluster.base import TEST_SPEC_ANNOTATION, Cluster
from nvcre_hera.sim.cluster import SimCluster
from nvcre_hera.sim.spec import parse_spec

GIB = 1 << 30


def _cluster(faults=(), count=8, gpu="h100", platform="azure", sigma=0.0, **nodes) -> SimCluster:
    return SimCluster.from_spec(parse_spec({
        "apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": "t"},
        "spec": {"platform": platform, "gpu": gpu, "nodes": {"count": count, **nodes}, "seed": 7,
                 "noise": {"sigma": sigma}, "faults": list(faults)}}))


def _job(name, test, nodes, labels=None, **extra) -> dict:
    spec = {"category": f"communication/nccl-{test}", "test": test, "group": "g0", "nodes": nodes,
            "gpusPerNode": extra.pop("gpusPerNode", 8), "maxBytes": 16 * GIB, "numIterations": 20, "numCycles": 1,
            "maxSteps": 20, "enableMNNVL": False, "repeat": 0, **extra}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "labels": labels or {"app.kubernetes.io/managed-by": "nvcre-hera"},
                         "annotations": {TEST_SPEC_ANNOTATION: json.dumps(spec)}}}


def _run(cluster, name, test, nodes, timeout=3600.0, **extra):
    cluster.create_job(_job(name, test, nodes, **extra))
    outcome = cluster.wait_for_job(name, nodes, timeout)
    return outcome, cluster.job_log(name), cluster.job_values(name)


def test_is_a_cluster_and_counts_jobs():
    c = _cluster()
    as_protocol: Cluster = c  # type-checks as the protocol
    for method in ("now", "list_nodes", "create_job", "wait_for_job", "job_log", "delete_job", "list_jobs"):
        assert callable(getattr(as_protocol, method))
    c.create_job(_job("a", "all_reduce", ["gpu-node-01"], labels={"w": "x"}))
    c.create_job(_job("b", "all_reduce", ["gpu-node-02"], labels={"w": "y"}))
    assert c.jobs_created == 2 and c.jobs_alive() == 2
    assert c.list_jobs({"w": "x"}) == ["a"] and c.list_jobs({}) == ["a", "b"]
    with pytest.raises(ValueError, match="already exists"):
        c.create_job(_job("a", "all_reduce", ["gpu-node-01"]))
    assert c.delete_job("a") and not c.delete_job("a")
    assert c.jobs_deleted == 1 and c.jobs_alive() == 1 and c.list_jobs({"w": "x"}) == []
    assert c.job_log("a") == ""
    with pytest.raises(ValueError, match="annotation"):
        c.create_job({"metadata": {"name": "c"}})


def test_healthy_run_advances_the_clock_and_is_reproducible():
    c = _cluster(sigma=0.02)
    c.set_clock(100.0)
    out, log, values = _run(c, "j1", "all_reduce", ["gpu-node-01", "gpu-node-02"])
    assert out.phase == "Succeeded" and out.exit_code == 0 and out.unhealthy_nodes == {}
    assert 30 < out.elapsed_s < 300
    assert c.now() == pytest.approx(100.0 + out.elapsed_s)
    assert "# Out of bounds values : 0 OK" in log and "NCCL INFO Using network IB" in log
    assert 320 < values["busBandwidthGBps"] < 400
    again = _cluster(sigma=0.02)
    again.set_clock(100.0)
    assert _run(again, "j1", "all_reduce", ["gpu-node-01", "gpu-node-02"])[2] == values
    other = _run(again, "j2", "all_reduce", ["gpu-node-01", "gpu-node-02"])[2]
    assert other["busBandwidthGBps"] != values["busBandwidthGBps"]  # another job, another draw


def test_slow_nic_seen_by_loopback_and_multi_node_only():
    c = _cluster([{"node": "gpu-node-03", "kind": "slow-nic", "factor": 0.5}])
    assert _run(c, "intra", "all_reduce", ["gpu-node-03"])[2]["busBandwidthGBps"] > 450
    assert _run(c, "lb", "loopback", ["gpu-node-03"])[2]["busBandwidthGBps"] < 180
    assert _run(c, "lbn", "loopback_nvswitch", ["gpu-node-03"])[2]["busBandwidthGBps"] > 450
    assert _run(c, "pair", "all_reduce", ["gpu-node-02", "gpu-node-03"])[2]["busBandwidthGBps"] < 190
    assert _run(c, "clean", "all_reduce", ["gpu-node-01", "gpu-node-02"])[2]["busBandwidthGBps"] > 350


def test_slow_gpu_seen_by_intra_node_training_and_dcgm_not_loopback():
    c = _cluster([{"node": "gpu-node-03", "kind": "slow-gpu", "factor": 0.5}])
    assert _run(c, "intra", "all_reduce", ["gpu-node-03"])[2]["busBandwidthGBps"] < 240
    assert _run(c, "lb", "loopback", ["gpu-node-03"])[2]["busBandwidthGBps"] > 300
    healthy = _run(c, "t0", "training", ["gpu-node-01", "gpu-node-02"])[2]["avgTFLOPsPerGPU"]
    slow = _run(c, "t1", "training", ["gpu-node-02", "gpu-node-03"])[2]["avgTFLOPsPerGPU"]
    assert slow == pytest.approx(healthy * 0.5, rel=0.05)
    out, log, values = _run(c, "dcgm", "dcgm_diag", ["gpu-node-03"], timeout=7200)
    assert out.phase == "Succeeded" and values["dcgmPassed"] is False and '"Fail"' in log


def test_gb300_clique_speed_needs_mnnvl():
    c = _cluster(count=8, gpu="gb300", platform="oci", perClique=4)
    nodes = [f"gpu-node-0{i}" for i in range(1, 5)]
    assert _run(c, "on", "all_reduce", nodes, gpusPerNode=4, enableMNNVL=True)[2]["busBandwidthGBps"] > 850
    assert _run(c, "off", "all_reduce", nodes, gpusPerNode=4)[2]["busBandwidthGBps"] < 210
    across = ["gpu-node-04", "gpu-node-05"]
    assert _run(c, "x", "all_reduce", across, gpusPerNode=4, enableMNNVL=True)[2]["busBandwidthGBps"] < 210


def test_crash_fails_with_mpirun_abort():
    c = _cluster([{"node": "gpu-node-02", "kind": "crash"}])
    out, log, _ = _run(c, "j", "all_reduce", ["gpu-node-01", "gpu-node-02"])
    assert out.phase == "Failed" and out.exit_code == 1
    assert "mpirun detected that one or more processes exited with non-zero status" in log
    assert "Primary job  terminated normally, but 1 process returned" in log
    assert "Out of bounds values" not in log


def test_hang_times_out_and_training_hang_stalls():
    c = _cluster([{"node": "gpu-node-02", "kind": "hang"}])
    out, log, _ = _run(c, "j", "all_reduce", ["gpu-node-01", "gpu-node-02"], timeout=600)
    assert out.phase == "TimedOut" and out.elapsed_s == 600 and out.exit_code is None
    assert "Init COMPLETE" in log and "#       size" not in log
    c.create_job(_job("t", "training", ["gpu-node-01", "gpu-node-02"]))
    seen: list[float] = []

    def stalled(text: str, elapsed: float) -> bool:
        seen.append(elapsed)
        last = [line for line in text.splitlines() if " iteration " in line]
        return len(last) >= 5 and elapsed > 200  # no new step for a while
    out = c.wait_for_job("t", ["gpu-node-01", "gpu-node-02"], 3600, stalled)
    assert out.phase == "Stalled" and seen and out.elapsed_s == seen[-1]


def test_stall_check_called_for_healthy_training():
    c = _cluster()
    c.create_job(_job("t", "training", ["gpu-node-01"], category="training/nemotron5-8b"))
    calls: list[float] = []
    out = c.wait_for_job("t", ["gpu-node-01"], 3600, lambda text, t: calls.append(t) or False)
    assert out.phase == "Succeeded" and calls and calls[-1] == pytest.approx(out.elapsed_s)


def test_unschedulable_mid_run_fails_with_unhealthy_nodes():
    c = _cluster([{"node": "gpu-node-02", "kind": "unschedulable", "atSecond": 40}])
    c.set_clock(10.0)
    assert not c.list_nodes()[1]["spec"].get("unschedulable")
    out, log, _ = _run(c, "j", "all_reduce", ["gpu-node-01", "gpu-node-02"])
    assert out.phase == "Failed" and out.unhealthy_nodes == {"gpu-node-02": "Unschedulable"}
    assert out.elapsed_s == pytest.approx(30.0) and c.now() == pytest.approx(40.0)
    assert c.list_nodes()[1]["spec"]["unschedulable"] is True
    # already bad when the next job starts: seen at once
    out2, _, _ = _run(c, "k", "all_reduce", ["gpu-node-02", "gpu-node-03"])
    assert out2.phase == "Failed" and out2.elapsed_s == 0.0


def test_not_ready_from_the_start():
    c = _cluster([{"node": "gpu-node-05", "kind": "not-ready"}])
    node = c.list_nodes()[4]
    assert node["status"]["conditions"][0]["status"] == "False"
    out, _, _ = _run(c, "j", "all_reduce", ["gpu-node-04", "gpu-node-05"])
    assert out.unhealthy_nodes == {"gpu-node-05": "NotReady"}


def test_nccl_error_socket_corruption_link():
    c = _cluster([{"node": "gpu-node-01", "kind": "nccl-error"}, {"node": "gpu-node-02", "kind": "socket-fallback"},
                  {"node": "gpu-node-03", "kind": "data-corruption"},
                  {"nodes": ["gpu-node-05", "gpu-node-06"], "kind": "link", "factor": 0.5}])
    out, log, _ = _run(c, "e", "all_reduce", ["gpu-node-01", "gpu-node-04"])
    assert out.phase == "Failed" and "NCCL WARN" in log and "Test NCCL failure" in log
    assert "# Avg bus bandwidth" not in log
    out, log, values = _run(c, "s", "all_reduce", ["gpu-node-02", "gpu-node-04"])
    assert out.phase == "Succeeded" and "NET/Socket" in log and "Using network Socket" in log
    assert values["busBandwidthGBps"] < 5 and values["transport"] == "NET/Socket"
    out, log, _ = _run(c, "d", "all_reduce", ["gpu-node-03", "gpu-node-04"])
    assert out.phase == "Failed" and "FAILED" in log and "# Out of bounds values : 0 OK" not in log
    assert _run(c, "l", "all_reduce", ["gpu-node-05", "gpu-node-06"])[2]["busBandwidthGBps"] < 190
    assert _run(c, "l2", "all_reduce", ["gpu-node-05", "gpu-node-07"])[2]["busBandwidthGBps"] > 350


def test_flapping_is_intermittent_and_unknown_nodes_never_start():
    c = _cluster([{"node": "gpu-node-01", "kind": "flapping", "probability": 0.5, "factor": 0.5}])
    values = [_run(c, f"f{i}", "loopback", ["gpu-node-01"])[2]["busBandwidthGBps"] for i in range(20)]
    slow = sum(v < 200 for v in values)
    assert 3 <= slow <= 17
    out, log, _ = _run(c, "ghost", "all_reduce", ["gpu-node-01", "nope"], timeout=120)
    assert out.phase == "TimedOut" and log == ""


def test_nan_loss_and_dcgm_fail():
    c = _cluster([{"node": "gpu-node-01", "kind": "nan-loss"},
                  {"node": "gpu-node-02", "kind": "dcgm-fail", "gpus": [0, 3], "test": "memory"}])
    out, log, _ = _run(c, "t", "training", ["gpu-node-01"])
    assert out.phase == "Succeeded" and "lm loss: nan" in log
    out, log, values = _run(c, "d", "dcgm_diag", ["gpu-node-02"], timeout=7200)
    assert out.phase == "Succeeded" and 2400 < out.elapsed_s < 3000
    assert values["failures"] == [("memory", 0, "injected"), ("memory", 3, "injected")]
    assert json.loads(log)["DCGM Diagnostic"]["test_categories"][1]["tests"][0]["test_summary"]["status"] == "Fail"
