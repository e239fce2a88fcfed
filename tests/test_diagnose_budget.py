"""The diagnose's round budget (`planner.round_budget`) and what it leaves on the report when it runs out.

The measurements are scripted (as in test_diagnose_probe.py): a bad link fails every job that holds both its ends
(230 of 380 GB/s) and nothing else fails. What that proves is the planner's bookkeeping when its rounds run out and
how findings extend them; how often a real search runs out is the benchmark's question (README's grid).
"""

from __future__ import annotations

import random

from nvcre_hera import judge
from nvcre_hera.diagnose import probe
from nvcre_hera.diagnose.planner import BUDGET_CAP, ROUND_BUDGET, round_budget
from nvcre_hera.report import card, html

from test_diagnose_intermittent import _config, _drive

OK, LINK = 380.0, 230.0
FULL = [{"id": "full", "busBandwidthGBps": LINK, "status": "ok"}]
LINKS = [(1, 9), (5, 20)]  # two bad links among 32 nodes, found one after the other (about 28 rounds)


def _measure(nodes: list[int], _rnd: int) -> dict:
    bad = any(a in nodes and b in nodes for a, b in LINKS)
    return {"busBandwidthGBps": LINK if bad else OK, "status": "ok"}


def _released(out: dict) -> set[int]:
    return {x for group in out["releases"] for lo, hi in group["nodes"] for x in range(lo, hi)}


def test_a_search_cut_off_by_its_budget_leaves_the_failing_group_unresolved_and_releases_none_of_it():
    """Four rounds, and more while the probe narrows a failing union (capped at BUDGET_CAP times the base, 12), are
    too few for either link. Before, the open probe was dropped at the end: no suspect, no fault, nothing
    unresolved, and all 32 nodes released, the links' ends among them."""
    out, rounds = _drive(_measure, _config(32, maxRounds=4), FULL)
    assert len(rounds) == 12 == BUDGET_CAP * 4
    assert out["infrastructureFaults"] == [] and out["suspects"] == []
    assert any({1, 9, 5, 20} <= set(group) for group in out["unresolved"])
    assert not _released(out) & {1, 9, 5, 20}
    assert out["stats"]["stoppedAtRoundBudget"] is True


def test_each_finding_buys_the_rounds_of_one_more_probe():
    """With 20 rounds the first link is found (round 14) but the second is not, on a fixed budget: it was left
    unresolved with 31 nodes. Each finding now adds 2 × `probe.link_rounds(32)` = 20 rounds, and both are found."""
    out, rounds = _drive(_measure, _config(32, maxRounds=20), FULL, limit=60)
    pairs = sorted(sorted(map(tuple, f["between"])) for f in out["infrastructureFaults"])
    assert pairs == [[(1,), (9,)], [(5,), (20,)]]
    assert 20 < len(rounds) <= 20 + 2 * probe.link_rounds(32)
    assert out["unresolved"] == [] and "stoppedAtRoundBudget" not in out["stats"]


def test_a_search_that_finishes_inside_its_budget_is_not_marked_cut():
    out, _rounds = _drive(_measure, _config(32), FULL, limit=60)
    assert len(out["infrastructureFaults"]) == 2 and "stoppedAtRoundBudget" not in out["stats"]


def test_link_rounds_by_hand():
    # 1.5 rounds per halving of both sides from n/2 down to one node, rounded up, plus the 4 consistency rounds:
    # 32 → log2 16 = 4 → 6 + 4; 64 → 5 → 7.5 → 8 + 4; 1024 → 9 → 13.5 → 14 + 4; 4096 → 11 → 16.5 → 17 + 4
    assert [probe.link_rounds(n) for n in (32, 64, 1024, 4096)] == [10, 12, 18, 21]


def test_the_budget_grows_with_findings_up_to_three_times_the_base():
    state = {"n": 1024, "acc": [], "infra": [], "sc": {"nr": 3}}
    assert ROUND_BUDGET == 48
    assert round_budget(state, {}) == 48 + 3  # the near-miss phase's 3 rounds are its own
    state["infra"] = [{}]
    assert round_budget(state, {}) == 48 + 36 + 3  # one finding at 1024 nodes: 2 × 18
    state["acc"] = [{}]
    assert round_budget(state, {}) == 48 + 72 + 3  # two
    state["acc"] = [{}, {}]
    assert round_budget(state, {}) == 144 + 3  # three: 48 + 108, capped at three times 48
    assert round_budget({"n": 32, "acc": [{}], "infra": []}, {"maxRounds": 8}) == 24  # capped: 8 + 20


def test_a_probe_narrowing_a_failing_union_adds_one_probe_s_rounds_while_it_is_open():
    state = {"n": 4096, "acc": [], "infra": [], "work": []}
    assert round_budget(state, {}) == 48
    state["work"] = [{"k": "B", "ph": "re"}, {"k": "B", "ph": "pairs"}, {"k": "K"}]  # no union has failed yet
    assert round_budget(state, {}) == 48
    state["work"].append({"k": "B", "ph": "nar"})
    assert round_budget(state, {}) == 48 + 21  # probe.link_rounds(4096)
    state["work"].append({"k": "B", "ph": "cf"})
    assert round_budget(state, {}) == 48 + 42  # two under way
    state["infra"] = [{}]
    assert round_budget(state, {}) == 48 + 42 + 42  # and a finding
    state["work"].append({"k": "B", "ph": "nar"})
    assert round_budget(state, {}) == 144  # three under way: 48 + 63 + 42, capped at three times 48
    # NVCRE's own probe (halving) keeps NVCRE's budget
    assert round_budget({"n": 4096, "acc": [], "infra": [], "work": [{"k": "B", "ph": "nar", "nv": True}]}, {}) == 48


def test_single_links_at_4096_nodes_the_benchmark_lost():
    """`nvcre bench diagnose --nodes 4096 --faults 1 --fault-kind link --strategies adaptive` lost 11 of its first 100
    links on cf471d7; five of them, one per way it went wrong: a 2.4 σ low part chased before the probe (seeds 45,
    64), a dip deeper than the link followed by the narrowing (21), and a probe cut off by the budget a few rounds
    short of the pair after a dip's detour (47, 78). Each is now pinpointed. (The benchmark's oracle: what is proven
    is the planner's reaction to its numbers.)"""
    from nvcre_hera.diagnose.bench import kind_oracle, link_scores, planner_config
    from nvcre_hera.diagnose.oracle import run

    for seed in (21, 45, 47, 64, 78):
        oracle, _bad = kind_oracle(4096, 1, "link", 0.8, 0.03, random.Random(seed), 0.01)
        trace = run(oracle, planner_config("adaptive", 4096, 8, seed), random.Random(seed * 7919 + 17), full=True)
        found, _false = link_scores(sorted(oracle.links), trace.final["infrastructureFaults"])
        assert found == 1 and trace.accused == set(), seed



def test_four_links_at_4096_nodes_are_not_cut_short_by_the_cap_or_the_restarts():
    """`nvcre bench diagnose --nodes 4096 --faults 4 --fault-kind link --strategies adaptive` on 51145d2: seeds 7 and
    18 found 3 of their 4 links and stopped at the round cap (96, twice the base); seeds 1 and 12 found 2, then
    their restarts beyond one per finding (2) found nothing, and the whole rest was left unresolved. With the cap
    at BUDGET_CAP (3) times the base and MAX_RESTARTS at 3, all four links of each are pinpointed, each in 101-137
    rounds: past the old cap, inside the new one.
    (The benchmark's oracle, as above.)"""
    from nvcre_hera.diagnose.bench import kind_oracle, link_scores, planner_config
    from nvcre_hera.diagnose.oracle import run

    for seed in (1, 7, 12, 18):
        oracle, _bad = kind_oracle(4096, 4, "link", 0.8, 0.03, random.Random(seed), 0.01)
        trace = run(oracle, planner_config("adaptive", 4096, 8, seed), random.Random(seed * 7919 + 17), full=True)
        found, false = link_scores(sorted(oracle.links), trace.final["infrastructureFaults"])
        assert (found, false) == (4, 0) and trace.accused == set(), seed
        assert ROUND_BUDGET * 2 < trace.final["stats"]["rounds"] <= ROUND_BUDGET * BUDGET_CAP, seed  # past the old cap
        assert "stoppedAtRoundBudget" not in trace.final["stats"], seed

def test_the_report_says_the_diagnose_stopped_at_its_budget():
    entry = {"jobs": 0, "failedGroups": [], "failureReason": None, "status": "Passed"}
    verdict = {"suspects": [], "infrastructureFaults": [], "nodeCount": 32,
               "unresolved": [{"nodeCount": 32, "nodes": [f"gpu-node-{i:02d}" for i in range(32)]}],
               "stats": {"jobs": 40, "rounds": 10, "nodeMinutes": 120.0, "stoppedAtRoundBudget": True}}
    judge._add_diagnose(entry, verdict)
    assert entry["status"] == "Failed" and entry["failureReason"] == "Unresolved"
    assert entry["diagnose"]["stoppedAtRoundBudget"] is True
    assert "round budget" in entry["failedGroups"][0]["message"]
    plain = {"jobs": 0, "failedGroups": [], "failureReason": None, "status": "Passed"}
    judge._add_diagnose(plain, {**verdict, "stats": {"jobs": 40, "rounds": 10, "nodeMinutes": 120.0}})
    assert "stoppedAtRoundBudget" not in plain["diagnose"]
    assert "round budget" not in plain["failedGroups"][0]["message"]


def test_a_restart_that_found_something_does_not_count_against_the_restarts():
    """Four links among 64 nodes: each failing final check after a finding starts the search over on the rest. With
    the two restarts counted whatever they found, the third failing check left the rest unresolved (groups of 59
    and 60 nodes) and 5–20 was never looked for; a restart now counts only beyond one per finding."""
    links = [(1, 9), (5, 20), (40, 41), (50, 62)]

    def measure(nodes: list[int], _rnd: int) -> dict:
        return {"busBandwidthGBps": LINK if any(a in nodes and b in nodes for a, b in links) else OK, "status": "ok"}

    out, _rounds = _drive(measure, _config(64), FULL, limit=120)
    pairs = {tuple(sorted(x for side in f["between"] for x in side)) for f in out["infrastructureFaults"]}
    assert {(1, 9), (5, 20), (40, 41), (50, 62)} <= pairs
    assert out["unresolved"] == [] and out["suspects"] == []


def test_the_card_and_the_html_report_say_the_diagnose_stopped_at_its_budget():
    diagnose = {"nodeCount": 32, "jobs": 40, "rounds": 10, "nodeMinutes": 120.0, "suspects": [],
                "infrastructureFaults": [], "unresolved": [{"nodeCount": 32, "nodes": []}]}
    for shown in ("\n".join(card._diagnose_lines({**diagnose, "stoppedAtRoundBudget": True})),
                  html._diagnose({**diagnose, "stoppedAtRoundBudget": True})):
        assert "stopped at its round budget" in shown and "unresolved" in shown
    for shown in ("\n".join(card._diagnose_lines(diagnose)), html._diagnose(diagnose)):
        assert "round budget" not in shown


def test_a_search_cut_off_before_its_final_check_vouches_for_no_part_that_merely_passed():
    """Links 5–8 and 24–2 among 32 nodes, 4 rounds (12 with the probe under way and its finding): the search
    pins 5–8 down and is cut off. 24 and 2 each passed in a part of their own, and their union never ran; before,
    both were released as healthy. With no final check passed, the rest is one unresolved group."""
    links = [(5, 8), (24, 2)]

    def measure(nodes: list[int], _rnd: int) -> dict:
        return {"busBandwidthGBps": LINK if any(a in nodes and b in nodes for a, b in links) else OK, "status": "ok"}

    out, rounds = _drive(measure, _config(32, maxRounds=4), FULL)
    assert len(rounds) == 12 and out["stats"]["stoppedAtRoundBudget"] is True
    assert [f["between"] for f in out["infrastructureFaults"]] == [[[5], [8]]]
    assert not _released(out) & {5, 8, 24, 2}
    assert any({24, 2} <= set(group) and len(group) == 31 for group in out["unresolved"])


def test_no_bad_link_has_both_ends_released_whatever_the_budget():
    """The fail-closed property, on scripted links (the measurements are ours, see the module docstring): 120
    random cases of 1–3 bad links among 16–48 nodes and a budget of 3–40 rounds, `adaptive` (the workflow's
    default strategy; NVCRE's halving baseline releases what its chunks cleared, as NVCRE does). However the
    diagnose ends, some end of every bad link is accused, on a reported fault or unresolved."""
    for seed in range(120):
        rng = random.Random(seed)
        n, k = rng.choice([16, 32, 48]), rng.randint(1, 3)
        ends = rng.sample(range(n), 2 * k)
        links = [(ends[2 * i], ends[2 * i + 1]) for i in range(k)]

        def measure(nodes: list[int], _rnd: int, links=links) -> dict:
            bad = any(a in nodes and b in nodes for a, b in links)
            return {"busBandwidthGBps": LINK if bad else OK, "status": "ok"}

        out, _rounds = _drive(measure, _config(n, maxRounds=rng.randint(3, 40)), FULL, limit=300)
        released = _released(out)
        assert all(not (a in released and b in released) for a, b in links), (seed, links, out["stats"])
