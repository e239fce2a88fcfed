"""Live progress (nvcre_hera.progress): the pure records on hand-made nodes, then `nvcre certify` as a user runs it,
text and JSON, on a simulated cluster with one slow node."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nvcre_hera.cli import main
from nvcre_hera.progress import Node, Progress, format_json, format_text, node_from_argo

ROOT = Path(__file__).resolve().parent.parent
INTRA = str(ROOT / "examples" / "certifications" / "intra-node.yaml")
SLOW_NIC = str(ROOT / "examples" / "clusters" / "slow-nic.yaml")  # gpu-node-07's loopback runs at 192.73 GB/s


def _workflow(thresholds: dict) -> dict:
    plan = {"categories": [{"index": 0, "domain": "communication", "variant": "nccl-all-reduce",
                            "options": {"testScale": "pairs", "thresholds": thresholds}}]}
    return {"spec": {"arguments": {"parameters": [{"name": "plan", "value": json.dumps(plan)}]}}}


def _test_node(nid: str, group: str, nodes: list[str], value: float | None, status: str = "ok",
               phase: str = "Succeeded", t: float = 10.0) -> Node:
    run = {"group": group, "nodes": nodes, "status": status, "metrics": {} if value is None else
           {"busBandwidthGBps": value}, "reasons": [] if status == "ok" else
           [{"node": nodes[0], "reason": "WorkloadFailed", "message": "Test CUDA failure"}]}
    return Node(nid, "test-0", "Pod", phase, "", {"group": json.dumps({"id": group, "nodes": nodes})},
                {"metrics": json.dumps([run])}, t)


def _discover(groups: int) -> Node:
    summary = {"selectedNodes": 4, "totalNodes": 4, "categories": [{"index": 0, "groups": groups}]}
    return Node("d", "discover", "Pod", "Succeeded", outputs={"summary": json.dumps(summary)}, time=6.0)


def test_records_value_threshold_count_and_category_summary() -> None:
    p = Progress(_workflow({"busBandwidthGBps": "value >= 300"}))
    assert p.update(_discover(3))[0]["tests"] == {"communication/nccl-all-reduce": 3}
    ok = p.update(_test_node("a", "g0", ["n1", "n2"], 350.0))[0]
    bad = p.update(_test_node("b", "g1", ["n3", "n4"], 250.0, t=20.0))[0]
    crashed = p.update(_test_node("c", "g2", ["n5", "n6"], None, status="failed", phase="Failed"))[0]
    assert (ok["passed"], ok["done"], ok["total"], ok["value"]) == (True, 1, 3, 350.0)
    assert (bad["passed"], bad["done"]) == (False, 2)
    assert crashed["passed"] is False and crashed["reason"] == "WorkloadFailed: Test CUDA failure"
    assert p.update(_test_node("b", "g1", ["n3", "n4"], 250.0)) == []  # seen again on a later poll: once
    assert re.fullmatch(r"\[   20\.0s\] ✗ communication/nccl-all-reduce +2/3  g1 n3, n4  "
                        r"busBandwidthGBps 250\.00 vs value >= 300", format_text(bad))
    assert "WorkloadFailed: Test CUDA failure" in format_text(crashed) and "vs value" not in format_text(crashed)
    summary = p.update(Node("cat", "category-0", "DAG", "Succeeded", time=30.0))[0]
    # judged values 350 and 250 (the crashed run's is none): median 300
    assert (summary["done"], summary["failed"], summary["failedGroups"], summary["median"]) == (3, 2, ["g1", "g2"],
                                                                                              300.0)
    assert format_text(summary).startswith("[   30.0s] ✗ communication/nccl-all-reduce: 3/3 done, 2 failed (g1, g2)")
    end = p.finish("wf", "Failed", seconds=31.0)
    assert (end["tests"], end["failedTests"]) == (3, 2)
    assert json.loads(format_json(end))["phase"] == "Failed"


def test_a_threshold_not_decidable_on_one_value_is_left_to_the_judge() -> None:
    p = Progress(_workflow({"busBandwidthGBps": "value > fleetMedian"}))
    r = p.update(_test_node("a", "g0", ["n1"], 350.0))[0]
    assert r["passed"] is None and "? communication" in format_text(r) and "(judged at the end)" in format_text(r)


def test_argo_nodes_read_the_same() -> None:
    """A stand-in for one `status.nodes` entry as the Argo Server returns it (parameters as name/value lists)."""
    run = [{"status": "ok", "metrics": {"busBandwidthGBps": 199.5}, "nodes": ["gpu-node-07"]}]
    node = {"id": "wf-123", "name": "wf.c0-x.test(0:g6)(0)", "displayName": "test(0:g6)(0)", "type": "Pod",
            "templateName": "test-0", "phase": "Succeeded", "startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:05:00Z",
            "inputs": {"parameters": [{"name": "group", "value": '{"id":"g6","nodes":["gpu-node-07"]}'}]},
            "outputs": {"parameters": [{"name": "metrics", "value": json.dumps(run)}]}}
    p = Progress(_workflow({"busBandwidthGBps": "value >= 300"}))
    r = p.update(node_from_argo(node, "2026-01-01T00:00:00Z"))[0]
    assert (r["group"], r["nodes"], r["passed"], r["t"]) == ("g6", ["gpu-node-07"], False, 300.0)


def _progress_lines(out: str) -> list[str]:
    return [ln for ln in out.split("\n\nCertification Report")[0].splitlines() if ln.startswith("[")]


def test_certify_shows_the_failing_test_when_it_ends(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["certify", INTRA, "--cluster", SLOW_NIC, "--out", str(tmp_path)]) == 1
    lines = _progress_lines(capsys.readouterr().out)
    failing = [i for i, ln in enumerate(lines) if "✗" in ln and "gpu-node-07" in ln]
    summary = [i for i, ln in enumerate(lines) if "communication/nccl-loopback: 16/16 done, 1 failed (g6)" in ln]
    assert len(failing) == 1 and len(summary) == 1 and failing[0] < summary[0]
    assert "busBandwidthGBps 192.73 vs value >= 300" in lines[failing[0]]
    assert re.search(r" 8/16 ", lines[failing[0]])  # it was the 8th of 16 loopback tests to end
    # 32 tests + 2 category lines + the workflow's end (the budget); the card follows
    assert len(lines) == 32 + 2 + 1 and sum("✗" in ln for ln in lines) == 2


def test_certify_progress_json_and_quiet(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["certify", INTRA, "--cluster", SLOW_NIC, "--out", str(tmp_path), "--progress", "json"]) == 1
    records = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]  # every line one JSON object
    tests = [r for r in records if r["event"] == "test"]
    assert len(tests) == 32 and [r["group"] for r in tests if r["passed"] is False] == ["g6"]
    assert records[-1] == {"event": "result", "result": "FAILED", "report": str(tmp_path / "report.json")}
    assert main(["certify", INTRA, "--cluster", SLOW_NIC, "--out", str(tmp_path), "--quiet"]) == 1
    assert _progress_lines(capsys.readouterr().out) == []
