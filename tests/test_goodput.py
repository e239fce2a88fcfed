"""Issue 9 item 7: `goodputRatio` is offered, so it is measured (NVCRE's definition), never a threshold that fails
every node with MeasurementNotFound. NVCRE: `(t_w - t_ch - t_rm - t_re - t_save) / (t_w - t_re)`
(cluster-readiness-engine `pkg/goodput/calculator.go`, `api/v1alpha1/goodputmeasurement_types.go`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nvcre_hera.local_run import run_local
from nvcre_hera.parsers.training import parse_training


def goodput_ratio(result: dict, wall_s: float):
    from nvcre_hera.parsers.training import goodput_ratio as under_test

    return under_test(result, wall_s)

ROOT = Path(__file__).resolve().parent.parent


def _megatron(*steps: tuple[int, float]) -> str:
    return "".join(f" iteration {it:8d}/      50 | elapsed time per iteration (ms): {ms:.1f} | lm loss: 1.0E+01 |\n"
                   for it, ms in steps)


def test_productive_time_counts_every_logged_iteration_including_warmup() -> None:
    res = parse_training(_megatron((1, 2500.0), (2, 1000.0), (3, 1000.0)))
    assert res["productiveSec"] == pytest.approx(4.5)
    assert goodput_ratio(res, 9.0) == pytest.approx(0.5)  # 4.5 s of steps in 9 s since the job was created


def test_a_log_interval_counts_the_iterations_between_lines() -> None:
    res = parse_training(_megatron((10, 1000.0), (20, 1000.0)))
    assert res["productiveSec"] == pytest.approx(20.0) and goodput_ratio(res, 40.0) == pytest.approx(0.5)


def test_no_step_times_is_no_goodput() -> None:
    assert goodput_ratio(parse_training("iteration        1/      50 | lm loss: 1.0 |\n"), 100.0) is None
    assert goodput_ratio(parse_training(""), 100.0) is None
    assert goodput_ratio(parse_training(_megatron((1, 1000.0))), 0.0) is None


def test_perfect_goodput_and_an_explicit_figure() -> None:
    """NVCRE's testdata `calculate-goodput/perfect-goodput`: t_w 3600 and nothing lost is 1.0."""
    assert goodput_ratio({"productiveSec": 3600.0}, 3600.0) == 1.0
    assert goodput_ratio({"goodputRatio": 0.42, "productiveSec": 1.0}, 10.0) == 0.42


def test_a_goodput_threshold_is_judged_on_a_measured_value(tmp_path) -> None:
    """Before: goodputRatio was never measured, so this threshold failed every node with MeasurementNotFound."""
    body = yaml.safe_load((ROOT / "examples" / "certification.yaml").read_text())
    body["spec"]["options"]["thresholds"] = {"goodputRatio": "value >= 0.2"}
    cert = tmp_path / "cert.yaml"
    cert.write_text(yaml.safe_dump(body))
    report = run_local(str(cert), str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")).report
    training = next(c for c in report["categories"] if c["domain"] == "training")
    (applied,) = training["thresholds"]
    assert report["result"] == "PASSED" and applied["passed"] is True
    assert 0.2 <= applied["measuredValue"] <= 1.0
