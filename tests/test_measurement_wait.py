"""`measurementTimeout` (issue 9 item 3): waiting for a lagging launcher log is part of the cluster interface
(`Cluster.sleep`), and the run step uses it on both implementations. A log still cut short when the wait ends is
MeasurementNotFound, never a pass (item 2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from nvcre_hera.catalog import get_entry
from nvcre_hera.sim.cluster import SimCluster, load_sim_cluster
from nvcre_hera.sim.spec import load_spec
from nvcre_hera.steps.run import _read_measurement

from test_steps import plan_for, run

CLUSTERS = Path(__file__).resolve().parent.parent / "examples" / "clusters"
ALL_REDUCE = get_entry("communication", "nccl-all-reduce")


class LaggingLog(SimCluster):
    """Stand-in for a log stream that lags behind its job (kubelet log rotation, a slow apiserver): the simulator
    writes a job's log at once, so this wrapper hides the `# Avg bus bandwidth` footer until `lag_s` seconds of
    cluster time after the job ended. What it does not prove: how long a real launcher log lags."""

    lag_s = 25.0

    def wait_for_job(self, name, nodes, timeout_s, stall_check=None, scheduling_timeout_s=None):
        outcome = super().wait_for_job(name, nodes, timeout_s, stall_check, scheduling_timeout_s)
        self._ended = self.now()
        return outcome

    def job_log(self, name: str) -> str:
        text = super().job_log(name)
        if self.now() < self._ended + self.lag_s:
            return "".join(line for line in text.splitlines(keepends=True) if "Avg bus bandwidth" not in line)
        return text


def _lagging() -> LaggingLog:
    return LaggingLog.from_spec(load_spec(CLUSTERS / "healthy-h100-16.yaml"))


def test_sim_cluster_sleep_moves_its_clock() -> None:
    cluster = load_sim_cluster(CLUSTERS / "healthy-h100-16.yaml")
    cluster.set_clock(100.0)
    cluster.sleep(12.5)
    assert cluster.now() == 112.5


@pytest.mark.parametrize("timeout, reasons", [("5m", []), ("10s", ["MeasurementNotFound"])])
def test_run_step_waits_for_a_lagging_log_on_the_sim(timeout: str, reasons: list[str]) -> None:
    cluster = _lagging()
    plan = plan_for(f"[{{domain: communication, variant: nccl-all-reduce, options: {{measurementTimeout: {timeout}, "
                    f"thresholds: {{busBandwidthGBps: 'value >= 10.0'}}}}}}]")
    (result,) = run(plan, cluster, {"id": "g0", "nodes": ["gpu-node-01", "gpu-node-02"]}, "aws", "h100")
    assert [r["reason"] for r in result["reasons"]] == reasons
    assert result["status"] == ("ok" if not reasons else "failed")


def test_kube_cluster_sleep_uses_its_injected_sleep() -> None:
    from kubernetes import client

    from nvcre_hera.cluster.kube import KubeCluster

    slept: list[float] = []
    cluster = KubeCluster("ns", client.ApiClient(client.Configuration()), sleep=slept.append, clock=lambda: 0.0)
    cluster.sleep(7.0)
    assert slept == [7.0]


@pytest.mark.asyncio
@pytest.mark.kmock
async def test_run_step_waits_for_a_lagging_log_on_kube(kmock) -> None:
    """The launcher log served by the (emulated) API server gains its footer only after 30 s of waiting."""
    from kubernetes import client

    from nvcre_hera.cluster.kube import KubeCluster
    from test_kube_cluster import FakeTime, _api

    full = (Path(__file__).parent / "data" / "real" / "nccl" / "06-h100-gcp-a3mega-2node-allreduce-full.txt").read_text()
    cut = "".join(line for line in full.splitlines(keepends=True) if "Avg bus bandwidth" not in line)
    fake = FakeTime()
    kmock["get /api/v1/namespaces/ns/pods/job-a-launcher/log"] << kmock.headers(
        {"Content-Type": "text/plain"}) << (lambda: (full if fake.t >= 30 else cut).encode())

    def go():
        core = client.CoreV1Api(_api(kmock))
        core.create_namespaced_pod("ns", {"metadata": {"name": "job-a-launcher", "labels": {
            "training.kubeflow.org/job-name": "job-a", "training.kubeflow.org/job-role": "launcher"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}})
        cluster = KubeCluster("ns", _api(kmock), sleep=fake.sleep, clock=fake.clock)
        waited = _read_measurement(cluster, ALL_REDUCE, "job-a", 300.0)
        short = FakeTime()
        cluster_short = KubeCluster("ns", _api(kmock), sleep=short.sleep, clock=short.clock)
        fake.t = 0.0  # the log is cut again for the second reader
        gave_up = _read_measurement(cluster_short, ALL_REDUCE, "job-a", 15.0)
        return waited, list(fake.sleeps), gave_up, short.sleeps
    (text, parsed), sleeps, (_t, cut_parsed), short_sleeps = await asyncio.to_thread(go)
    assert parsed["status"] == "ok" and sum(sleeps) >= 30
    assert cut_parsed["status"] == "incomplete" and sum(short_sleeps) == pytest.approx(15.0)
