"""`nvcre baseline` and `nvcre certify --baseline` (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.baseline import compare, threshold_for, worst_values
from nvcre_hera.cli import main

ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = ROOT / "examples" / "clusters"


def report(result: str = "PASSED", groups: list[dict] | None = None, gpu: str = "h100") -> dict:
    return {"kind": "CertificationReport", "name": "run-a", "generatedAt": "2026-01-02T03:04:05Z", "result": result,
            "gpu": gpu, "platform": "aws", "testedNodes": 2,
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "testScale": "full-scale",
                            "enableMNNVL": False, "groups": groups if groups is not None else [
                                {"name": "g0", "metrics": {"busBandwidthGBps": 400.0}},
                                {"name": "g1", "metrics": {"busBandwidthGBps": 380.0}}]},
                           {"domain": "training", "variant": "nemotron5-8b", "testScale": "full-scale",
                            "groups": [{"name": "g0", "metrics": {"avgStepTimeSec": 9.0, "goodputRatio": 0.5}},
                                       {"name": "g1", "metrics": {"avgStepTimeSec": 7.2, "goodputRatio": 0.8}}]}]}


def test_fraction_math_by_hand():
    assert threshold_for("busBandwidthGBps", 380.0, 0.9) == "value >= 342.00"  # 0.9 x 380
    assert threshold_for("avgStepTimeSec", 9.0, 0.9) == "value <= 10.00"  # 9.0 / 0.9
    assert threshold_for("busBandwidthGBps", 224.85, 0.9) == "value >= 202.36"  # 202.365 rounded down
    assert threshold_for("avgStepTimeSec", 1.0, 0.3) == "value <= 3.34"  # 3.333... rounded up


def test_worst_group_is_the_lowest_or_for_times_the_highest():
    worst = {(v["variant"], v["metric"]): v["value"] for v in worst_values(report())}
    assert worst == {("nccl-all-reduce", "busBandwidthGBps"): 380.0, ("nemotron5-8b", "avgStepTimeSec"): 9.0,
                     ("nemotron5-8b", "goodputRatio"): 0.5}


def _run_baseline(tmp_path: Path, data: dict, *args: str) -> tuple[int, Path]:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "thresholds.yaml"
    return main(["baseline", str(path), "-o", str(out), *args]), out


def test_baseline_writes_per_gpu_thresholds_as_a_certification_fragment(tmp_path):
    code, out = _run_baseline(tmp_path, report(), "--fraction", "0.8")
    assert code == 0
    text = out.read_text()
    assert "certification run-a, generatedAt 2026-01-02T03:04:05Z" in text and "0.8 x" in text
    doc = yaml.safe_load(text)
    cats = doc["spec"]["categories"]
    assert cats[0]["options"] == {"testScale": "full-scale",
                                  "thresholds": {"h100": {"busBandwidthGBps": "value >= 304.00"}}}  # 0.8 x 380
    assert cats[1]["options"]["thresholds"]["h100"] == {"avgStepTimeSec": "value <= 11.25",  # 9.0 / 0.8
                                                        "goodputRatio": "value >= 0.40"}


@pytest.mark.parametrize("data, args, words", [
    (report(result="FAILED"), [], "did not pass"),
    (report(result="INCOMPLETE"), [], "did not pass"),
    (report(groups=[]) | {"categories": []}, [], "no measurements"),
    ({"kind": "Certification"}, [], "not a certification report"),
    (report(), ["--fraction", "1.5"], "--fraction"),
    (report(), ["--fraction", "0"], "--fraction"),
])
def test_baseline_refuses_with_one_line_and_exit_2(tmp_path, capsys, data, args, words):
    code, out = _run_baseline(tmp_path, data, *args)
    err = capsys.readouterr().err.strip()
    assert code == 2 and words in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_compare_reports_the_change_and_not_a_verdict():
    now = report(groups=[{"name": "g0", "metrics": {"busBandwidthGBps": 342.0}}])
    cmp = compare(now, worst_values(report()), "b.yaml")
    row = next(r for r in cmp["rows"] if r["metric"] == "busBandwidthGBps")
    assert (row["measured"], row["baseline"], row["changePercent"]) == (342.0, 380.0, -10.0)  # (342-380)/380
    assert cmp["affectsVerdict"] is False


def _slow(tmp_path: Path, factor: float) -> Path:
    """The healthy H100 cluster with every NIC at `factor` (a cluster 20 % slower on the network)."""
    data = yaml.safe_load((CLUSTERS / "healthy-h100-16.yaml").read_text())
    data["spec"]["faults"] = [{"node": f"gpu-node-{i:02d}", "kind": "slow-nic", "factor": factor}
                              for i in range(1, 17)]
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_round_trip_baseline_passes_the_same_cluster_and_fails_a_20_percent_slower_one(tmp_path, capsys):
    cert = ROOT / "examples" / "certifications" / "profile-full-scale.yaml"
    first = tmp_path / "first"
    assert main(["certify", str(cert), "--cluster", str(CLUSTERS / "healthy-h100-16.yaml"), "--out", str(first),
                 "--quiet"]) == 0
    baseline = tmp_path / "baseline.yaml"
    assert main(["baseline", str(first / "report.json"), "-o", str(baseline)]) == 0
    uses = yaml.safe_load(cert.read_text())
    uses["spec"]["thresholdProfile"] = str(baseline)  # the baseline as the profile file
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(uses))
    assert main(["certify", str(again), "--cluster", str(CLUSTERS / "healthy-h100-16.yaml"), "--out",
                 str(tmp_path / "same"), "--quiet"]) == 0
    capsys.readouterr()
    code = main(["certify", str(again), "--cluster", str(_slow(tmp_path, 0.8)), "--out", str(tmp_path / "slow"),
                 "--quiet", "--baseline", str(baseline)])
    assert code == 1
    slow = json.loads((tmp_path / "slow" / "report.json").read_text())
    assert slow["result"] == "FAILED"
    row = next(r for r in slow["baselineComparison"]["rows"] if r["metric"] == "busBandwidthGBps")
    assert row["changePercent"] < -10  # the NICs at 80 %: the ring about 20 % slower, below the 0.9 floor
    assert "Compared with baseline" in capsys.readouterr().out
    assert "Compared with baseline" in (tmp_path / "slow" / "report.txt").read_text()


def test_certify_baseline_is_reporting_only_and_a_bad_file_fails_before_the_run(tmp_path, capsys):
    cert = ROOT / "examples" / "certifications" / "profile-full-scale.yaml"
    first = tmp_path / "first"
    assert main(["certify", str(cert), "--cluster", str(CLUSTERS / "healthy-h100-16.yaml"), "--out", str(first),
                 "--quiet"]) == 0
    # a report JSON is a baseline too; a 20 % slower run still PASSES the profile floor: the verdict is unchanged
    assert main(["certify", str(cert), "--cluster", str(_slow(tmp_path, 0.8)), "--out", str(tmp_path / "o"),
                 "--quiet", "--baseline", str(first / "report.json")]) == 0
    rows = json.loads((tmp_path / "o" / "report.json").read_text())["baselineComparison"]["rows"]
    assert any(r["changePercent"] is not None and r["changePercent"] < -10 for r in rows)
    capsys.readouterr()
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Something\n")
    assert main(["certify", str(cert), "--out", str(tmp_path / "x"), "--baseline", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"nvcre: --baseline {bad}") and len(err.splitlines()) == 1
    assert not (tmp_path / "x" / "report.json").exists()
