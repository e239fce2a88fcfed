"""A cluster that runs evenly but below the user's threshold: diagnose finds no outlier, and must not pass."""

from __future__ import annotations

import random

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.oracle import Oracle, run


def config(n: int, threshold: float | None) -> dict:
    return {"strategy": "adaptive", "nodeCount": n, "cliques": None, "maxConcurrent": 8, "minGroupSize": 2,
            "baselineGBps": None, "threshold": threshold, "seed": 1}


def test_uniform_deficit_below_threshold_is_unresolved_not_passed():
    for seed in range(5):
        trace = run(Oracle(n=32, baseline=190.0, sigma=0.01, dip=0.0), config(32, 300.0), random.Random(seed),
                    full=False)
        answer = trace.final
        assert answer["suspects"] == []
        assert [sorted(u) for u in answer["unresolved"]] == [list(range(32))]


def test_healthy_cluster_above_threshold_has_nothing_unresolved():
    trace = run(Oracle(n=32, baseline=380.0, sigma=0.01, dip=0.0), config(32, 300.0), random.Random(3), full=False)
    answer = trace.final
    assert answer["suspects"] == [] and answer["unresolved"] == []


def test_slow_node_named_and_the_rest_not_unresolved_when_healthy_meets_the_floor():
    trace = run(Oracle(n=32, baseline=380.0, sigma=0.01, dip=0.0, factors={7: 0.6}), config(32, 300.0),
                random.Random(5), full=False)
    answer = trace.final
    assert [s["node"] for s in answer["suspects"]] == [7] and answer["unresolved"] == []


def sloped(threshold: float) -> tuple[Oracle, float]:
    """64 nodes whose healthy busbw falls 2 % per octave of job size (the simulated cluster's `scale_efficiency`
    slope), node 9's NIC at 0.7: with a 340 GB/s threshold every part of ≤ 32 nodes meets it (healthy 342 at 32)
    and the 62–63 healthy nodes together do not (≈ 335)."""
    return Oracle(n=64, baseline=380.0, size_slope=0.02, sigma=0.005, dip=0.0, factors={9: 0.7}), threshold


def test_a_rest_below_the_floor_only_as_one_job_is_unresolved_not_released():
    for threshold, held in ((340.0, True), (300.0, False)):
        oracle, thr = sloped(threshold)
        trace = run(oracle, config(64, thr), random.Random(0), full=True)
        answer = trace.final
        verification = max(trace.rounds[-1], key=lambda t: len(t["nodes"]))["nodes"]  # the rest, without node 9
        released = {x for g in answer["releases"] for x in ns.to_nodes(g["nodes"])}
        assert [s["node"] for s in answer["suspects"]] == [9] and 9 not in verification
        if held:  # healthy against its parts, below the user's floor together: it vouches for none of its nodes
            assert [sorted(u) for u in answer["unresolved"]] == [sorted(verification)]
            assert not released & set(verification)
        else:
            assert answer["unresolved"] == [] and set(verification) <= released


def test_a_rest_under_a_threshold_no_job_meets_is_not_searched_again_and_again():
    # as in the workflow, no full-group run: V0 after the screens is the search's failing measurement, and the final
    # check against V0's own deficit could not pass; with no job at the threshold the search restarted twice for
    # nothing (a new search finds each part as far under it as the whole)
    for strategy in ({}, {"screens": ["loopback", "intra"]}):
        for seed in range(3):
            oracle, thr = sloped(390.0)  # above every healthy job (380 at one node)
            answer = run(oracle, {**config(64, thr), **strategy, "seed": seed}, random.Random(seed), full=False).final
            assert [s["node"] for s in answer["suspects"]] == [9], (strategy, seed)
            assert answer["state"].get("restarts", 0) == 0, (strategy, seed)
            assert [sorted(u) for u in answer["unresolved"]] == [[x for x in range(64) if x != 9]], (strategy, seed)
