"""What the diagnose leaves on the report when its round budget (`planner.round_budget`) runs out.

The measurements are scripted (as in test_diagnose_probe.py): a bad link fails every job that holds both its ends
(230 of 380 GB/s) and nothing else fails. What that proves is the planner's bookkeeping when its rounds run out;
how often a real search runs out is the benchmark's question (README's grid).
"""

from __future__ import annotations

from nvcre_hera import judge

from test_diagnose_intermittent import _config, _drive

OK, LINK = 380.0, 230.0
FULL = [{"id": "full", "busBandwidthGBps": LINK, "status": "ok"}]
LINKS = [(1, 9), (5, 20)]  # two bad links among 32 nodes, found one after the other


def _measure(nodes: list[int], _rnd: int) -> dict:
    bad = any(a in nodes and b in nodes for a, b in LINKS)
    return {"busBandwidthGBps": LINK if bad else OK, "status": "ok"}


def _released(out: dict) -> set[int]:
    return {x for group in out["releases"] for lo, hi in group["nodes"] for x in range(lo, hi)}


def test_a_search_cut_off_by_its_budget_leaves_the_failing_group_unresolved_and_releases_none_of_it():
    """Ten rounds are too few for either link. Before, the open probe was dropped at the end: no suspect, no
    fault, nothing unresolved, and all 32 nodes released, the links' ends among them."""
    out, rounds = _drive(_measure, _config(32, maxRounds=10), FULL)
    assert len(rounds) == 10
    assert out["infrastructureFaults"] == [] and out["suspects"] == []
    assert any({1, 9, 5, 20} <= set(group) for group in out["unresolved"])
    assert not _released(out) & {1, 9, 5, 20}
    assert out["stats"]["stoppedAtRoundBudget"] is True


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
