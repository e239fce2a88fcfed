"""Diagnose keeps each failed test's reason through the planner to the report (issue 9 item 12): a node that
corrupts data is DataCorruption and a node that falls back to sockets is TransportMismatch, not WorkloadFailed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nvcre_hera.diagnose import plan
from nvcre_hera.diagnose.oracle import Oracle
from nvcre_hera.local_run import run_local
from nvcre_hera.steps.plan_step import compact_results
from nvcre_hera.steps.run import diagnose_result

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"strategy": "adaptive", "nodeCount": 32, "cliques": None, "maxConcurrent": 8, "minGroupSize": 2,
          "baselineGBps": None, "threshold": None, "seed": 0}


def _drive(oracle: Oracle, reasons_of_a_crash: list[str], config: dict) -> dict:
    rng = random.Random(0)
    out = plan(None, [], config)
    for _ in range(200):
        if out["done"]:
            return out
        results = []
        for t in out["tests"]:
            r = {"id": t["id"], **oracle.measure(t["nodes"], rng)}
            if r["status"] != "ok":
                r["reasons"] = reasons_of_a_crash
            results.append(r)
        out = plan(out["state"], results, config)
    raise AssertionError("the planner did not finish")


@pytest.mark.parametrize(("said", "reason"), [
    (["DataCorruption", "WorkloadFailed"], "DataCorruption"),
    (["TransportMismatch"], "TransportMismatch"),
    (["HardwareFailureDetected", "WorkloadFailed"], "HardwareFailureDetected"),
    (["WorkloadFailed"], "WorkloadFailed"),
    ([], "WorkloadFailed"),
])
@pytest.mark.parametrize("strategy", ["adaptive", "halving"])
def test_the_planner_keeps_the_failed_tests_reason(said: list[str], reason: str, strategy: str) -> None:
    oracle = Oracle(n=32, sigma=0.02, dip=0.0, crashes={12})
    out = _drive(oracle, said, {**CONFIG, "strategy": strategy})
    assert [(s["node"], s["reason"]) for s in out["suspects"]] == [(12, reason)]


def test_the_run_step_and_the_plan_step_pass_the_reason_names_on() -> None:
    runs = [{"status": "failed", "metrics": {}, "jobDeleted": True, "jobName": "j0",
             "reasons": [{"node": None, "reason": "DataCorruption", "message": "all_reduce: 12 wrong values"}]},
            {"status": "ok", "metrics": {"busBandwidthGBps": 390.0}, "jobDeleted": True, "jobName": "j1",
             "reasons": []}]
    (folded,) = diagnose_result("r1-t0", runs, {})
    assert folded["status"] == "failed" and folded["reasons"] == ["DataCorruption"]
    assert compact_results([folded]) == [{"id": "r1-t0", "busBandwidthGBps": None, "status": "failed",
                                          "reasons": ["DataCorruption"]}]


def test_certify_diagnose_names_each_node_with_its_own_reason() -> None:
    report = run_local(str(ROOT / "examples" / "certifications" / "diagnose.yaml"),
                       str(ROOT / "examples" / "clusters" / "corrupt-and-socket.yaml")).report
    assert report is not None and report["result"] == "FAILED"
    assert [(n["name"], n["reasons"]) for n in report["failedNodes"]] == \
        [("gpu-node-05", ["DataCorruption"]), ("gpu-node-12", ["TransportMismatch"])]
