"""`nvcre-step judge`: CEL thresholds over every group's metrics, per-node reasons, the report JSON and card.
Exits non-zero unless the result is PASSED, so the Workflow's own phase carries the verdict (a DAG whose failed test
is followed by a successful step would otherwise end Succeeded).
"""

from __future__ import annotations

from typing import Any, Callable

from nvcre_hera.catalog import plan_entry
from nvcre_hera.judge import judge
from nvcre_hera.report.card import describe_evidence, render_card
from nvcre_hera.steps.io import Outputs, flatten_runs


def _diagnose_results(verdict: Any) -> list[dict] | None:
    """Diagnose's verdict as judge input: one failed group per suspect (that node only), one passed summary."""
    if not isinstance(verdict, dict) or "stats" not in verdict:
        return None  # the recursion did not finish: no verdict, never a silent pass
    out = [{"group": "diagnose", "nodes": [], "status": "ok", "metrics": {}, "reasons": [],
}]
    for s in verdict.get("suspects") or []:
        message = (f"diagnose: {describe_evidence(s.get('evidence'))} (deficit {s.get('deficit')}, "
                   f"confidence {s.get('confidence')})")
        out.append({"group": f"suspect-{s['node']}", "nodes": [s["node"]], "status": "failed", "metrics": {},
                    "reasons": [{"node": s["node"], "reason": s.get("reason") or "SuspectNode", "message": message}]})
    return out


NO_RESULT = ("the test pod ended without a result (it crashed, hit its deadline or was evicted): see its node in "
             "the Argo workflow")


def with_missing_groups(flat: list[dict], groups: list[dict], category: str) -> list[dict]:
    """A group discovery planned that sent no result is a failed group: a fan-out aggregates only the tests whose
    pod Succeeded (argo-workflows operator.go `processAggregateNodeOutputs`), so a crashed or killed test pod is
    otherwise simply absent, and absence is never a pass."""
    seen = {r.get("group") for r in flat}
    return [*flat, *({"category": category, "group": g["id"], "nodes": list(g.get("nodes") or []),
                      "status": "failed", "metrics": {}, "samples": [], "runtimeSec": 0, "repeat": 0,
                      "reasons": [{"node": None, "reason": "WorkloadFailed", "message": NO_RESULT}]}
                     for g in groups if g.get("id") not in seen)]


def judge_step(plan: dict[str, Any], summary: dict, results: dict[int, Any], out: Outputs,
               log: Callable[[str], None], groups: dict[int, Any] | None = None) -> int:
    by_index = {c["index"]: c for c in summary.get("categories") or []}
    categories = []
    for cat in plan["categories"]:
        entry = plan_entry(cat)
        disc = by_index.get(cat["index"], {})
        thresholds = cat["options"].get("thresholds") or {}
        verdict = None
        if cat["options"]["testScale"] == "diagnose":
            verdict = results.get(cat["index"])
            flat = _diagnose_results(verdict)
            thresholds = {}  # the planner judged the bandwidth (the threshold is its pass line)
        else:
            raw = results.get(cat["index"])
            flat = None if raw is None else flatten_runs(raw)
            planned = (groups or {}).get(cat["index"])
            if flat is not None and isinstance(planned, list):
                flat = with_missing_groups(flat, planned, entry.key)
        if flat == [] and summary.get("selectedNodes", 0) == 0:
            flat = None  # nothing could be tested: the category has no results, never a vacuous pass
        categories.append({
            "domain": cat["domain"], "variant": cat["variant"], "testScale": cat["options"]["testScale"],
            "nodesPerJob": disc.get("nodesPerJob", 0), "enableMNNVL": bool(cat["options"].get("enableMNNVL")),
            "thresholds": thresholds, "metricNames": list(entry.metrics), "results": flat,
            **({"diagnose": verdict} if flat is not None and verdict is not None else {}),
        })
    report = judge(plan["name"], summary, categories)
    card = render_card(report)
    for line in card.splitlines():
        log(line)
    out.write("report", report)
    out.write("result", report["result"])
    return 0 if report["result"] == "PASSED" else 1


__all__ = ["NO_RESULT", "judge_step", "with_missing_groups"]
