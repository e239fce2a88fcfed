"""`nvcre-step plan`: one diagnose round. Calls the pure planner with the state and the last round's results, and
writes the next round's tests (empty when done, which makes Argo skip the fan-out and end the recursion), the new
state, `next` (`[0]` to recurse, `[]` to stop) and, when done, the final verdict.
"""

from __future__ import annotations

from typing import Any, Callable

from nvcre_hera.cluster.base import Cluster
from nvcre_hera.diagnose.nodesets import from_nodes
from nvcre_hera.diagnose.planner import plan
from nvcre_hera.nodeindex import resolve
from nvcre_hera.steps.io import Outputs, flatten_runs


UNRESOLVED_NAMES = 64


def compact_results(aggregated: Any) -> list[dict]:
    """The planner's results."""
    return [{"id": run["id"], "busBandwidthGBps": run.get("busBandwidthGBps"), "status": run.get("status", "failed")}
            for run in flatten_runs(aggregated) if "id" in run]


def with_missing(results: list[dict], issued: list[str]) -> list[dict]:
    """A test the last round issued that sent no result (its pod crashed, hit its deadline or was evicted, so the
    fan-out left it out of its aggregated output) counts as a failed test: no evidence is never a pass."""
    seen = {r["id"] for r in results}
    return [*results, *({"id": t, "busBandwidthGBps": None, "status": "failed", "missing": True}
                        for t in issued if t not in seen)]


def job_ledger(ledger: dict | None, aggregated: Any) -> dict:
    """Job objects created and deleted so far, carried beside the planner's state so the report can say that
    every one of them is gone (names only of those not deleted: the ledger travels down the recursion)."""
    out = {"created": 0, "deleted": 0, "leftover": [], **(ledger or {})}
    for run in flatten_runs(aggregated):
        if run.get("jobName"):
            out["created"] += 1
            if run.get("jobDeleted"):
                out["deleted"] += 1
            else:
                out["leftover"] = [*out["leftover"], run["jobName"]]
    return out


def _flat(value: Any) -> list[int]:
    if isinstance(value, list):
        return [i for v in value for i in _flat(v)]
    return [value] if isinstance(value, int) else []


def named_verdict(answer: dict, setup: dict, cluster: Cluster) -> dict:
    """The planner's final answer with node indices turned into names (the report names nodes)."""
    suspects = list(answer.get("suspects") or [])
    faults = list(answer.get("infrastructureFaults") or [])
    unresolved = list(answer.get("unresolved") or [])
    indices = sorted({s["node"] for s in suspects} | {i for f in faults for i in _flat(f.get("between"))}
                     | {i for group in unresolved for i in group[:UNRESOLVED_NAMES]})
    names = dict(zip(indices, resolve(indices, setup, cluster.list_nodes()))) if indices else {}

    def named(value: Any) -> Any:  # `between` is [a, b] or [[side a], [side b]]
        return [named(v) for v in value] if isinstance(value, list) else names[value]

    return {
        "suspects": [{**s, "node": names[s["node"]]} for s in suspects],
        "infrastructureFaults": [{**f, "between": named(f.get("between") or [])} for f in faults],
        # groups that failed with nothing found to blame: reported, so they can never read as a pass (names of
        # the first nodes only: the verdict travels up every level of the recursion)
        "unresolved": [{"nodeCount": len(group), "nodes": named(group[:UNRESOLVED_NAMES])}
                       for group in unresolved],
        "stats": answer.get("stats") or {},
        "nodeCount": setup["config"].get("nodeCount"),
    }


def plan_step(setup: dict, state: Any, aggregated: Any, cluster: Cluster, out: Outputs,
              log: Callable[[str], None]) -> int:
    carried = state if isinstance(state, dict) else {}
    ledger = job_ledger(carried.get("jobs"), aggregated)
    results = with_missing(compact_results(aggregated), list(carried.get("issued") or []))
    missing = sum(1 for r in results if r.get("missing"))
    if missing:
        log(f"plan: {missing} test(s) of the last round sent no result: counted as failed")
    answer = plan(carried.get("planner"), results, setup["config"])
    tests = answer["tests"]
    out.write("state", {"planner": answer["state"], "jobs": ledger, "issued": [t["id"] for t in tests]})
    # Every test item is stored twice over in the Workflow (plan output, test input): ranges, not index lists.
    out.write("tests", [{"id": t["id"], "ranges": from_nodes(t["nodes"]), "network": t.get("network", True)}
                        for t in tests])
    out.write("next", [0] if tests else [])
    out.write("final", {**named_verdict(answer, setup, cluster), "cleanup": ledger} if not tests else {})
    stats = answer.get("stats") or {}
    if tests:
        log(f"plan: round {stats.get('rounds', '?')}: {len(tests)} test(s), "
            f"{sum(1 for t in tests if t.get('network'))} on the scale-out network")
    else:
        log(f"plan: done after {stats.get('rounds', '?')} round(s) and {stats.get('jobs', '?')} job(s): "
            f"{len(answer.get('suspects') or [])} suspect(s), "
            f"{len(answer.get('infrastructureFaults') or [])} infrastructure fault(s)")
    return 0


__all__ = ["compact_results", "job_ledger", "plan_step", "with_missing"]
