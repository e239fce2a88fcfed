"""The generated logs look like the real ones (shared/data/real/) and parse back to the modelled values."""

from __future__ import annotations

import json
import random
import re

import pytest

from nvcre_hera.parsers import parse_dcgm, parse_nccl, parse_training
from nvcre_hera.sim.logs import NcclRun, TrainingRun, dcgm_json, nccl_lines, render, training_lines
from nvcre_hera.sim.model import sizes

# The 2.17+ table header, as in shared/data/real/nccl/24-rtx3090-2node-inc-nonzero-wrong-108-FAILED.txt
HEADER = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
# A data row from shared/data/real/nccl/06-h100-gcp-a3mega-2node-allreduce-full.txt
REAL_ROW = "  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0"


def _run(**kw) -> NcclRun:
    base = dict(test="all_reduce", hosts=["gpu-node-01", "gpu-node-02"], gpus_per_node=8,
                device="NVIDIA H100 80GB HBM3", sweep=sizes(16 << 30), iters=20, cycles=2, busbw=361.37,
                alpha_us=80.0, path="net", network="IB", t_output=20.0, t_init=2.0, t_measure=60.0)
    base.update(kw)
    return NcclRun(**base)


def test_nccl_layout_matches_real_logs():
    lines, end = nccl_lines(_run(), random.Random(1))
    text = render(lines)
    assert HEADER in text
    assert "# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20" in text
    assert re.search(r"^#  Rank  0 Group  0 Pid +\d+ on gpu-node-01 device  0 \[0000:18:00\] NVIDIA H100 80GB HBM3$",
                     text, re.M)
    assert "#  Rank 15 Group  0 Pid" in text
    rows = [line for line in text.splitlines() if re.match(r"^ +\d+ +\d+ +float", line)]
    assert len(rows) == 2 * 32  # two cycles of 8 B … 16 GiB
    assert [len(x) for x in rows[-1].split()] and len(rows[-1]) == len(REAL_ROW)
    assert "# Out of bounds values : 0 OK" in text and re.search(r"# Avg bus bandwidth    : [\d.]+", text)
    assert end == pytest.approx(20.0 + 2.0 + 60.0 + 0.5)
    assert render(lines, until=21.0).count("\n") < text.count("\n")  # the log grows with time


def test_nccl_failures():
    crash = render(nccl_lines(_run(failure="crash", failing_node="gpu-node-02"), random.Random(1))[0])
    assert "Test CUDA failure" in crash and "Exit code:    1" in crash and "Avg bus bandwidth" not in crash
    error = render(nccl_lines(_run(failure="nccl-error", failing_node="gpu-node-02"), random.Random(1))[0])
    assert "NCCL WARN" in error and "gpu-node-02: Test NCCL failure" in error and "Out of bounds" not in error
    bad = render(nccl_lines(_run(failure="data-corruption", wrong=7), random.Random(1))[0])
    assert re.search(r"# Out of bounds values : [1-9]\d* FAILED", bad)
    hang_lines, end = nccl_lines(_run(failure="hang"), random.Random(1))
    assert end == float("inf") and "#       size" not in render(hang_lines)


def test_dcgm_json_layout():
    doc = json.loads(dcgm_json(8, "2330", [("memory", 3, "injected")]))
    cats = {c["category"]: c["tests"] for c in doc["DCGM Diagnostic"]["test_categories"]}
    assert list(cats) == ["Deployment", "Hardware", "Integration", "Stress"]
    memory = cats["Hardware"][0]
    assert memory["name"] == "memory" and memory["test_summary"]["status"] == "Fail"
    assert memory["results"][3]["status"] == "Fail" and "GPU 3" in memory["results"][3]["warnings"][0]["message"]
    assert {r["entity_id"] for r in memory["results"]} == set(range(8))
    assert doc["metadata"]["DCGM Version"].startswith("4.")


def test_training_log_matches_megatron():
    run = TrainingRun(hosts=["a", "b"], gpus_per_node=8, max_steps=10, step_s=1.8, tflops=440.0, params=8e9,
                      t_output=10.0, t_startup=40.0, epoch=0.0)
    text = render(training_lines(run, random.Random(2))[0])
    line = [x for x in text.splitlines() if "iteration        5/      10" in x][0]
    assert re.match(r"^ \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration +5/ +10 \| consumed samples: +\d+ \| elapsed time "
                    r"per iteration \(ms\): [\d.]+ \| throughput per GPU \(TFLOP/s/GPU\): [\d.]+ \| learning rate: "
                    r"[\d.E+-]+ \| global batch size: +\d+ \| lm loss: [\d.E+-]+ \| loss scale: 1.0 \| grad norm: "
                    r"[\d.]+ \| number of skipped iterations: +0 \| number of nan iterations: +0 \|$", line)
    nan = render(training_lines(TrainingRun(**{**run.__dict__, "failure": "nan-loss", "fail_at": 4}),
                                random.Random(2))[0])
    assert "lm loss: nan" in nan and "number of nan iterations:   7" in nan


# --- round trips through the parsers (nvcre_hera/parsers, written alongside) ---------------------------------------

def _sim():
    from nvcre_hera.sim.cluster import SimCluster
    from nvcre_hera.sim.spec import parse_spec
    from nvcre_hera.cluster.base import TEST_SPEC_ANNOTATION

    cluster = SimCluster(parse_spec({
        "apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": "t"},
        "spec": {"platform": "aws", "gpu": "h100", "nodes": {"count": 4}, "seed": 3, "noise": {"sigma": 0.02},
                 "faults": [{"node": "gpu-node-04", "kind": "socket-fallback"},
                            {"node": "gpu-node-03", "kind": "dcgm-fail", "gpus": [1], "test": "pcie"},
                            {"node": "gpu-node-02", "kind": "data-corruption"}]}}))

    def run(name, test, nodes, **extra):
        spec = {"category": "training/nemotron5-8b" if test == "training" else "c", "test": test, "nodes": nodes,
                "gpusPerNode": 8, "maxBytes": 16 << 30, "numIterations": 20, "numCycles": 3, "maxSteps": 30, **extra}
        cluster.create_job({"metadata": {"name": name, "annotations": {TEST_SPEC_ANNOTATION: json.dumps(spec)}}})
        outcome = cluster.wait_for_job(name, nodes, 7200)
        return outcome, cluster.job_log(name), cluster.job_values(name)
    return run


@pytest.mark.parametrize(("test", "nodes"), [("all_reduce", ["gpu-node-01", "gpu-node-03"]),
                                             ("all_reduce", ["gpu-node-01"]), ("all_gather", ["gpu-node-01", "gpu-node-03"]),
                                             ("alltoall", ["gpu-node-01", "gpu-node-03"]), ("loopback", ["gpu-node-01"]),
                                             ("loopback_nvswitch", ["gpu-node-03"])])
def test_nccl_parses_to_modelled_value(test, nodes):
    _, log, values = _sim()(f"j-{test}", test, nodes)
    parsed = parse_nccl(log)
    assert parsed["status"] == "ok"
    assert parsed["busBandwidthGBps"] == pytest.approx(values["busBandwidthGBps"], rel=0.004)
    assert parsed["algBandwidthGBps"] == pytest.approx(values["algBandwidthGBps"], rel=0.004)
    assert parsed["ranks"] == 8 * len(nodes)


def test_nccl_failures_parse():
    run = _sim()
    _, log, values = run("sock", "all_reduce", ["gpu-node-01", "gpu-node-04"])
    parsed = parse_nccl(log)
    assert parsed["busBandwidthGBps"] == pytest.approx(values["busBandwidthGBps"], rel=0.01)
    assert "Socket" in (parsed["transport"] or "")
    _, log, _ = run("bad", "all_reduce", ["gpu-node-01", "gpu-node-02"])
    parsed = parse_nccl(log)
    assert parsed["status"] == "failed" and parsed["wrong"] > 0


def test_dcgm_parses():
    run = _sim()
    assert parse_dcgm(run("ok", "dcgm_diag", ["gpu-node-01"])[1])["status"] == "pass"
    parsed = parse_dcgm(run("bad", "dcgm_diag", ["gpu-node-03"])[1])
    assert parsed["status"] == "fail" and parsed["failedTests"] == ["pcie"] and parsed["failedGpus"] == [1]


def test_training_parses():
    _, log, values = _sim()("t", "training", ["gpu-node-01", "gpu-node-03"])
    parsed = parse_training(log)
    assert parsed["iterations"] == 30 and not parsed["lossNaN"]
    assert parsed["avgTFLOPsPerGPU"] == pytest.approx(values["avgTFLOPsPerGPU"], rel=0.03)
    assert parsed["avgStepTimeSec"] == pytest.approx(values["avgStepTimeSec"], rel=0.03)
