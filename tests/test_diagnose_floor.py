"""A cluster that runs evenly but below the user's threshold: diagnose finds no outlier, and must not pass."""

from __future__ import annotations

import random

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
