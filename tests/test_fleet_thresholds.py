"""Fleet-relative thresholds (issue 13): the `fleet` CEL variable, its statistics, the judge's use of them (fail
closed on small fleets and non-finite values) and the provenance of every threshold in the report."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from nvcre_hera.cli import main
from nvcre_hera.fleet import MIN_FLEET, fleet_stats
from nvcre_hera.judge import judge
from nvcre_hera.report import render_card
from nvcre_hera.report.card import threshold_line
from nvcre_hera.thresholds import check_threshold, compile_threshold, evaluate

SUMMARY = {"platform": "aws", "gpu": "h100", "totalNodes": 8, "selectedNodes": 8, "excludedNodes": []}
REL = "value >= 0.9 * fleet.median"


# --- the statistics, against numbers worked by hand ------------------------------------------------------------

def test_stats_odd_count_by_hand() -> None:
    # sorted 9 10 11 12 50: median 11; |x - 11| = 2 1 0 1 39 -> sorted 0 1 1 2 39: MAD 1;
    # p10 at position 0.1 * 4 = 0.4: 9 + 0.4 * (10 - 9) = 9.4
    s = fleet_stats([10.0, 12.0, 11.0, 50.0, 9.0])
    assert (s.median, s.mad, s.count) == (11.0, 1.0, 5.0)
    assert s.p10 == pytest.approx(9.4)


def test_stats_even_count_by_hand() -> None:
    # 1 2 3 4: median 2.5; deviations 1.5 .5 .5 1.5: MAD 1.0; p10 at 0.3: 1.3
    s = fleet_stats([4.0, 1.0, 3.0, 2.0])
    assert (s.median, s.mad, s.count) == (2.5, 1.0, 4.0)
    assert s.p10 == pytest.approx(1.3)


def test_p10_is_statistics_inclusive_first_decile() -> None:
    values = [float(v) for v in (403, 471, 466, 459, 480, 455, 462, 470, 468, 477, 449)]
    assert fleet_stats(values).p10 == pytest.approx(statistics.quantiles(values, n=10, method="inclusive")[0])


def test_stats_leave_out_what_is_not_finite() -> None:
    s = fleet_stats([1.0, math.nan, 3.0, None, math.inf])
    assert (s.median, s.mad, s.count) == (2.0, 1.0, 2.0)
    assert fleet_stats([]) is None and fleet_stats([math.nan]) is None


# --- the CEL variable ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "value", "expected"), [
    (REL, 361.0, True),                                          # 0.9 * 400 = 360
    (REL, 359.0, False),
    ("value >= fleet.median - 4.0 * fleet.mad", 388.0, True),    # 400 - 4 * 3 = 388
    ("value >= fleet.median - 4.0 * fleet.mad", 387.9, False),
    ("value >= fleet.p10", 395.0, True),
    ("fleet.count >= 5.0 && value >= 0.9 * fleet.median", 380.0, True),
    ("value <= 1.2 * fleet.median", 481.0, False),               # a time: lower is better
])
def test_fleet_expressions(expr: str, value: float, expected: bool) -> None:
    program = check_threshold("busBandwidthGBps", expr)
    assert program.uses_fleet
    assert evaluate(program, value, {"median": 400.0, "mad": 3.0, "p10": 395.0, "count": 64.0}) is expected


def test_plain_threshold_does_not_use_fleet() -> None:
    assert not compile_threshold("value >= 300").uses_fleet


def test_unknown_fleet_field_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError) as err:
        check_threshold("busBandwidthGBps", "value >= fleet.mean")
    assert str(err.value) == ("threshold 'busBandwidthGBps': 'value >= fleet.mean': unknown field fleet.mean: "
                              "fleet has fleet.median, fleet.mad, fleet.p10, fleet.count")


@pytest.mark.parametrize(("expr", "words"), [
    ("value >= fleet", "use fleet by its fields"),
    ("value >= fleet['median']", "use fleet by its fields"),
    ("value >= fleet.median + 'x'", "no matching overload for + on (double, string)"),
    ("fleet.median", "result is double"),
    ("value >= 1 * fleet.median", "no matching overload for * on (int, double)"),
])
def test_fleet_type_errors_at_load_time(expr: str, words: str) -> None:
    with pytest.raises(ValueError, match="threshold 'busBandwidthGBps'") as err:
        check_threshold("busBandwidthGBps", expr)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_fleet_threshold_without_fleet_is_an_error_not_a_pass() -> None:
    with pytest.raises(ValueError, match="needs the run's fleet statistics"):
        evaluate(compile_threshold("!(value < 0.9 * fleet.median)"), 1.0)


# --- the judge -------------------------------------------------------------------------------------------------

def _run(group: str, value: float | None, status: str = "ok", repeat: int = 0, reasons: list | None = None) -> dict:
    return {"category": "communication/nccl-all-reduce", "group": group, "nodes": [f"n-{group}"], "status": status,
            "metrics": {} if value is None else {"busBandwidthGBps": value}, "samples": [],
            "reasons": reasons or [], "runtimeSec": 10.0, "jobName": f"j-{group}-{repeat}", "jobDeleted": True,
            "logTail": "", "repeat": repeat}


def _cat(results: list[dict], thresholds: dict | None = None, **extra) -> dict:
    return {"domain": "communication", "variant": "nccl-all-reduce", "testScale": "intra-node", "nodesPerJob": 1,
            "thresholds": thresholds or {"busBandwidthGBps": REL}, "metricNames": ["busBandwidthGBps"],
            "results": results, **extra}


def _blamed(report: dict) -> dict[str, list[str]]:
    return {n["name"]: n["reasons"] for n in report["failedNodes"]}


# Eight nodes: seven near 470, one at 400. Sorted: 400 465 468 469 471 472 474 476; median (469 + 471) / 2 = 470,
# 0.9 * 470 = 423: only g7 (400) is below. |x - 470|: 70 5 2 1 1 2 4 6 -> sorted 1 1 2 2 4 5 6 70: MAD 3.
EIGHT = [469.0, 471.0, 474.0, 465.0, 468.0, 472.0, 476.0, 400.0]


def test_the_slow_node_and_only_it_fails_with_the_fleet_numbers_in_the_message() -> None:
    report = judge("c", SUMMARY, [_cat([_run(f"g{i}", v) for i, v in enumerate(EIGHT)])])
    assert report["result"] == "FAILED"
    assert _blamed(report) == {"n-g7": ["ThresholdViolation"]}
    cat = report["categories"][0]
    message = cat["failedGroups"][0]["message"]
    assert message.startswith('Threshold "busBandwidthGBps" violated: measured 400.0000, fleet median 470.0000 '
                              "(mad 3.0000, p10 "), message
    assert message.endswith(f"8 groups), expression: {REL}")
    t = cat["thresholds"][0]
    assert t["fleet"]["median"] == 470.0 and t["fleet"]["mad"] == 3.0 and t["fleet"]["count"] == 8.0
    assert t["measuredValue"] == 400.0 and t["passed"] is False
    assert t["source"] == {"kind": "fleet-relative", "from": "spec"}
    assert threshold_line(t).startswith(f"busBandwidthGBps {REL} → measured 400, fleet median 470 (mad 3, p10 ")
    assert threshold_line(t).endswith("8 groups) ✗ (fleet-relative, from spec)")


def test_healthy_fleet_passes() -> None:
    report = judge("c", SUMMARY, [_cat([_run(f"g{i}", v) for i, v in enumerate(EIGHT[:7])])])
    assert report["result"] == "PASSED" and report["failedNodes"] == []
    assert report["categories"][0]["thresholds"][0]["passed"] is True


def test_a_group_counts_once_by_its_worst_repeat() -> None:
    # g0 repeats at 480 and 300: it counts as 300. Values 300 460 462 464 466: median 462 (not 464 as with 480),
    # and g0 fails on its second repeat.
    runs = [_run("g0", 480.0, repeat=0), _run("g0", 300.0, repeat=1)]
    runs += [_run(f"g{i}", v) for i, v in enumerate([460.0, 462.0, 464.0, 466.0], start=1)]
    cat = judge("c", SUMMARY, [_cat(runs)])["categories"][0]
    assert cat["thresholds"][0]["fleet"]["median"] == 462.0 and cat["thresholds"][0]["fleet"]["count"] == 5.0
    assert [g["name"] for g in cat["failedGroups"]] == ["g0"]
    assert cat["failedGroups"][0]["message"].startswith("repeat 2 of 2: ")


def test_failed_workloads_are_not_in_the_fleet() -> None:
    crash = _run("g5", 10.0, status="failed", reasons=[{"node": None, "reason": "WorkloadFailed", "message": "x"}])
    runs = [_run(f"g{i}", v) for i, v in enumerate([460.0, 462.0, 464.0, 466.0, 468.0])] + [crash]
    report = judge("c", SUMMARY, [_cat(runs)])
    assert report["categories"][0]["thresholds"][0]["fleet"]["count"] == 5.0
    assert _blamed(report) == {"n-g5": ["WorkloadFailed"]}


@pytest.mark.parametrize("n", [1, 2, MIN_FLEET - 1])
def test_small_fleet_is_incomplete_and_accuses_no_one(n: int) -> None:
    runs = [_run(f"g{i}", v) for i, v in enumerate([470.0, 100.0, 469.0, 471.0][:n])]
    report = judge("c", SUMMARY, [_cat(runs)])
    cat = report["categories"][0]
    assert report["result"] == "INCOMPLETE" and cat["status"] == "Incomplete"
    assert report["failedNodes"] == [] and cat["failedGroups"] == []
    t = cat["thresholds"][0]
    assert t["passed"] is False and t["reason"] == "FleetTooSmall" and t["fleet"]["count"] == float(n)
    assert f"needs at least {MIN_FLEET} measured groups, this run has {n}" in cat["incomplete"]
    assert "not judged" in render_card(report)


def test_small_fleet_does_not_hide_an_absolute_failure() -> None:
    runs = [_run("g0", 100.0), _run("g1", 470.0)]
    report = judge("c", SUMMARY, [_cat(runs), _cat(runs, {"busBandwidthGBps": "value >= 300"})])
    assert [c["status"] for c in report["categories"]] == ["Incomplete", "Failed"]
    assert report["result"] == "FAILED" and _blamed(report) == {"n-g0": ["ThresholdViolation"]}


def test_fleet_of_exactly_min_fleet_is_judged() -> None:
    runs = [_run(f"g{i}", v) for i, v in enumerate([470.0, 469.0, 471.0, 468.0, 300.0])]
    report = judge("c", SUMMARY, [_cat(runs)])
    assert _blamed(report) == {"n-g4": ["ThresholdViolation"]}


@pytest.mark.parametrize("expr", [REL, "!(value < 0.9 * fleet.median)"])
def test_nan_fails_its_group_and_stays_out_of_the_fleet(expr: str) -> None:
    runs = [_run(f"g{i}", v) for i, v in enumerate([470.0, 469.0, 471.0, 468.0, 472.0, math.nan])]
    report = judge("c", SUMMARY, [_cat(runs, {"busBandwidthGBps": expr})])
    assert _blamed(report) == {"n-g5": ["ThresholdViolation"]}
    cat = report["categories"][0]
    assert "not a finite number" in cat["failedGroups"][0]["message"]
    assert cat["thresholds"][0]["fleet"]["count"] == 5.0 and cat["thresholds"][0]["passed"] is False


def test_division_by_a_zero_mad_is_judged_not_crashed() -> None:
    # identical values: MAD 0; (median - value) / mad is 0 / 0 in CEL doubles: NaN, compared false -> fails closed
    runs = [_run(f"g{i}", 470.0) for i in range(5)]
    report = judge("c", SUMMARY, [_cat(runs, {"busBandwidthGBps": "(fleet.median - value) / fleet.mad <= 4.0"})])
    assert report["result"] == "FAILED"
    assert report["categories"][0]["thresholds"][0]["passed"] is False


def test_given_threshold_sources_are_kept() -> None:
    sources = {"busBandwidthGBps": {"kind": "profile", "from": "catalog/_lib/thresholds.yaml h100"}}
    runs = [_run(f"g{i}", 470.0) for i in range(2)]
    report = judge("c", SUMMARY, [_cat(runs, {"busBandwidthGBps": "value >= 300"}, thresholdSources=sources)])
    t = report["categories"][0]["thresholds"][0]
    assert t["source"] == sources["busBandwidthGBps"]
    assert threshold_line(t).endswith("✓ (profile, from catalog/_lib/thresholds.yaml h100)")


def test_sources_on_categories_that_did_not_run() -> None:
    cats = [_cat(None, {"busBandwidthGBps": REL}), _cat([], {"busBandwidthGBps": "value >= 1.0"}, incomplete="x")]
    report = judge("c", SUMMARY, cats)
    kinds = [c["thresholds"][0]["source"]["kind"] for c in report["categories"]]
    assert kinds == ["fleet-relative", "explicit"]


# --- the CLI: a bad fleet field is one line and exit 2 ---------------------------------------------------------

def test_cli_bad_fleet_field_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "certifications" / "fleet-relative.yaml"
    cert = tmp_path / "cert.yaml"
    cert.write_text(example.read_text().replace("fleet.median", "fleet.mean", 1))
    code = main(["validate", str(cert)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err == (f"nvcre: {cert}: spec.categories[0].options.thresholds.busBandwidthGBps: threshold "
                   "'busBandwidthGBps': 'value >= 0.9 * fleet.mean': unknown field fleet.mean: fleet has "
                   "fleet.median, fleet.mad, fleet.p10, fleet.count\n")
