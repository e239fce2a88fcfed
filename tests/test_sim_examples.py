"""Every example cluster loads, and each shows the fault it is named after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.cluster.base import TEST_SPEC_ANNOTATION
from nvcre_hera.sim.cluster import load_sim_cluster

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "clusters"


def _run(cluster, name, test, nodes, gpus=8, **extra):
    spec = {"category": "c", "test": test, "nodes": nodes, "gpusPerNode": gpus, "maxBytes": 16 << 30,
            "numIterations": 20, "numCycles": 1}
    spec.update(extra)
    cluster.create_job({"metadata": {"name": name, "annotations": {TEST_SPEC_ANNOTATION: json.dumps(spec)}}})
    return cluster.wait_for_job(name, nodes, 3600), cluster.job_values(name)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_loads(path):
    cluster = load_sim_cluster(path)
    assert len(cluster.list_nodes()) == cluster.body.nodes.count


def test_healthy_default_is_healthy():
    cluster = load_sim_cluster(EXAMPLES / "healthy-h100-16.yaml")
    names = [n["metadata"]["name"] for n in cluster.list_nodes()]
    outcome, values = _run(cluster, "all", "all_reduce", names)
    assert outcome.phase == "Succeeded" and 320 < values["busBandwidthGBps"] < 380


def test_unschedulable_midrun_hits_the_first_window():
    cluster = load_sim_cluster(EXAMPLES / "unschedulable-midrun.yaml")
    cluster.set_clock(5.0)  # discovery ran first
    outcome, _ = _run(cluster, "first", "all_reduce", ["gpu-node-01", "gpu-node-02"], numIterations=100, numCycles=10)
    assert outcome.phase == "Failed" and outcome.unhealthy_nodes == {"gpu-node-02": "Unschedulable"}


def test_gb300_cliques():
    cluster = load_sim_cluster(EXAMPLES / "gb300-nvl72.yaml")
    trays = [n["metadata"]["name"] for n in cluster.list_nodes()]
    _, inside = _run(cluster, "c0", "all_reduce", trays[:18], gpus=4, enableMNNVL=True)
    assert 900 < inside["busBandwidthGBps"] < 950


def test_two_faulty_64_culprits():
    cluster = load_sim_cluster(EXAMPLES / "two-faulty-64.yaml")
    _, bad = _run(cluster, "bad", "all_reduce", ["gpu-node-13", "gpu-node-14"])
    _, good = _run(cluster, "good", "all_reduce", ["gpu-node-15", "gpu-node-16"])
    assert bad["busBandwidthGBps"] < 0.6 * good["busBandwidthGBps"]
