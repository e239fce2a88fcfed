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
