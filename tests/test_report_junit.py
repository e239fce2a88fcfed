"""JUnit XML: parses with xml.etree, one suite per category, one case per group, failures carry the reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from nvcre_hera.judge import judge
from nvcre_hera.report import render_junit

SUMMARY = {"platform": "aws", "gpu": "h100", "totalNodes": 5, "selectedNodes": 4,
           "excludedNodes": [{"name": "n9", "reason": "NotReady", "message": "kubelet stopped posting"}]}


def _run(group: str, nodes: list[str], bus: float | None = 400.0, status: str = "ok", reasons: list | None = None,
         log: str = "") -> dict:
    return {"group": group, "nodes": nodes, "status": status,
            "metrics": {} if bus is None else {"busBandwidthGBps": bus}, "samples": [], "reasons": reasons or [],
            "runtimeSec": 12.5, "jobName": f"j-{group}", "jobDeleted": True, "logTail": log}


def _report() -> dict:
    wf = [{"node": None, "reason": "WorkloadFailed", "message": 'exit 1 & "<boom>"'}]
    cats = [
        {"domain": "communication", "variant": "nccl-all-reduce", "testScale": "pairs", "nodesPerJob": 2,
         "thresholds": {"busBandwidthGBps": "value >= 300 && value < 2000"},
         "results": [_run("g0", ["a", "b"]), _run("g1", ["c", "d"], bus=281.4),
                     _run("g2", ["e", "f"], bus=None, status="failed", reasons=wf, log="\x1b[31mred\x1b[0m\x00 bye")]},
        {"domain": "health", "variant": "dcgm-diag", "testScale": "per-node", "nodesPerJob": 1, "results": None},
    ]
    return judge("cert<1>", SUMMARY, cats)


def test_parses_and_counts() -> None:
    root = ET.fromstring(render_junit(_report()).encode())
    assert root.tag == "testsuites" and root.get("name") == "cert<1>"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["communication/nccl-all-reduce", "health/dcgm-diag", "excluded-nodes"]
    ar = suites[0]
    assert [c.get("name") for c in ar.findall("testcase")] == ["g0", "g1", "g2"]
    assert (ar.get("tests"), ar.get("failures")) == ("3", "2")
    assert ar.find("testcase").find("failure") is None
    assert root.get("failures") == "3" and root.get("skipped") == "1" and root.get("tests") == "5"


def test_failure_messages() -> None:
    root = ET.fromstring(render_junit(_report()).encode())
    cases = {c.get("name"): c for c in root.iter("testcase")}
    g1 = cases["g1"].find("failure")
    assert g1.get("type") == "ThresholdViolation"
    assert g1.get("message") == ('Threshold "busBandwidthGBps" violated: measured 281.4000, '
                                 "expression: value >= 300 && value < 2000")
    assert "nodes: c, d" in g1.text
    g2 = cases["g2"].find("failure")
    assert g2.get("message") == 'exit 1 & "<boom>"' and "red bye" in g2.text  # control chars gone, text kept
    step = cases["step"].find("failure")
    assert step.get("type") == "WorkloadFailed" and "did not complete" in step.get("message")
    assert cases["n9"].find("skipped").get("message") == "NotReady: kubelet stopped posting"
