"""`nvcre-step judge`: CEL thresholds over every group's metrics, per-node reasons, the report JSON and card.
Exits non-zero unless the result is PASSED, so the Workflow's own phase carries the verdict (a DAG whose failed test
is followed by a successful step would otherwise end Succeeded).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from nvcre_hera.catalog import plan_entry
from nvcre_hera.judge import judge
from nvcre_hera.report.card import describe_evidence, render_card
from nvcre_hera.steps import packed_json
from nvcre_hera.steps.io import Outputs, flatten_runs
from nvcre_hera.steps.metric_outputs import status_outputs
from nvcre_hera.steps.verdict_outputs import write_outputs
from nvcre_hera.threshold_select import profile_notice, profile_unknown_gpu, select_thresholds


def _judged_value(expr: str, low: float, high: float) -> float:
    """Of a metric's lowest and highest value over diagnose's jobs, the one its threshold rejects (else the lowest):
    diagnose accepts only interval thresholds, so if both ends pass, every job between them passes too."""
    from nvcre_hera.thresholds import compile_threshold, evaluate

    try:
        program = compile_threshold(expr)
        return low if not evaluate(program, low) or evaluate(program, high) else high
    except ValueError:
        return low  # the judge evaluates it again and fails closed on the error


def _diagnose_metrics(verdict: dict, thresholds: dict) -> dict:
    """The values the judge holds the thresholds against: every job diagnose ran, by its extremes. A metric some
    job that ran its workload did not measure is left out, so the judge says MeasurementNotFound."""
    seen = (verdict.get("measured") or {}).get("metrics") or {}
    out = {}
    for metric, expr in thresholds.items():
        m = seen.get(metric) or {}
        if m.get("n") and not m.get("missing"):
            out[metric] = _judged_value(expr, float(m["min"]), float(m["max"]))
    return out


def _unwrapped(verdict: Any) -> Any:
    """The verdict as the plan step wrote it (packed, `steps/packed_json.py`); one that does not decode is none."""
    try:
        return packed_json.unwrap(verdict)
    except ValueError:
        return None


def _diagnose_results(verdict: Any, thresholds: dict) -> list[dict] | None:
    """Diagnose's verdict as judge input: one failed group per suspect (that node only), and one group for all of
    diagnose's jobs that the thresholds judge (full CEL, on the lowest and highest value measured)."""
    if not isinstance(verdict, dict) or "stats" not in verdict:
        return None  # the recursion did not finish: no verdict, never a silent pass
    out = [{"group": "diagnose jobs", "nodes": [], "status": "ok", "metrics": _diagnose_metrics(verdict, thresholds),
            "reasons": []}]
    for s in verdict.get("suspects") or []:
        detail = f"{s['detail']}: " if s.get("detail") else ""
        message = (f"diagnose: {detail}{describe_evidence(s.get('evidence'))} (deficit {s.get('deficit')}, "
                   f"confidence {s.get('confidence')})")
        out.append({"group": f"suspect-{s['node']}", "nodes": [s["node"]], "status": "failed", "metrics": {},
                    "thresholdsJudgedElsewhere": True,
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


def _category_input(cat: dict, disc: dict, summary: dict, results: dict[int, Any], planned: Any,
                    gpu: str, share: dict | None) -> dict:
    """The judge's input for one category on one architecture (`share`: that architecture's part of a run over
    several, from the discover summary: its groups and nodes; None for a run over one)."""
    entry = plan_entry(cat)
    thresholds, sources = select_thresholds(cat["options"], gpu)  # profile floors for this GPU, explicit ones win
    notice = profile_notice(cat["options"], gpu)
    verdict = None
    tested = summary.get("selectedNodes", 0) if share is None else share["selectedNodes"]
    part = disc if share is None else (disc.get("perGpu") or {}).get(gpu) or {}
    if cat["options"]["testScale"] == "diagnose":
        verdict = _unwrapped(results.get(cat["index"]))
        # diagnose runs on the first architecture only (discover); the others say so in their `incomplete`
        first = share is None or share is (summary.get("architectures") or [share])[0]
        flat = _diagnose_results(verdict, thresholds) if first else []
        verdict = verdict if first else None
    else:
        raw = results.get(cat["index"])
        flat = None if raw is None else flatten_runs(raw)
        if share is not None:  # this architecture's groups, and only its results (discover names them <gpu>-g<i>)
            planned = [g for g in planned if g.get("gpu") == gpu] if isinstance(planned, list) else planned
            own = {g.get("id") for g in planned} if isinstance(planned, list) else set()
            flat = None if flat is None else [r for r in flat if r.get("group") in own or
                                              str(r.get("group", "")).startswith(f"{gpu}-")]
        if flat is not None and isinstance(planned, list):
            flat = with_missing_groups(flat, planned, entry.key)
    incomplete = part.get("incomplete")
    if profile_unknown_gpu(cat["options"], gpu) and not thresholds:
        # asked to be judged by a profile that knows nothing of this GPU, and no threshold of its own: never a pass
        # on "no thresholds set"
        incomplete = "; ".join(x for x in (incomplete, notice) if x)
    if incomplete and isinstance(verdict, dict) and not (verdict.get("measured") or {}).get("runs"):
        flat = []  # diagnose could run no job at this scale: nothing measured is no failure of the nodes
    if not flat and tested == 0:
        # nothing could be tested: no results, never a vacuous pass, and no failure of the nodes either
        known = summary.get("incomplete") or share is not None and summary.get("excludedNodes")
        flat = [] if known else None
        incomplete = incomplete or ("no node was tested" if share is None and summary.get("incomplete") else
                                    f"no {gpu} node was tested" if known else None)
    return {
        "domain": cat["domain"], "variant": cat["variant"], "testScale": cat["options"]["testScale"],
        "nodesPerJob": part.get("nodesPerJob", 0), "enableMNNVL": bool(cat["options"].get("enableMNNVL")),
        "thresholds": thresholds, "thresholdSources": sources, "metricNames": list(entry.metrics), "results": flat,
        **({"incomplete": incomplete} if incomplete else {}),
        **({"thresholdNotice": notice} if notice else {}),
        **({"nic": disc["nic"]} if disc.get("nic") else {}),
        **({"diagnose": verdict} if flat is not None and verdict is not None else {}),
        # the thresholds written for every GPU, and the GPU they judge here (for the judge's hint; not reported)
        "sharedThresholds": sorted(m for m, src in sources.items() if not src.get("gpu")), "thresholdGpu": gpu,
        # a run over several architectures: which one this entry judges (the report repeats the category per GPU)
        **({"index": cat["index"], "gpu": gpu, "gpuProduct": share.get("gpuProduct")} if share is not None else {}),
    }


def judge_step(plan: dict[str, Any], summary: dict, results: dict[int, Any], out: Outputs,
               log: Callable[[str], None], groups: dict[int, Any] | None = None, cluster: Any = None,
               nvsentinel: dict | None = None) -> int:
    by_index = {c["index"]: c for c in summary.get("categories") or []}
    shares = summary.get("architectures") or [None]
    categories = []
    for share in shares:  # architecture by architecture, each category with that GPU's thresholds
        for cat in plan["categories"]:
            gpu = str(share["gpu"]) if share else str(summary.get("gpu") or "")
            categories.append(_category_input(cat, by_index.get(cat["index"], {}), summary, results,
                                              (groups or {}).get(cat["index"]), gpu, share))
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # when this judge ran (wall clock)
    report = judge(plan["name"], summary, categories, generated_at=generated)
    for given in categories:
        if given.get("thresholdNotice"):
            log(f"judge: {given['domain']}/{given['variant']}: {given['thresholdNotice']}")
    card = render_card(report)
    for line in card.splitlines():
        log(line)
    out.write("report", report)
    out.write("result", report["result"])
    for name, value in status_outputs(report, [c["index"] for c in plan["categories"]]).items():
        out.write(name, value)  # what the compiled workflow's nvcre_certification_status gauge reads
    write_outputs(report, categories, plan, out, log, cluster=cluster, nvsentinel=nvsentinel)
    return 0 if report["result"] == "PASSED" else 1


__all__ = ["NO_RESULT", "judge_step", "with_missing_groups"]
