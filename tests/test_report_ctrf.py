"""CTRF rendering: every golden report validates against the vendored CTRF schema (ctrf-io/ctrf, see
nvcre_hera/schemas/ctrf/SOURCES.md), and the statuses fail closed."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path

import jsonschema
import pytest

from nvcre_hera.cli import main
from nvcre_hera.report.ctrf import load_schema, to_ctrf

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "report"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "expected.json").is_file())
SCHEMA_DIR = ROOT / "nvcre_hera" / "schemas" / "ctrf"


def _report(case: str) -> dict:
    return json.loads((GOLDEN / case / "expected.json").read_text())


def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(load_schema(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def test_vendored_schema_matches_its_recorded_sha256() -> None:
    recorded = re.search(r"\| ([0-9a-f]{64}) \|", (SCHEMA_DIR / "SOURCES.md").read_text()).group(1)
    assert hashlib.sha256((SCHEMA_DIR / "ctrf.schema.json").read_bytes()).hexdigest() == recorded


@pytest.mark.parametrize("case", CASES)
def test_every_golden_report_is_valid_ctrf(case: str) -> None:
    _validator().validate(to_ctrf(_report(case)))


@pytest.mark.parametrize("case", CASES)
def test_ctrf_counts_come_from_the_report_and_fail_closed(case: str) -> None:
    report = _report(case)
    doc = to_ctrf(report)
    summary = doc["results"]["summary"]
    passed_groups = sum(1 for c in report["categories"] for g in c["groups"] if g["status"] == "Passed")
    assert summary["passed"] == passed_groups
    assert summary["skipped"] == len(report["excludedNodes"])
    assert summary["tests"] == len(doc["results"]["tests"])
    green = summary["failed"] == summary["other"] == summary["skipped"] == 0
    assert green == (report["result"] == "PASSED")
    for c in report["categories"]:
        if c["status"] != "Passed":
            key = f"{c['domain']}/{c['variant']}"
            mine = [t for t in doc["results"]["tests"] if t["extra"].get("category") == key]
            assert any(t["status"] in ("failed", "other") for t in mine), key


def test_a_failed_group_carries_measured_value_expression_and_nodes() -> None:
    doc = to_ctrf(_report("threshold-violation"))
    test = next(t for t in doc["results"]["tests"] if t["name"] == "communication/nccl-all-reduce g1")
    assert test["status"] == "failed"
    assert "measured 281.4000, expression: value >= 300" in test["message"]
    assert test["extra"]["nodes"] == ["gpu-node-03", "gpu-node-04"]
    assert test["extra"]["reasons"][0]["reason"] == "ThresholdViolation"
    assert test["extra"]["metrics"]["busBandwidthGBps"] == 281.4
    assert test["duration"] == 95000
    passed = next(t for t in doc["results"]["tests"] if t["name"] == "communication/nccl-all-reduce g0")
    assert passed["status"] == "passed" and "measured 371.2000" in passed["message"]
    assert doc["results"]["summary"]["stop"] == 1748779200000  # 2025-06-01T12:00:00Z


def test_the_schema_rejects_what_ctrf_forbids() -> None:
    """The validator is not vacuous: an unknown status and a missing duration are rejected."""
    doc = to_ctrf(_report("all-passed"))
    bad = copy.deepcopy(doc)
    bad["results"]["tests"][0]["status"] = "ok"
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(bad)
    bad = copy.deepcopy(doc)
    del bad["results"]["tests"][0]["duration"]
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(bad)


def test_no_results_is_other_never_passed() -> None:
    report = _report("step-errored")
    statuses = {t["status"] for t in to_ctrf(report)["results"]["tests"]
                if t["extra"].get("category") == "{domain}/{variant}".format(**report["categories"][0])}
    assert "passed" not in statuses and statuses


def test_cli_report_format_ctrf(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(GOLDEN / "hardware-failure" / "expected.json"), "--format", "ctrf"]) == 0
    doc = json.loads(capsys.readouterr().out)
    _validator().validate(doc)
    assert doc["reportFormat"] == "CTRF"


def test_each_test_says_which_transport_carried_its_traffic() -> None:
    """AICR asks for the transport that carried the traffic: the one NCCL logged, per group, in the report and in
    CTRF `extra`. On the socket-fallback example the faulty node's tests ran over NET/Socket, the others over IB."""
    import yaml

    from nvcre_hera.local_run import run_local
    from nvcre_hera.report.ctrf import render_ctrf

    cluster = ROOT / "examples" / "clusters" / "socket-fallback.yaml"
    fallen = {f["node"] for f in yaml.safe_load(cluster.read_text())["spec"]["faults"] if f["kind"] == "socket-fallback"}
    report = run_local(str(ROOT / "examples" / "certifications" / "intra-node.yaml"), str(cluster)).report
    loopback = next(c for c in report["categories"] if c["variant"] == "nccl-loopback")
    by_node = {g["nodes"][0]: g.get("transport") for g in loopback["groups"]}
    assert fallen and all(by_node[n] == ["NET/Socket"] for n in fallen)
    assert all(t and "NET/Socket" not in t for n, t in by_node.items() if n not in fallen)
    ctrf = json.loads(render_ctrf(report))
    tests = {t["extra"]["nodes"][0]: t["extra"].get("transport") for t in ctrf["results"]["tests"]
             if t["extra"].get("category") == "communication/nccl-loopback"}
    assert tests == by_node
