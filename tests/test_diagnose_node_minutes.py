"""Issue 11: the report's diagnose GPU node-minutes are the jobs' measured run times, summed by the workflow itself
(each result's `nodeSec`, the plan step's ledger, the judge), not the planner's 1 + 0.4·log2(n) estimate; and its
job count is the jobs the cluster ran, every repeat included.

The expectation is the simulator's own record of every job it ran (`SimCluster.job_records`: its nodes, when it
started and ended), not anything the steps computed. Stand-in: the simulated cluster replaces a real one, so its
clock is simulated time; what this proves is that every job's time reaches the report through the compiled
workflow (results, store, recursion, judge), not that a real cluster's jobs take these times. `make e2e` prints the
same figure from the real Argo controller.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nvcre_hera import judge
from nvcre_hera.local_run import run_local
from nvcre_hera.report.card import render_card
from nvcre_hera.steps.plan_step import job_ledger
from nvcre_hera.steps.run import diagnose_result

ROOT = Path(__file__).resolve().parent.parent
CERT = str(ROOT / "examples" / "certifications" / "diagnose.yaml")


def _held_minutes(records: list[dict]) -> float:
    """GPU node-minutes as the simulator ran the jobs: each job's nodes times its own start-to-end time."""
    return sum((r["end"] - r["start"]) * len(r["nodes"]) for r in records) / 60


@pytest.mark.parametrize("cluster", ["two-faulty-64", "flapping"])
def test_the_report_sums_the_time_every_job_held_its_nodes(cluster: str) -> None:
    """two-faulty-64 runs single-node screen batches and 62-node jobs; flapping, pairs to 8-node jobs, 3 repeats."""
    local = run_local(CERT, str(ROOT / "examples" / "clusters" / f"{cluster}.yaml"))
    (category,) = local.report["categories"]
    d = category["diagnose"]
    held = _held_minutes(local.cluster.job_records())
    assert held > 0
    # a step times a job from just before creating it until its measurement is read, and a screen batch waits for
    # its jobs one after another: at or a little above the simulator's time, never below it
    assert held - 0.05 <= d["nodeMinutesMeasured"] <= held * 1.02 + 0.05, (d["nodeMinutesMeasured"], held)
    assert abs(d["nodeMinutes"] - held) > 0.2 * held  # the estimate is another figure (40-75 % above here)
    card = render_card(local.report)
    assert f"{d['nodeMinutesMeasured']:g} node-minutes (measured)" in card
    # the card counts the jobs the cluster ran, every repeat (diagnose.yaml: repeatCount 3), not the planner's tests
    ran = len(local.cluster.job_records())
    assert d["jobsRun"] == ran == 3 * d["jobs"] and f"{ran} jobs in {d['rounds']} rounds" in card


def test_a_diagnose_whose_tests_crashed_says_its_node_minutes_are_estimated(tmp_path: Path) -> None:
    """Every test pod is killed while it creates its job (8 step-crash faults): no result comes back, nobody timed
    those jobs, so the report keeps the estimate and says so rather than a sum that leaves them out."""
    body = yaml.safe_load((ROOT / "examples" / "clusters" / "step-crash.yaml").read_text())
    body["spec"]["faults"] = [{"node": f"gpu-node-{i:02d}", "kind": "step-crash"} for i in range(1, 9)]
    path = tmp_path / "all-crash.yaml"
    path.write_text(yaml.safe_dump(body))
    local = run_local(CERT, str(path))
    (category,) = local.report["categories"]
    assert "nodeMinutesMeasured" not in category["diagnose"]
    assert "node-minutes (estimated)" in render_card(local.report)
    assert "node-minutes (measured)" not in render_card(local.report)


def _run(seconds: float | None, nodes: int) -> dict:
    return {"metrics": {"busBandwidthGBps": 300.0}, "status": "ok", "jobDeleted": True, "jobName": "j",
            "nodes": [f"n{i}" for i in range(nodes)], **({"runtimeSec": seconds} if seconds is not None else {})}


def test_each_repeat_counts_its_nodes_times_its_run_time() -> None:
    (out,) = diagnose_result("r1-t0", [_run(60.0, 4), _run(30.0, 4)], {})
    assert out["nodeSec"] == 360.0
    (untimed,) = diagnose_result("r1-t0", [_run(60.0, 4), _run(None, 4)], {})
    assert "nodeSec" not in untimed


def test_an_untimed_or_missing_test_leaves_the_measured_figure_out() -> None:
    timed = job_ledger(None, [[{"id": "a", "jobs": 2, "deleted": 2, "nodeSec": 90.0}],
                              [{"id": "b", "jobs": 1, "deleted": 1, "nodeSec": 30.0}]])
    assert (timed["nodeSec"], timed["untimed"]) == (120.0, 0)
    assert job_ledger(timed, [], missing=1)["untimed"] == 1  # a test that sent no result: its job went untimed
    assert job_ledger(timed, [[{"id": "c", "jobs": 1, "deleted": 1}]])["untimed"] == 1
    assert job_ledger(timed, [[{"id": "d", "jobs": 0, "status": "failed"}]])["untimed"] == 0  # no job, no time
    verdict = {"suspects": [], "infrastructureFaults": [], "nodeCount": 8, "unresolved": [],
               "stats": {"jobs": 3, "rounds": 1, "nodeMinutes": 9.9}}
    for ledger, want in ((timed, 2.0), ({**timed, "untimed": 1}, None), (None, None)):
        entry = {"jobs": 0, "failedGroups": [], "failureReason": None, "status": "Passed"}
        judge._add_diagnose(entry, {**verdict, **({"cleanup": ledger} if ledger else {})})
        assert entry["diagnose"].get("nodeMinutesMeasured") == want, ledger
        assert entry["diagnose"]["nodeMinutes"] == 9.9
