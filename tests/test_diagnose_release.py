"""Fail closed on random mixes: a diagnose never releases a node it has not run together with the rest.

The oracle (`nvcre_hera.diagnose.oracle`, the benchmark's stand-in for a cluster) draws 0–4 strong faults per case
(NICs at 0.5–0.7, GPUs or NVLink at 0.3–0.5, bad links at 0.5–0.7, crashed nodes) among 16–200 nodes, σ 2 %, with
or without 1 % dips; the planner runs `adaptive` with or without screens, from a failing full run (NVCRE's trigger,
no threshold) or as the workflow does (no full run, the user's threshold), sometimes with a short round budget.
Faults this strong fail every job they are in, so a release of a bad node or of both ends of a bad link is the
planner's bookkeeping, not bad luck. What this does not prove: how often weaker faults are missed (the benchmark's
recall), or anything about the real run step (the workflow tests).

Found with it: on the code before, 117 of 1300 cases released both ends of a bad link (26 of them as the workflow
runs, with the user's threshold) and one faulty cluster came out clean. Three holes: a final check that ran beside the
last splits left their nodes out, and when those passed on their own the whole rest was released; a search out of
rounds with no work open and no final check passed released the rest; and without a threshold the screens' V0 was
judged only against the failing full run, so a link shallower than the fault the screens found was released with
the rest (67 cases were left after the first two fixes, all of this kind). Now: none.
"""

from __future__ import annotations

import random

import pytest

from nvcre_hera.diagnose.bench import planner_config
from nvcre_hera.diagnose.oracle import Oracle, run

CASES = 400


def _case(seed: int) -> tuple[Oracle, dict, bool]:
    r = random.Random(seed)
    n = r.choice([16, 24, 32, 48, 64, 96, 128, 200])
    oracle = Oracle(n=n, sigma=0.02, dip=r.choice([0.0, 0.01]))
    free = list(range(n))
    r.shuffle(free)
    for _ in range(r.randint(0, 4)):
        kind = r.choice(["nic", "gpu", "nvlink", "link", "crash"])
        if kind == "link":
            a, b = sorted([free.pop(), free.pop()])
            oracle.links[(a, b)] = r.uniform(0.5, 0.7)
            continue
        x = free.pop()
        if kind == "crash":
            oracle.crashes.add(x)
        else:
            scope = {"nic": oracle.factors, "gpu": oracle.gpu_factors, "nvlink": oracle.nvlink_factors}[kind]
            scope[x] = r.uniform(0.5, 0.7) if kind == "nic" else r.uniform(0.3, 0.5)
    config = planner_config(r.choice(["adaptive", "screened"]), n, r.choice([0, 4, 8]), seed)
    if r.random() < 0.3:
        config["maxRounds"] = r.randint(3, 30)
    workflow = r.random() < 0.5
    if workflow:
        config["threshold"] = round(0.9 * oracle.healthy(list(range(n))), 2)
    return oracle, config, not workflow


def _released(answer: dict) -> set[int]:
    return {x for group in answer["releases"] for lo, hi in group["nodes"] for x in range(lo, hi)}


@pytest.mark.parametrize("block", range(4))
def test_no_bad_node_and_no_bad_link_is_released(block):
    for seed in range(block * CASES // 4, (block + 1) * CASES // 4):
        oracle, config, full = _case(seed)
        trace = run(oracle, config, random.Random(seed * 31 + 7), full=full, max_calls=400)
        answer, released = trace.final, _released(trace.final)
        assert not released & oracle.bad_nodes(), (seed, config)
        for a, b in oracle.links:
            assert not {a, b} <= released, (seed, (a, b), config)
        if oracle.bad_nodes() or oracle.links:  # a faulty cluster never comes out clean
            assert answer["suspects"] or answer["infrastructureFaults"] or answer["unresolved"], (seed, config)


def _mixed_case(seed: int) -> tuple[Oracle, dict, bool]:
    """Weaker faults too (× 0.6–0.95), flapping NICs (slow in half their jobs), σ 2–5 %, 0–5 % dips, 16–256 nodes,
    thresholds at 80–95 % of healthy: misses are allowed here, releases nothing held together are not."""
    r = random.Random(seed)
    n = r.choice([16, 32, 64, 128, 256])
    oracle = Oracle(n=n, sigma=r.choice([0.02, 0.03, 0.05]), dip=r.choice([0.0, 0.01, 0.05]))
    free = list(range(n))
    r.shuffle(free)
    for _ in range(r.randint(0, 4)):
        kind, factor = r.choice(["nic", "gpu", "link", "flap", "crash"]), r.uniform(0.6, 0.95)
        if kind == "link":
            a, b = sorted([free.pop(), free.pop()])
            oracle.links[(a, b)] = factor
            continue
        x = free.pop()
        if kind == "crash":
            oracle.crashes.add(x)
        elif kind == "gpu":
            oracle.gpu_factors[x] = r.uniform(0.3, 0.9)
        else:
            oracle.factors[x] = factor
            if kind == "flap":
                oracle.flaps[x] = 0.5
    config = planner_config(r.choice(["adaptive", "screened"]), n, r.choice([0, 4, 8]), seed)
    if r.random() < 0.3:
        config["maxRounds"] = r.randint(3, 30)
    workflow = r.random() < 0.5
    if workflow:
        config["threshold"] = round(r.uniform(0.8, 0.95) * oracle.healthy(list(range(n))), 2)
    return oracle, config, not workflow


@pytest.mark.parametrize("block", range(4))
def test_every_released_node_was_held_by_the_final_job_that_settled_the_rest(block):
    """Whatever the search missed, what it releases ran together in the job that settled the rest (`vs`). Before,
    a search whose last part had no partner left to re-measure it ended with nothing scheduled and released the
    rest, which no final job had held (12 of 2000 cases; this generator's seed 162 then: a crash, a flapper and the
    link 3–8 among 16 nodes, both ends released)."""
    from nvcre_hera.diagnose import nodesets as ns

    for seed in range(block * CASES // 4, (block + 1) * CASES // 4):
        oracle, config, full = _mixed_case(seed)
        answer = run(oracle, config, random.Random(seed * 31 + 7), full=full, max_calls=400).final
        released = _released(answer)
        assert released <= set(ns.to_nodes(answer["state"].get("vs") or [])), (seed, config)


def test_a_search_stuck_without_a_partner_leaves_the_rest_unresolved():
    """Every case of this generator whose search ended with nothing left to schedule before a final check held the
    rest (stuck: a part with no partner left to re-measure it; not cut off by the budget) releases nothing, and each
    node it neither accused nor placed on a fault is in an unresolved group. Before ff69323 such a search released
    the rest (seed 162 then: a crash, a flapper and the link 3–8 among 16 nodes, both ends released). Which seeds
    get stuck moves with every change to the search, so the test finds them rather than naming one."""
    from nvcre_hera.diagnose import nodesets as ns
    from nvcre_hera.diagnose.state import accused_or_on_a_fault

    stuck = []
    for seed in range(CASES):
        oracle, config, full = _mixed_case(seed)
        answer = run(oracle, config, random.Random(seed * 31 + 7), full=full, max_calls=400).final
        st = answer["state"]
        if st["st"] != "adaptive" or st.get("verified") or st.get("cut"):
            continue
        stuck.append(seed)
        assert _released(answer) == set(), seed
        held = accused_or_on_a_fault(st)
        open_ = {x for group in answer["unresolved"] for x in group}
        assert {x for x in ns.to_nodes(st["G"]) if x not in held} <= open_, seed
    assert stuck  # the generator still drives searches into this corner (3 of its 400 cases on 2836c6f)

# Through the workflow path (compile → local executor → plan step → simulated cluster, `diagnose.yaml`, the user's
# threshold): five of the 16 cases of 200 that `bench/bench_diagnose_release.py` found releasing a faulty node or
# both ends of a bad link before (a crash and a link; two slow NICs and a link; a crash and a link among 8; a slow
# GPU, a slow NIC and a link; two slow NICs among 8). The simulated cluster stands in for the run step's jobs; what
# the real Argo controller does with the same plan steps is the e2e tests' part.
@pytest.mark.parametrize("seed", [14, 22, 57, 82, 190])
def test_the_workflow_releases_no_faulty_node_and_no_bad_link(seed):
    from bench_scripts import load

    assert load("bench_diagnose_release").released_wrongly(seed) == []
