"""The NVCRE-compatible halving baseline: padding, confirmation with a different partner, √N screening."""

from __future__ import annotations

import math
import random

from nvcre_hera.diagnose.oracle import Oracle, run


def _config(n: int, **extra) -> dict:
    return {"strategy": "halving", "nodeCount": n, "cliques": None, "maxConcurrent": 0, "minGroupSize": 2,
            "baselineGBps": None, "threshold": None, "seed": 0, **extra}


def test_screens_sqrt_n_chunks_without_topology() -> None:
    oracle = Oracle(n=50, sigma=0.0, dip=0.0, factors={7: 0.8})
    trace = run(oracle, _config(50), random.Random(0))
    first = trace.rounds[0]
    assert len(first) == math.ceil(50 / math.ceil(math.sqrt(50)))
    assert all(len(t["nodes"]) <= 8 for t in first)


def test_small_groups_padded_with_a_healthy_node_and_confirmed_with_another() -> None:
    # 9 nodes -> chunks of 3: the failing chunk [6, 7, 8] splits into a single node and a pair
    oracle = Oracle(n=9, sigma=0.0, dip=0.0, factors={6: 0.8})
    trace = run(oracle, _config(9), random.Random(0))
    assert trace.accused == {6}
    healthy = set(range(9)) - {6}
    singles = [t for r in trace.rounds for t in r if 6 in t["nodes"] and len(t["nodes"]) == 2]
    partners = [next(x for x in t["nodes"] if x != 6) for t in singles]
    assert len(partners) >= 2 and set(partners) <= healthy
    assert len(set(partners)) == len(partners), "each confirmation uses a different partner"


def test_threshold_decides_pass_fail() -> None:
    # 10 % slow nodes pass a floor set 15 % below baseline: halving finds nothing, as NVCRE would
    oracle = Oracle(n=16, sigma=0.0, dip=0.0, factors={3: 0.9})
    trace = run(oracle, _config(16, threshold=380 * 0.85), random.Random(0))
    assert trace.accused == set()


def test_without_a_failing_run_the_whole_group_runs_once_after_the_screens_pass() -> None:
    # as the workflow runs it (no full run handed over): a link between two 4-node chunks is in no screen
    linked = Oracle(n=16, sigma=0.0, dip=0.0, links={(2, 5): 0.5})
    trace = run(linked, _config(16, threshold=300.0), random.Random(0), full=False)
    assert [sorted(t["nodes"]) for t in trace.rounds[1]] == [list(range(16))]  # the run NVCRE starts from
    assert len(trace.rounds) == 2 and trace.accused == set()
    assert trace.final["unresolved"] == [list(range(16))]  # NVCRE's stages name nothing: never a pass
    # a healthy group: the whole passes and ends it, with every node released
    healthy = run(Oracle(n=16, sigma=0.0, dip=0.0), _config(16, threshold=300.0), random.Random(0), full=False)
    assert len(healthy.rounds) == 2 and healthy.final["suspects"] == [] and healthy.final["unresolved"] == []
    assert sorted(x for g in healthy.final["releases"] for lo, hi in g["nodes"] for x in range(lo, hi)) == \
        list(range(16))
    # a failing run handed over (NVCRE's trigger) with every screen passing: no extra job, the group unresolved
    handed = run(linked, _config(16, threshold=300.0), random.Random(0), full=True)
    assert len(handed.rounds) == 1 and handed.final["unresolved"] == [list(range(16))]


def test_a_failing_pair_that_confirmation_clears_node_by_node_is_unresolved() -> None:
    # the link between 2 and 3 lies inside one chunk; the chunk fails, [2, 3] fails, each passes with another node
    oracle = Oracle(n=16, sigma=0.0, dip=0.0, links={(2, 3): 0.5})
    trace = run(oracle, _config(16, threshold=300.0), random.Random(0), full=False)
    assert trace.accused == set()
    assert trace.final["unresolved"] == [[2, 3]]
