"""The judge: blame per NVCRE (§1.4), fail-closed thresholds, repeats, the verdict and the report contract."""

from __future__ import annotations

import json
import math

import pytest

from nvcre_hera.judge import NO_RESULTS_MESSAGE, judge

SUMMARY = {"platform": "aws", "gpu": "h100", "gpuProduct": "NVIDIA-H100-80GB-HBM3", "totalNodes": 4,
           "selectedNodes": 4, "excludedNodes": []}


def run(group: str, nodes: list[str], status: str = "ok", reasons: list | None = None, repeat: int = 0,
        job: str | None = None, deleted: bool = True, **metrics: float) -> dict:
    return {"category": "communication/nccl-all-reduce", "group": group, "nodes": nodes, "status": status,
            "metrics": metrics, "samples": [], "reasons": reasons or [], "runtimeSec": 10.0,
            "jobName": job or f"job-{group}-{repeat}", "jobDeleted": deleted, "logTail": "", "repeat": repeat}


def cat(results: list | None, thresholds: dict | None = None, variant: str = "nccl-all-reduce") -> dict:
    return {"domain": "communication", "variant": variant, "testScale": "pairs", "nodesPerJob": 2,
            "enableMNNVL": False, "thresholds": thresholds if thresholds is not None else {"busBandwidthGBps": "value >= 300"},
            "metricNames": ["busBandwidthGBps", "algBandwidthGBps"], "results": results}


def failed(report: dict) -> dict[str, list[str]]:
    return {n["name"]: n["reasons"] for n in report["failedNodes"]}


def test_all_pass() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps=371.2),
                                  run("g1", ["c", "d"], busBandwidthGBps=350.0)])], generated_at="t")
    assert r["result"] == "PASSED"
    assert r["failedNodes"] == []
    t = r["categories"][0]["thresholds"][0]
    assert t == {"metric": "busBandwidthGBps", "expression": "value >= 300", "measuredValue": 350.0,
                 "passed": True, "reason": None, "source": {"kind": "explicit", "from": "spec"}}
    assert r["categories"][0]["metrics"]["busBandwidthGBps"] == {"min": 350.0, "max": 371.2, "mean": 360.6}
    assert r["summary"]["categoriesPassed"] == 1 and r["generatedAt"] == "t"


def test_threshold_violation_blames_every_node_of_the_group_with_nvcre_message() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps=371.2),
                                  run("g1", ["c", "d"], busBandwidthGBps=281.4)])])
    assert r["result"] == "FAILED"
    assert failed(r) == {"c": ["ThresholdViolation"], "d": ["ThresholdViolation"]}
    msg = 'Threshold "busBandwidthGBps" violated: measured 281.4000, expression: value >= 300'
    assert r["failedNodes"][0]["message"] == f"communication/nccl-all-reduce: {msg}"
    c = r["categories"][0]
    assert c["failureReason"] == "ThresholdViolation"
    assert c["thresholds"][0]["measuredValue"] == 281.4 and c["thresholds"][0]["passed"] is False
    assert [g["name"] for g in c["failedGroups"]] == ["g1"]


def test_missing_metric_fails_closed() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], algBandwidthGBps=190.0)])])
    assert failed(r) == {"a": ["MeasurementNotFound"], "b": ["MeasurementNotFound"]}
    assert 'Threshold "busBandwidthGBps" has no measurement' in r["failedNodes"][0]["message"]
    assert r["categories"][0]["thresholds"][0]["reason"] == "NoMeasurement"


def test_metric_of_wrong_type_counts_as_missing() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps="fast")])])  # type: ignore[arg-type]
    assert failed(r) == {"a": ["MeasurementNotFound"], "b": ["MeasurementNotFound"]}


def test_hardware_failure_blames_only_that_node() -> None:
    hw = [{"node": "b", "reason": "HardwareFailureDetected", "message": "node became Unschedulable at 31s"}]
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], status="failed", reasons=hw)])])
    assert failed(r) == {"b": ["HardwareFailureDetected"]}
    c = r["categories"][0]
    assert c["status"] == "Failed" and c["failureReason"] == "HardwareFailureDetected"
    assert c["failedGroups"][0]["nodes"] == ["a", "b"]  # the group failed; the blame is narrower


def test_workload_failed_blames_whole_group_without_measurement_noise() -> None:
    wf = [{"node": None, "reason": "WorkloadFailed", "message": "launcher exited 1"}]
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], status="failed", reasons=wf)])])
    assert failed(r) == {"a": ["WorkloadFailed"], "b": ["WorkloadFailed"]}
    assert r["failedNodes"][0]["message"] == "communication/nccl-all-reduce: launcher exited 1"
    assert [x["reason"] for x in r["categories"][0]["groups"][0]["reasons"]] == ["WorkloadFailed"]


def test_failed_status_without_reason_is_still_a_failure() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], status="failed", busBandwidthGBps=400.0)])])
    assert failed(r) == {"a": ["WorkloadFailed"], "b": ["WorkloadFailed"]}


def test_low_bandwidth_of_a_failed_workload_is_not_judged() -> None:
    wf = [{"node": None, "reason": "WorkloadFailed", "message": "timeout"}]
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], status="failed", reasons=wf, busBandwidthGBps=12.0)])])
    assert failed(r) == {"a": ["WorkloadFailed"], "b": ["WorkloadFailed"]}
    assert r["categories"][0]["metrics"] == {}  # partial numbers from a failed run stay in the group only
    assert r["categories"][0]["groups"][0]["metrics"] == {"busBandwidthGBps": 12.0}


def test_no_thresholds_records_and_passes_slow_node() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a"], busBandwidthGBps=480.0), run("g1", ["b"], busBandwidthGBps=120.0)],
                                 thresholds={}, variant="nccl-loopback")])
    c = r["categories"][0]
    assert r["result"] == "PASSED" and c["status"] == "Passed"
    assert c["thresholdsSet"] is False and c["thresholds"] == []
    assert c["metrics"]["busBandwidthGBps"]["min"] == 120.0


@pytest.mark.parametrize("reason", ["DataCorruption", "TransportMismatch", "DiagnosticFailed", "WorkloadFailed"])
def test_no_thresholds_still_fails_on_workload_reasons(reason: str) -> None:
    bad = [{"node": "b", "reason": reason, "message": "x"}]
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], status="failed", reasons=bad)], thresholds={})])
    assert r["result"] == "FAILED" and failed(r) == {"b": [reason]}


def test_excluded_nodes_make_a_pass_incomplete() -> None:
    summary = {**SUMMARY, "selectedNodes": 3,
               "excludedNodes": [{"name": "d", "reason": "Unschedulable", "message": "cordoned"}]}
    r = judge("c", summary, [cat([run("g0", ["a", "b", "c"], busBandwidthGBps=371.2)])])
    assert r["result"] == "INCOMPLETE" and r["testedNodes"] == 3
    assert r["excludedNodes"] == summary["excludedNodes"] and r["failedNodes"] == []


def test_failure_beats_incomplete() -> None:
    summary = {**SUMMARY, "excludedNodes": [{"name": "d", "reason": "NotReady", "message": ""}]}
    r = judge("c", summary, [cat([run("g0", ["a", "b"], busBandwidthGBps=1.0)])])
    assert r["result"] == "FAILED"


def test_one_failing_repeat_fails_the_group_and_says_which() -> None:
    runs = [run("g0", ["a", "b"], repeat=i, busBandwidthGBps=v) for i, v in enumerate([371.2, 290.5, 369.9])]
    r = judge("c", SUMMARY, [cat(runs)])
    g = r["categories"][0]["groups"][0]
    assert g["status"] == "Failed" and g["repeats"] == 3
    assert g["reasons"][0]["message"].startswith('repeat 2 of 3: Threshold "busBandwidthGBps" violated: measured 290.5000')
    assert g["metrics"]["busBandwidthGBps"] == 290.5  # the worst repeat
    assert failed(r) == {"a": ["ThresholdViolation"], "b": ["ThresholdViolation"]}
    assert r["categories"][0]["jobs"] == 3


def test_all_repeats_pass() -> None:
    runs = [run("g0", ["a", "b"], repeat=i, busBandwidthGBps=v) for i, v in enumerate([371.2, 369.9])]
    assert judge("c", SUMMARY, [cat(runs)])["result"] == "PASSED"


@pytest.mark.parametrize(("results", "message"), [(None, NO_RESULTS_MESSAGE), ([], "no test ran")])
def test_category_step_errored(results: list | None, message: str) -> None:
    r = judge("c", SUMMARY, [cat(results), cat([run("g0", ["a", "b"], busBandwidthGBps=400.0)], variant="other")])
    c = r["categories"][0]
    assert r["result"] == "FAILED"
    assert c["status"] == "Failed" and c["failureReason"] == "WorkloadFailed"
    assert message in c["failedGroups"][0]["message"]
    assert r["failedNodes"] == []  # nodes unknown: no per-node blame
    assert c["thresholds"][0]["passed"] is False
    assert r["summary"] == {"categoriesPassed": 1, "categoriesTotal": 2, "failedNodeCount": 0, "excludedNodeCount": 0}


def test_bad_cel_at_judge_time_fails_closed() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps=400.0)], thresholds={"busBandwidthGBps": "value >="})])
    assert failed(r) == {"a": ["ThresholdViolation"], "b": ["ThresholdViolation"]}
    assert "could not be evaluated" in r["failedNodes"][0]["message"]
    assert r["categories"][0]["thresholds"][0]["reason"] == "EvaluationError"


def test_cel_runtime_error_fails_closed() -> None:
    th = {"busBandwidthGBps": "value > 2.0 ? 1 : false"}  # an int comes out above 2.0
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps=400.0)], thresholds=th)])
    assert r["result"] == "FAILED"
    assert r["categories"][0]["thresholds"][0]["reason"] == "EvaluationError"


def test_failed_nodes_merge_across_categories_sorted() -> None:
    wf = [{"node": None, "reason": "WorkloadFailed", "message": "exit 1"}]
    r = judge("c", SUMMARY, [
        cat([run("g0", ["z", "b"], busBandwidthGBps=100.0)], variant="v1"),
        cat([run("g0", ["b", "a"], status="failed", reasons=wf)], variant="v2")])
    assert [n["name"] for n in r["failedNodes"]] == ["a", "b", "z"]
    b = r["failedNodes"][1]
    assert b["reasons"] == ["ThresholdViolation", "WorkloadFailed"]
    assert b["message"].startswith("communication/v1: Threshold") and b["message"].endswith("; communication/v2: exit 1")


def test_lower_is_better_metric_reports_largest_as_worst() -> None:
    th = {"avgStepTimeSec": "value <= 2.0"}
    r = judge("c", SUMMARY, [cat([run("g0", ["a"], avgStepTimeSec=1.5), run("g1", ["b"], avgStepTimeSec=1.9)],
                                 thresholds=th)])
    assert r["categories"][0]["thresholds"][0]["measuredValue"] == 1.9


def test_cleanup_counts_and_leftovers() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a"], busBandwidthGBps=400.0, job="j0"),
                                  run("g1", ["b"], busBandwidthGBps=400.0, job="j1", deleted=False)])])
    assert r["cleanup"] == {"jobsCreated": 2, "jobsDeleted": 1, "leftover": ["j1"]}


def test_nan_never_reaches_the_json() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps=math.nan)])])
    assert r["result"] == "FAILED"
    json.dumps(r, allow_nan=False)  # raises on NaN


def test_no_categories_is_not_a_pass() -> None:
    assert judge("c", SUMMARY, [])["result"] == "INCOMPLETE"


def test_contract_keys() -> None:
    r = judge("c", SUMMARY, [cat([run("g0", ["a", "b"], busBandwidthGBps=371.2)])])
    assert r["apiVersion"] == "nvcre-hera.dev/v1alpha1" and r["kind"] == "CertificationReport"
    assert {"name", "generatedAt", "result", "platform", "gpu", "totalNodes", "testedNodes", "excludedNodes",
            "categories", "failedNodes", "cleanup", "summary"} <= r.keys()
    assert {"domain", "variant", "status", "failureReason", "runtimeSec", "testScale", "nodesPerJob", "jobs",
            "enableMNNVL", "thresholds", "metrics", "bandwidth", "groups", "failedGroups",
            "thresholdsSet"} <= r["categories"][0].keys()
    assert r["categories"][0]["groups"][0].keys() >= {"name", "nodes", "status", "metrics", "reasons"}


def test_pure_input_untouched() -> None:
    cats = [cat([run("g0", ["a", "b"], busBandwidthGBps=281.4)])]
    before = json.dumps(cats, sort_keys=True)
    judge("c", SUMMARY, cats)
    assert json.dumps(cats, sort_keys=True) == before


def test_columnar_samples_judge_like_rows():
    """The run step writes bandwidth samples as columns (small Workflows); the judge reads them as the rows it
    always read, so both forms give the same bandwidth table."""
    from nvcre_hera.judge import sample_rows

    rows = [{"sizeBytes": 1024, "algBandwidthGBps": 1.5, "busBandwidthGBps": 2.5, "samples": 1},
            {"sizeBytes": 2048, "algBandwidthGBps": 3.0, "busBandwidthGBps": 5.25, "samples": 1}]
    columns = {"sizeBytes": [1024, 2048], "algBandwidthGBps": [1.5, 3.0], "busBandwidthGBps": [2.5, 5.25]}
    assert sample_rows(columns) == rows and sample_rows(rows) == rows
    assert sample_rows(None) == [] and sample_rows({"sizeBytes": [1]})[0]["busBandwidthGBps"] is None
