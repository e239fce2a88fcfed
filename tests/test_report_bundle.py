"""The results bundle (nvcre_hera/report/bundle.py): per-GPU rows from real dcgmi logs, per-size NCCL rows from
the judge's input, a manifest whose sha256s match the files, and an explicit state per category."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nvcre_hera.cli import main
from nvcre_hera.parsers.dcgm import parse_dcgm
from nvcre_hera.report.bundle import (bundle_files, category_state, component_rows, decode_gpu_results,
                                      encode_gpu_results, read_ndjson)

ROOT = Path(__file__).resolve().parent.parent
DCGM_LOGS = sorted((Path(__file__).parent / "data" / "real" / "dcgm").glob("*.txt"))
GOLDEN = Path(__file__).parent / "golden" / "report"


@pytest.mark.parametrize("log", DCGM_LOGS, ids=lambda p: p.name[:2])
def test_gpu_results_round_trip_what_the_parser_read(log: Path) -> None:
    parsed = parse_dcgm(log.read_text(errors="replace"))
    expected = {(t["name"], int(g), s) for t in parsed["tests"] for g, s in t["gpus"].items()}
    got = {(r["test"], r["gpu"], r["status"]) for r in decode_gpu_results(encode_gpu_results(parsed))}
    assert got == expected


def test_a_failed_gpu_is_its_own_row() -> None:
    parsed = parse_dcgm(DCGM_LOGS[0].read_text(errors="replace"))  # h100x8: GPU Memory fails on every GPU
    rows = decode_gpu_results(encode_gpu_results(parsed))
    failed = sorted(r["gpu"] for r in rows if r["status"] == "fail")
    assert failed and failed == sorted(int(g) for g in parsed["failedGpus"])


@pytest.mark.parametrize("case,state", [("all-passed", "final"), ("threshold-violation", "failed"),
                                        ("step-errored", "missing"), ("hardware-failure", "failed")])
def test_category_state(case: str, state: str) -> None:
    report = json.loads((GOLDEN / case / "expected.json").read_text())
    assert category_state(report["categories"][0]) == state


def test_incomplete_is_missing_never_final() -> None:
    assert category_state({"status": "Incomplete", "groups": [{"status": "Passed"}]}) == "missing"
    assert category_state({"status": "Passed", "groups": []}) == "missing"


def test_nccl_rows_per_group_and_size() -> None:
    doc = json.loads((GOLDEN / "threshold-violation" / "input.json").read_text())
    rows = component_rows(doc["categories"])
    for run in doc["categories"][0]["results"]:
        mine = [r for r in rows if r["component"] == "nccl" and r["group"] == run["group"]]
        assert [r["sizeBytes"] for r in mine] == [s["sizeBytes"] for s in run["samples"]]
        assert [r["busBandwidthGBps"] for r in mine] == [s["busBandwidthGBps"] for s in run["samples"]]
        best = [r for r in rows if r["component"] == "nccl-run" and r["group"] == run["group"]]
        assert [r["busBandwidthGBps"] for r in best] == [run["metrics"]["busBandwidthGBps"]]


def test_manifest_hashes_each_file_and_the_spec() -> None:
    report = json.loads((GOLDEN / "threshold-violation" / "expected.json").read_text())
    files = bundle_files(report, [{"component": "nccl-run", "busBandwidthGBps": 1.0}], plan={"name": "x"},
                         spec_bytes=b"spec: 1\n", spec_name="cert.yaml")
    manifest = json.loads(files["manifest.json"])
    assert {f["name"] for f in manifest["files"]} == {"results.json", "ctrf.json", "components.ndjson"}
    for f in manifest["files"]:
        assert f["sha256"] == hashlib.sha256(files[f["name"]]).hexdigest()
    assert manifest["spec"]["sha256"] == hashlib.sha256(b"spec: 1\n").hexdigest()
    assert json.loads(files["results.json"]) == report
    assert manifest["categories"] == [{"domain": "communication", "variant": "nccl-all-reduce",
                                       "status": "Failed", "state": "failed"}]


def test_certify_writes_ctrf_and_a_bundle_with_per_gpu_rows(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    cert = tmp_path / "dcgm.yaml"
    cert.write_text("apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: dcgm-cert}\n"
                    "spec:\n  target: {nodeSelector: {nvidia.com/gpu.present: \"true\"}}\n"
                    "  categories:\n    - {domain: diagnostics, variant: dcgm-level4}\n")
    cluster = tmp_path / "sim.yaml"
    cluster.write_text("apiVersion: nvcre-hera.dev/v1alpha1\nkind: SimulatedCluster\nmetadata: {name: two}\n"
                       "spec:\n  platform: aws\n  gpu: h100\n  nodes: {count: 2, namePattern: \"gpu-node-{index:02d}\"}\n"
                       "  seed: 7\n  faults:\n    - {node: gpu-node-02, kind: dcgm-fail, gpus: [5], test: memory}\n")
    out = tmp_path / "out"
    assert main(["certify", str(cert), "--cluster", str(cluster), "--out", str(out), "--quiet"]) == 1
    capsys.readouterr()
    ctrf = json.loads((out / "report.ctrf.json").read_text())
    assert {t["name"]: t["status"] for t in ctrf["results"]["tests"]} == {
        "diagnostics/dcgm-level4 gpu-node-01": "passed", "diagnostics/dcgm-level4 gpu-node-02": "failed"}
    rows = read_ndjson((out / "bundle" / "components.ndjson").read_bytes())
    failed = [(r["node"], r["gpu"], r["test"]) for r in rows if r["component"] == "dcgm" and r["status"] == "fail"]
    assert failed == [("gpu-node-02", 5, "memory")]
    manifest = json.loads((out / "bundle" / "manifest.json").read_text())
    assert manifest["spec"]["sha256"] == hashlib.sha256(cert.read_bytes()).hexdigest()
    assert manifest["categories"][0]["state"] == "failed"
    for f in manifest["files"]:
        assert f["sha256"] == hashlib.sha256((out / "bundle" / f["name"]).read_bytes()).hexdigest()
    assert json.loads((out / "bundle" / "results.json").read_text()) == json.loads((out / "report.json").read_text())
