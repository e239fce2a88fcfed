"""Issue 9 item 1: diagnose judges with the whole CEL threshold, never drops one it cannot read.

Before the fix the planner read only `value >= N` on busBandwidthGBps and the verdict ran with no thresholds, so on
the GB300 example (≈190 GB/s on the network) every spelling below but the first PASSED with `thresholdsSet: false`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.errors import InputError
from nvcre_hera.local_run import run_local
from nvcre_hera.spec_load import parse_certification, resolve_categories
from nvcre_hera.threshold_bounds import Bounds, floor_of, threshold_bounds

ROOT = Path(__file__).resolve().parent.parent
GB300 = str(ROOT / "examples" / "clusters" / "gb300-nvl72.yaml")


def _diagnose_cert(tmp_path: Path, thresholds: dict) -> str:
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "diag"},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "testScale": "diagnose",
                     "maxConcurrent": 8, "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                                         "options": {"thresholds": thresholds}}]}}
    path = tmp_path / "diag.yaml"
    path.write_text(yaml.safe_dump(body))
    return str(path)


@pytest.mark.parametrize("expr, bounds", [
    ("value >= 3e2", Bounds(300.0)),
    ("300.0 <= value", Bounds(300.0)),
    ("value > 300.0", Bounds(300.0, True)),
    ("value >= 300.0 && value < 5000", Bounds(300.0, False, 5000.0, True)),
    ("(value >= 200.0 && value >= 300.0) && 5000.0 > value", Bounds(300.0, False, 5000.0, True)),
    ("value < 5000.0", Bounds(high=5000.0, high_strict=True)),
])
def test_bounds_from_the_cel_tree(expr: str, bounds: Bounds) -> None:
    assert threshold_bounds(expr) == bounds


@pytest.mark.parametrize("expr", ["value >= 300.0 || value < 1.0", "value != 3.0", "!(value < 300.0)",
                                  "value * 2.0 >= 600.0", "value >= value"])
def test_what_is_not_an_interval_is_refused(expr: str) -> None:
    with pytest.raises(ValueError, match="joined by &&"):
        threshold_bounds(expr)


def test_no_lower_bound_is_no_floor() -> None:
    assert floor_of("value < 5000.0") is None and floor_of(None) is None and floor_of("value >= 3e2") == 300.0


@pytest.mark.parametrize("thresholds", [
    {"busBandwidthGBps": "value >= 300"},
    {"busBandwidthGBps": "value >= 3e2"},
    {"busBandwidthGBps": "300.0 <= value"},
    {"busBandwidthGBps": "value >= 300.0 && value < 5000"},
    {"algBandwidthGBps": "value >= 1000"},
])
def test_every_spelling_fails_on_the_gb300_example(tmp_path, thresholds: dict) -> None:
    report = run_local(_diagnose_cert(tmp_path, thresholds), GB300).report
    (cat,) = report["categories"]
    assert report["result"] == "FAILED"
    assert cat["thresholdsSet"] is True
    (metric, expr), = thresholds.items()
    (applied,) = cat["thresholds"]
    assert (applied["metric"], applied["expression"], applied["passed"]) == (metric, expr, False)
    assert applied["measuredValue"] < (300 if metric == "busBandwidthGBps" else 1000)


def test_an_upper_bound_is_judged_too(tmp_path) -> None:
    """The planner only sees the floor; the verdict still holds every job to the upper bound (healthy H100s run far
    above 100 GB/s, so `value < 100.0` fails although no node is slower than its peers)."""
    cert = _diagnose_cert(tmp_path, {"busBandwidthGBps": "value >= 1.0 && value < 100.0"})
    report = run_local(cert, str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")).report
    (applied,) = report["categories"][0]["thresholds"]
    assert report["result"] == "FAILED" and applied["passed"] is False and applied["measuredValue"] >= 100
    assert report["failedNodes"] == []  # nobody is to blame for a bar no healthy node meets


def test_a_threshold_diagnose_cannot_apply_is_refused_at_load_time(tmp_path, capsys) -> None:
    cert = _diagnose_cert(tmp_path, {"busBandwidthGBps": "value >= 300.0 || value < 1.0"})
    with pytest.raises(InputError) as err:
        resolve_categories(parse_certification(Path(cert).read_text(), cert), cert)
    assert "spec.categories[0].options.thresholds.busBandwidthGBps" in str(err.value)
    assert main(["certify", cert, "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "testScale diagnose" in lines[0] and "Traceback" not in lines[0]
