"""Diagnose's round history (issue 12) and release rounds (issue 11): what the planner records per round, how the
plan step and the judge carry it to the report, and how the chart and the card show it.

The expectations are worked out here from the tests the planner issued and the outcomes this file decided for
them (a noise-free oracle: a test fails exactly when it holds the faulty node), never read back from the code
under test."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nvcre_hera.diagnose import plan
from nvcre_hera.diagnose.oracle import Oracle
from nvcre_hera.judge import _round_history
from nvcre_hera.local_run import run_local
from nvcre_hera.report.card import round_lines
from nvcre_hera.report.charts import diagnose_timeline

ROOT = Path(__file__).resolve().parent.parent


def _config(strategy: str, n: int, **extra) -> dict:
    return {"strategy": strategy, "nodeCount": n, "cliques": None, "maxConcurrent": 8, "minGroupSize": 2,
            "baselineGBps": None, "threshold": None, **extra}


def _drive(strategy: str, n: int, oracle: Oracle, clock: bool = True, seed: int = 0):
    """Run the planner to the end; returns (final answer, [(tests, outcomes) per round], clock readings)."""
    rng = random.Random(seed)
    results = [{"id": "full", **oracle.measure(list(range(n)), rng)}]
    state, rounds, readings = None, [], []
    for call in range(200):
        now = 1000.0 + 100.0 * call if clock else None
        readings.append(now)
        out = plan(state, results, _config(strategy, n), now=now)
        if out["done"]:
            return out, rounds, readings
        tests = out["tests"]
        results = [{"id": t["id"], **oracle.measure(t["nodes"], rng)} for t in tests]
        rounds.append([(t["nodes"], r) for t, r in zip(tests, results)])
        state = out["state"]
    raise AssertionError("planner did not finish")


@pytest.mark.parametrize("strategy", ["adaptive", "halving"])
@pytest.mark.parametrize("n,bad", [(64, 37), (64, 0), (48, 47), (128, 77)])
def test_cleared_per_round_are_the_nodes_its_passing_tests_exonerated(strategy: str, n: int, bad: int) -> None:
    oracle = Oracle(n=n, sigma=0.0, dip=0.0, factors={bad: 0.5})
    final, rounds, readings = _drive(strategy, n, oracle)
    assert [s["node"] for s in final["suspects"]] == [bad]
    history = final["history"]
    assert [h["round"] for h in history] == list(range(1, len(rounds) + 1))
    cleared_before: set[int] = set()
    for r, (h, tests) in enumerate(zip(history, rounds), start=1):
        passing = [set(nodes) for nodes, _ in tests if bad not in nodes]
        expected = set().union(*passing) - cleared_before
        got = {x for lo, hi in h["cleared"] for x in range(lo, hi)}
        assert got == expected, (r, sorted(got ^ expected))
        assert h["tests"] == len(tests)
        assert h["failed"] == sum(1 for nodes, _ in tests if bad in nodes)
        sizes = sorted(len(nodes) for nodes, _ in tests)
        assert sorted(s for x in h["testSizes"] for s in [x["nodes"]] * x["tests"]) == sizes
        reused = {x for nodes, _ in tests for x in nodes if x in cleared_before}
        assert {x for lo, hi in h["reused"] for x in range(lo, hi)} == reused
        # round r's results are read by plan call r (call 0 started the search)
        assert h["endedAfterSec"] == readings[r] - readings[0]
        assert h["doubted"] == []
        cleared_before |= got
    assert cleared_before == set(range(n)) - {bad}
    if strategy == "halving":  # its chunks passed apart and the rest never ran together: it vouches for no node
        assert final["releases"] == []
        return
    # release: every healthy node at the last round that had it in a test (it was cleared by then)
    last = {x: r for r, tests in enumerate(rounds, start=1) for nodes, _ in tests for x in nodes}
    expected_groups: dict[int, set[int]] = {}
    for x in set(range(n)) - {bad}:
        expected_groups.setdefault(last[x], set()).add(x)
    got_groups = {g["round"]: {x for lo, hi in g["nodes"] for x in range(lo, hi)} for g in final["releases"]}
    assert got_groups == expected_groups
    for g in final["releases"]:
        assert g["releasedAfterSec"] == readings[g["round"]] - readings[0]


def test_without_a_clock_the_history_keeps_round_numbers_only() -> None:
    final, rounds, _ = _drive("adaptive", 32, Oracle(n=32, sigma=0.0, dip=0.0, factors={5: 0.5}), clock=False)
    assert len(final["history"]) == len(rounds) > 0
    assert all(h["endedAfterSec"] is None for h in final["history"])
    assert final["releases"] and all(g["releasedAfterSec"] is None for g in final["releases"])


@pytest.mark.parametrize("strategy", ["adaptive", "halving"])
def test_a_crashing_node_counts_its_tests_as_failed_and_is_never_released(strategy: str) -> None:
    oracle = Oracle(n=32, sigma=0.0, dip=0.0, crashes={9})
    final, rounds, _ = _drive(strategy, 32, oracle)
    for h, tests in zip(final["history"], rounds):
        assert h["failed"] == sum(1 for _, r in tests if r["status"] != "ok")
    released = {x for g in final["releases"] for lo, hi in g["nodes"] for x in range(lo, hi)}
    # adaptive's final check ran the 31 others together; halving's chunks never did, so it releases none
    assert released == (set(range(32)) - {9} if strategy == "adaptive" else set())


def test_a_flapping_search_clears_only_nodes_that_passed_and_releases_no_suspect() -> None:
    """An intermittent node: nodes are cleared only after a test of theirs measured healthy, and nodes it put back
    in doubt had been cleared before."""
    oracle = Oracle(n=64, sigma=0.01, dip=0.0, factors={21: 0.6}, flaps={21: 0.5})
    final, rounds, _ = _drive("adaptive", 64, oracle, seed=3)
    healthy = oracle.healthy
    passed: set[int] = set()
    cleared: set[int] = set()
    for h, tests in zip(final["history"], rounds):
        for nodes, r in tests:
            v = r["busBandwidthGBps"]
            if v is not None and v >= 0.9 * healthy(nodes):
                passed |= set(nodes)
        got = {x for lo, hi in h["cleared"] for x in range(lo, hi)}
        doubted = {x for lo, hi in h["doubted"] for x in range(lo, hi)}
        assert got <= passed
        assert doubted <= cleared
        cleared = (cleared | got) - doubted
    released = {x for g in final["releases"] for lo, hi in g["nodes"] for x in range(lo, hi)}
    assert not released & {s["node"] for s in final["suspects"]}
    assert released <= cleared


def test_the_judge_names_small_sets_and_range_ends_and_never_guesses() -> None:
    compact = {"rounds": [[1, 4, 1, [[8, 4]], [], 24, 0, 0, 300],
                          [2, 2, 1, [[4, 2]], [[8, 10], [12, 13]], 3, 1, 0, 610]],
               "released": [[2, 610, [[0, 8], [12, 32]], 28], [3, None, [[8, 10]], 2], [4, 700, [[32, 34]], 40]],
               "names": {"p": "n-", "i": [0, 7, 8, 9, 12, 31], "s": ["00", "07", "08", "09", "12", "31"]}}
    out = _round_history(compact, 80)
    r1, r2 = out["roundHistory"]
    assert r1["cleared"] == {"nodeCount": 24}  # too large to be named: its count only
    assert r2["cleared"] == {"nodeCount": 3, "nodes": ["n-08", "n-09", "n-12"]}
    assert (r2["tests"], r2["failed"], r2["clearedNodesReused"], r2["endedAfterSec"]) == (2, 1, 1, 610)
    assert r1["testSizes"] == [{"nodes": 8, "tests": 4}]
    big, small, cut = out["releases"]
    assert cut == {"releasedAtRound": 4, "releasedAfterSec": 700, "nodeCount": 40, "rangesOmitted": True,
                   "ranges": [{"first": "index 32", "last": "index 33", "count": 2}]}
    assert big == {"releasedAtRound": 2, "releasedAfterSec": 610, "nodeCount": 28,
                   "ranges": [{"first": "n-00", "last": "n-07", "count": 8},
                              {"first": "n-12", "last": "n-31", "count": 20}]}
    assert small == {"releasedAtRound": 3, "releasedAfterSec": None, "nodeCount": 2, "nodes": ["n-08", "n-09"]}
    assert out["nodesNotReleased"] == 80 - 28 - 2 - 40
    # a name the plan step did not send is shown as the index, not made up
    partial = _round_history({**compact, "names": {"p": "n-", "i": [0], "s": ["00"]}}, 80)
    assert partial["releases"][0]["ranges"][0] == {"first": "n-00", "last": "index 7", "count": 8}


def test_a_search_that_ran_no_round_holds_no_node() -> None:
    out = _round_history({"rounds": [], "released": [], "names": {"p": "", "i": [], "s": []}}, 16)
    assert out == {"roundHistory": [], "releases": []}


def test_a_verdict_without_history_gets_no_history_fields() -> None:
    from nvcre_hera.judge import judge

    verdict = {"stats": {"jobs": 3, "rounds": 2, "nodeMinutes": 10.0}, "nodeCount": 16, "suspects": []}
    base = {"domain": "communication", "variant": "nccl-all-reduce", "testScale": "diagnose",
            "thresholds": {}, "diagnose": verdict,
            "results": [{"group": "diagnose jobs", "nodes": [], "status": "ok", "metrics": {}}]}
    report = judge("c", {"totalNodes": 16, "selectedNodes": 16}, [base])
    d = report["categories"][0]["diagnose"]
    assert "roundHistory" not in d and "releases" not in d and "nodesNotReleased" not in d


def test_the_local_run_reports_rounds_and_releases_by_name() -> None:
    local = run_local(str(ROOT / "examples" / "certifications" / "diagnose.yaml"),
                      str(ROOT / "examples" / "clusters" / "two-faulty-64.yaml"))
    d = local.report["categories"][0]["diagnose"]
    history = d["roundHistory"]
    # the history agrees with the planner's own counters, kept apart from it
    assert [h["round"] for h in history] == list(range(1, d["rounds"] + 1))
    assert sum(h["tests"] for h in history) == d["jobs"]
    ended = [h["endedAfterSec"] for h in history]
    assert all(isinstance(e, int) for e in ended) and ended == sorted(ended) and ended[0] > 0
    suspects = {s["node"] for s in d["suspects"]}
    assert suspects == {"gpu-node-13", "gpu-node-50"}
    # the cluster's node names, in name order (every node is eligible here), expand the named ranges
    names = sorted(n["metadata"]["name"] for n in local.cluster.list_nodes())
    assert len(names) == 64
    released: list[str] = []
    for g in d["releases"]:
        got = list(g.get("nodes") or [])
        for rng in g.get("ranges") or []:
            span = names[names.index(rng["first"]):names.index(rng["last"]) + 1]
            assert len(span) == rng["count"]
            got += span
        assert len(got) == g["nodeCount"] and "rangesOmitted" not in g
        released += got
    assert not suspects & set(released) and len(set(released)) == len(released)
    assert d["nodesNotReleased"] == 64 - len(released) >= 2
    # each suspect's evidence comes from a round that had a failed test
    rounds_failed = {h["round"] for h in history if h["failed"]}
    for s in d["suspects"]:
        assert {int(e["test"].split("-")[0][1:]) for e in s["evidence"]} <= rounds_failed
    # names never travel in the recursion's state, only in the final verdict
    for node in local.run.nodes.values():
        if node.template == "plan-0":
            assert "gpu-node" not in node.outputs.get("parameters", {}).get("state", "")


def _report_diagnose() -> dict:
    return {"rounds": 3, "jobs": 11, "nodeMinutes": 100.0, "nodeCount": 64,
            "suspects": [{"node": "gpu-node-38", "evidence": [{"test": "r3-t1", "ratio": 0.5}]}],
            "roundHistory": [
                {"round": 1, "tests": 6, "failed": 1,
                 "testSizes": [{"nodes": 11, "tests": 4}, {"nodes": 10, "tests": 2}],
                 "cleared": {"nodeCount": 54}, "clearedNodesReused": 0, "doubted": 0, "endedAfterSec": 300},
                {"round": 2, "tests": 3, "failed": 1, "testSizes": [{"nodes": 3, "tests": 1}, {"nodes": 2, "tests": 2}],
                 "cleared": {"nodeCount": 5}, "clearedNodesReused": 0, "doubted": 0, "endedAfterSec": 600},
                {"round": 3, "tests": 2, "failed": 1,
                 "testSizes": [{"nodes": 62, "tests": 1}, {"nodes": 2, "tests": 1}],
                 "cleared": {"nodeCount": 4}, "clearedNodesReused": 59, "doubted": 0, "endedAfterSec": 900}],
            "releases": [{"releasedAtRound": 1, "nodeCount": 2, "nodes": ["a", "b"]},
                         {"releasedAtRound": 3, "nodeCount": 61, "ranges": []}],
            "nodesNotReleased": 1}


def test_the_timeline_chart_has_one_element_per_round_for_each_history_row() -> None:
    svg = diagnose_timeline(_report_diagnose())
    root = ET.fromstring(svg)
    cells = {(g.get("class"), int(g.get("data-round"))): g for g in root.iter("g") if g.get("data-round")}
    assert {(k, r) for k, r in cells} == {(k, r) for k in ("hr", "hf", "hc") for r in (1, 2, 3)}
    assert [cells[("hr", r)].get("data-value") for r in (1, 2, 3)] == ["6", "3", "2"]
    assert [cells[("hf", r)].get("data-value") for r in (1, 2, 3)] == ["1", "1", "1"]
    # nodes released so far: 2 after round 1, still 2 after round 2, 2 + 61 after round 3
    assert [cells[("hc", r)].get("data-value") for r in (1, 2, 3)] == ["2", "2", "63"]
    assert cells[("hr", 1)].find("title").text.startswith("round 1: 6 tests (4 × 11 nodes, 2 × 10 nodes)")
    assert cells[("hc", 3)].find("title").text == "after round 3: 63 nodes released of 64"
    # the bars grow with the value: round 3's released bar is the tallest of its row
    heights = [int(cells[("hc", r)].find("rect").get("height")) for r in (1, 2, 3)]
    assert heights[0] == heights[1] < heights[2]
    assert len(list(root.iter("circle"))) == 1  # the suspect's evidence mark is still there
    caption = [t.text for t in root.iter("text") if t.get("class") == "msg"][0]
    assert "not in the report" not in caption and "released" in caption


def test_a_report_without_history_says_so_in_the_chart() -> None:
    d = {k: v for k, v in _report_diagnose().items() if k not in ("roundHistory", "releases")}
    root = ET.fromstring(diagnose_timeline(d))
    assert not [g for g in root.iter("g") if g.get("data-round")]
    caption = [t.text for t in root.iter("text") if t.get("class") == "msg"][0]
    assert "no round history" in caption


def test_card_has_one_line_per_round() -> None:
    assert round_lines(_report_diagnose()) == [
        "round 1: 6 tests, 1 failed, 54 nodes cleared, 2 released (ended at 5m0s)",
        "round 2: 3 tests, 1 failed, 5 nodes cleared, 0 released (ended at 10m0s)",
        "round 3: 2 tests, 1 failed, 4 nodes cleared, 61 released (ended at 15m0s)",
        "not released: 1 node (accused, on a fault, unresolved or never cleared)",
    ]
    assert round_lines({"rounds": 2}) == []
