"""select_thresholds: the profile's floors, then explicit thresholds key by key, per-GPU keys over plain ones."""

from __future__ import annotations

from nvcre_hera.threshold_select import (
    ANY_GPU,
    PROFILE_KEY,
    THRESHOLDS_FROM_KEY,
    profile_notice,
    select_thresholds,
    threshold_metrics,
)

PROFILE = {
    "h100": {"busBandwidthGBps": {"expression": "value >= 360.0", "kind": "profile", "from": "h100.yaml: src-a"},
             "algBandwidthGBps": {"expression": "value >= 200.0", "kind": "profile", "from": "h100.yaml: src-b"}},
    "gb300": {},  # none known for this category and scale
}


def options(**extra):
    return {"testScale": "intra-node", "thresholdProfile": "default", PROFILE_KEY: PROFILE,
            THRESHOLDS_FROM_KEY: "cert.yaml: spec.thresholds", **extra}


def test_profile_alone_gives_the_gpus_floors_with_their_sources():
    thresholds, sources = select_thresholds(options(), "h100")
    assert thresholds == {"busBandwidthGBps": "value >= 360.0", "algBandwidthGBps": "value >= 200.0"}
    assert sources["busBandwidthGBps"] == {"kind": "profile", "from": "h100.yaml: src-a", "gpu": "h100"}


def test_explicit_threshold_wins_key_by_key_and_the_other_profile_floor_stays():
    thresholds, sources = select_thresholds(options(thresholds={"busBandwidthGBps": "value >= 300"}), "h100")
    assert thresholds == {"busBandwidthGBps": "value >= 300", "algBandwidthGBps": "value >= 200.0"}
    assert sources["busBandwidthGBps"] == {"kind": "explicit",
                                           "from": "cert.yaml: spec.thresholds.busBandwidthGBps"}
    assert sources["algBandwidthGBps"]["kind"] == "profile"


def test_per_gpu_key_wins_over_the_plain_key_only_on_that_gpu():
    opts = options(thresholds={"busBandwidthGBps": "value >= 300", "a100": {"busBandwidthGBps": "value >= 150"}})
    on_a100, src = select_thresholds(opts, "a100")
    assert on_a100 == {"busBandwidthGBps": "value >= 150"}  # a100 has no profile here: explicit only
    assert src["busBandwidthGBps"] == {"kind": "explicit", "from": "cert.yaml: spec.thresholds.a100.busBandwidthGBps",
                                       "gpu": "a100"}  # it holds for that GPU only
    on_h100, _ = select_thresholds(opts, "h100")
    assert on_h100["busBandwidthGBps"] == "value >= 300"


def test_unknown_gpu_gets_no_profile_floor_and_a_notice():
    thresholds, sources = select_thresholds(options(), "unknown")
    assert thresholds == {} and sources == {}
    assert "no profile for GPU unknown" in profile_notice(options(), "unknown")
    assert "none known" in profile_notice(options(), "gb300")
    assert profile_notice(options(), "h100") is None
    assert profile_notice({"thresholds": {"x": "value > 1.0"}}, "unknown") is None  # no profile, no notice


def test_without_a_profile_it_is_the_thresholds_as_written():
    opts = {"thresholds": {"busBandwidthGBps": "value >= 300"}}
    thresholds, sources = select_thresholds(opts, "gb300")
    assert thresholds == {"busBandwidthGBps": "value >= 300"}
    assert sources == {"busBandwidthGBps": {"kind": "explicit", "from": "thresholds.busBandwidthGBps"}}
    assert select_thresholds({}, "h100") == ({}, {})


def test_baseline_rules_for_any_gpu_and_their_kind():
    rule = {"expression": "value >= 10.0", "kind": "baseline", "from": "b.yaml"}
    opts = {"thresholdProfile": "b.yaml", PROFILE_KEY: {ANY_GPU: {"busBandwidthGBps": rule}}}
    assert select_thresholds(opts, "b200") == ({"busBandwidthGBps": "value >= 10.0"},
                                               {"busBandwidthGBps": {"kind": "baseline", "from": "b.yaml"}})
    assert profile_notice(opts, "b200") is None


def test_explicit_thresholds_plain_keys_for_an_unknown_gpu():
    opts = {"thresholds": {"busBandwidthGBps": "value >= 300", "h100": {"algBandwidthGBps": "value >= 1.0"}}}
    assert select_thresholds(opts, "unknown")[0] == {"busBandwidthGBps": "value >= 300"}
    assert select_thresholds(opts, "h100")[0] == {"busBandwidthGBps": "value >= 300", "algBandwidthGBps": "value >= 1.0"}


def test_threshold_metrics_are_every_metric_some_gpu_may_be_judged_on():
    opts = options(thresholds={"x": "value > 1.0", "a100": {"y": "value > 1.0"}})
    assert threshold_metrics(opts) == ["algBandwidthGBps", "busBandwidthGBps", "x", "y"]
    assert threshold_metrics({}) == []
