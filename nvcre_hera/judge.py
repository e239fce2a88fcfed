"""The verdict: CEL thresholds over each group's metrics, per-node reasons, and the report JSON.

Pure: plain dicts in (the discover summary, each category's run-step metrics, see docs/internals.md), one plain
dict out (`kind: CertificationReport`, see DESIGN.md "Contracts"). Blame follows NVCRE (reference §1.4): a group
reason (node null, ThresholdViolation, MeasurementNotFound) names every node of the group; a node reason
(HardwareFailureDetected, or a failure the log attributes to one host) names only that node, and then the run's
group reasons go to that node too: the group's other nodes are listed apart, in `failedGroupMembers`.

Decisions, so a reader need not reverse-engineer them:
- Thresholds are judged only on runs whose workload succeeded (NVCRE: ThresholdViolation is "a CEL threshold failed
  after the workload succeeded"); a failed workload already fails its group, so it gets no MeasurementNotFound noise.
- Fail closed: a threshold with no value, a CEL that does not compile or errors while evaluating fails the group.
- Several repeats of one group: the group fails if any repeat fails, and each message says which repeat.
- Category metrics (min/max/mean) and the bandwidth table use runs whose workload succeeded; each group's own
  `metrics` keep the worst value over its repeats, whatever happened.
- `runtimeSec` of a category is the category's own `runtimeSec` when the caller knows the wall time, else the sum
  of its jobs' runtimes (machine time).
- A fleet-relative threshold (its CEL reads `fleet`) is judged against the metric's statistics over the category's
  groups whose workload succeeded, each group by its worst value over its repeats (nvcre_hera/fleet.py). A value
  that is not finite fails it; with fewer than MIN_FLEET groups measured it judges no group and the category is
  Incomplete (never Passed on a fleet too small to say what normal is).
- Every threshold evaluation says where its threshold came from, `source: {kind, from}`: the category's
  `thresholdSources[metric]` when the caller gives it, else fleet-relative (it reads `fleet`) or explicit (spec).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from nvcre_hera.diagnose.intermittent import QUIET
from nvcre_hera.diagnose.items import MARGINAL
from nvcre_hera.diagnose.screens import UNDECIDED
from nvcre_hera.fleet import MIN_FLEET, FleetStats, fleet_stats
from nvcre_hera.thresholds import compile_threshold, evaluate

API_VERSION = "nvcre-hera.dev/v1alpha1"
KIND = "CertificationReport"

# The reason a failed group or category is filed under: the most specific first (NVCRE: HardwareFailed wins).
REASON_PRECEDENCE = ("HardwareFailureDetected", "DataCorruption", "TransportMismatch", "DiagnosticFailed",
                     "WorkloadFailed", "SuspectNode", "WorkloadSchedulingBlocked", "InfrastructureFault", "Unresolved",
                     "ThresholdViolation", "MeasurementNotFound")
# Reasons that fail a group without blaming any node: pods the scheduler could not place say nothing about the nodes
# (NVCRE ADR-083: "no node-failure attribution"); the group's nodes are listed in `failedGroupMembers`.
NO_BLAME_REASONS = frozenset({"WorkloadSchedulingBlocked"})
# Each node reason as NVCRE's FailedNode reason (api/v1alpha1/job_types.go, NodeFailureReason: exactly these three),
# for consumers that match on NVCRE's values; see README "Reasons" for why each maps where it does.
NVCRE_NODE_REASON = {
    "HardwareFailureDetected": "HardwareFailureDetected",
    "ThresholdViolation": "ThresholdViolation",
    "MeasurementNotFound": "ThresholdViolation",  # NVCRE: ValidationFailed, reason MeasurementNotFound (fail-safe)
    "TransportMismatch": "ThresholdViolation",    # the workload ran; what it measured does not certify the fabric
    "WorkloadFailed": "WorkloadFailed",
    "DataCorruption": "WorkloadFailed",           # nccl-tests exits non-zero on #wrong > 0
    "DiagnosticFailed": "WorkloadFailed",         # dcgmi diag exits non-zero on a failed test
    "SuspectNode": "WorkloadFailed",              # a diagnose suspect without a reason (fail closed)
}
# Reasons about how a workload ran, not that it failed: its measurement still stands and thresholds judge it.
WORKLOAD_RAN_REASONS = frozenset({"TransportMismatch"})
NO_RESULTS_MESSAGE = "no results: the test step did not complete"
EMPTY_RESULTS_MESSAGE = "no results: no test ran for this category"
LOG_TAIL_LINES = 20
LOG_TAIL_BYTES = 4096
WARNINGS_KEPT = 3
# Metrics where a smaller value is better (times, latencies): "worst" is then the largest.
_LOWER_IS_BETTER = re.compile(r"(Sec|Ms|Us|Seconds|Latency|Errors?|Count)$")


def _lower_is_better(metric: str) -> bool:
    return bool(_LOWER_IS_BETTER.search(metric))


def _worst(metric: str, values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    if any(math.isnan(v) for v in vals):
        return math.nan
    return max(vals) if _lower_is_better(metric) else min(vals)


def _number(value: Any) -> float | None:
    """A metric value as float, or None when absent or not a number (strings never pass a threshold)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _natural_key(name: str) -> list[Any]:
    """g2 before g10: group names carry indexes."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(name))]


def _precedence(reason: str) -> tuple[int, str]:
    return (REASON_PRECEDENCE.index(reason) if reason in REASON_PRECEDENCE else len(REASON_PRECEDENCE), reason)


def _log_tail(text: Any) -> str:
    if not text:
        return ""
    lines = str(text).rstrip("\n").splitlines()[-LOG_TAIL_LINES:]
    tail = "\n".join(lines)
    return tail[-LOG_TAIL_BYTES:]


def _fmt4(value: float) -> str:
    return f"{value:.4f}"


def _uses_fleet(program: Any, expr: str) -> bool:
    if isinstance(program, str):  # did not compile: read the text
        return bool(re.search(r"\bfleet\s*\.", str(expr)))
    return bool(getattr(program, "uses_fleet", False))


def _fleet_text(stats: FleetStats) -> str:
    """`fleet median 400.2000 (mad 3.1000, p10 395.0000, 64 groups)`: the numbers a fleet-relative verdict used."""
    return (f"fleet median {_fmt4(stats.median)} (mad {_fmt4(stats.mad)}, p10 {_fmt4(stats.p10)}, "
            f"{int(stats.count)} group{'' if stats.count == 1 else 's'})")


def _fleet(thresholds: dict, compiled: dict, by_group: dict[str, list[dict]]) -> dict[str, FleetStats | None]:
    """Per fleet-relative metric, its statistics over the groups whose workload succeeded, each group counted once
    by the worst value of its successful runs (the value it is judged by)."""
    out: dict[str, FleetStats | None] = {}
    for metric, expr in thresholds.items():
        if isinstance(compiled[metric], str) or not _uses_fleet(compiled[metric], expr):
            continue
        values = []
        for runs in by_group.values():
            ok = [_number((r.get("metrics") or {}).get(metric)) for r in runs if _workload_reasons(r)[0]]
            values.append(_worst(metric, ok))
        out[metric] = fleet_stats(values)
    return out


def _fleet_too_small(stats: FleetStats | None) -> bool:
    return stats is None or not stats.large_enough


def _threshold_reasons(thresholds: dict[str, Any], compiled: dict[str, Any], metrics: dict[str, Any],
                       fleet: dict[str, FleetStats | None] | None = None) -> list[dict]:
    """Group reasons (node null) from the thresholds on one successful run; empty when all pass. A fleet-relative
    threshold on a fleet too small judges no group here (the category says Incomplete)."""
    fleet = fleet or {}
    reasons = []
    for metric, expr in thresholds.items():
        value = _number(metrics.get(metric))
        if value is None:
            reasons.append({"node": None, "reason": "MeasurementNotFound",
                            "message": f'Threshold "{metric}" has no measurement'})
            continue
        program = compiled[metric]
        stats = fleet.get(metric)
        relative = metric in fleet
        if relative and not math.isfinite(value):  # NaN compares false both ways: `!(value < x)` would pass it
            reasons.append({"node": None, "reason": "ThresholdViolation",
                            "message": f'Threshold "{metric}" violated: measured {value}, not a finite number, '
                                       f"expression: {expr}"})
            continue
        if relative and _fleet_too_small(stats):
            continue
        measured = f"measured {_fmt4(value)}" + (f", {_fleet_text(stats)}" if relative and stats else "")
        try:
            if isinstance(program, str):
                raise ValueError(program)
            ok = evaluate(program, value, stats.as_dict() if relative and stats else None)
        except ValueError as err:
            reasons.append({"node": None, "reason": "ThresholdViolation",
                            "message": f'Threshold "{metric}" could not be evaluated: {measured}, '
                                       f"expression: {expr} ({err})"})
            continue
        if not ok:
            reasons.append({"node": None, "reason": "ThresholdViolation",
                            "message": f'Threshold "{metric}" violated: {measured}, expression: {expr}'})
    return reasons


def _workload_reasons(run: dict) -> tuple[bool, list[dict]]:
    """(workload ok, the run's own reasons): ok when it ran to its end (no reason, or only reasons about how it
    ran, such as a NET/Socket fallback)."""
    reasons = [{"node": r.get("node"), "reason": str(r.get("reason") or "WorkloadFailed"),
                "message": str(r.get("message") or "")} for r in (run.get("reasons") or [])]
    if str(run.get("status", "ok")) != "ok" and not reasons:
        reasons.append({"node": None, "reason": "WorkloadFailed",
                        "message": f"the test reported status {run.get('status')!r} without a reason"})
    if any(r["reason"] not in WORKLOAD_RAN_REASONS for r in reasons):
        return False, reasons
    if reasons and run.get("thresholdsJudgedElsewhere"):  # a diagnose suspect: its jobs are in "diagnose jobs"
        return False, reasons
    return True, reasons


def _run_reasons(run: dict, thresholds: dict, compiled: dict,
                 fleet: dict[str, FleetStats | None] | None = None) -> tuple[bool, list[dict]]:
    """(workload ok, reasons) for one run: its own reasons, and the thresholds' verdict when the workload ran to
    its end (a group that misses its threshold keeps ThresholdViolation beside reasons about how it ran)."""
    ok, reasons = _workload_reasons(run)
    if not ok:
        return False, reasons
    return True, reasons + _threshold_reasons(thresholds, compiled, run.get("metrics") or {}, fleet)


def _run_blame(run_reasons: list[dict], nodes: list[str]) -> list[dict]:
    """Who one run blames: a reason that names a node blames that node; a group reason (node null) blames every
    node of the group (NVCRE), unless the run's evidence named nodes: then those nodes carry it too, and the rest
    are members of the failed group, not blamed."""
    named = list(dict.fromkeys(r["node"] for r in run_reasons if r["node"]))
    out = []
    for r in run_reasons:
        if r["reason"] in NO_BLAME_REASONS:
            continue
        for node in [r["node"]] if r["node"] else named or nodes:
            out.append({"name": node, "reason": r["reason"], "message": r["message"]})
    return out


def _judge_group(name: str, runs: list[dict], thresholds: dict, compiled: dict,
                 fleet: dict[str, FleetStats | None] | None = None) -> tuple[dict, list[dict], list[dict]]:
    """The group entry for the report, the runs whose workload succeeded (for category metrics), and its blame."""
    runs = sorted(runs, key=lambda r: int(r.get("repeat") or 0))
    nodes: list[str] = []
    for run in runs:
        nodes.extend(n for n in run.get("nodes") or [] if n not in nodes)
    reasons: list[dict] = []
    blame: list[dict] = []
    ok_runs: list[dict] = []
    failed_logs: list[str] = []
    for run in runs:
        workload_ok, run_reasons = _run_reasons(run, thresholds, compiled, fleet)
        if workload_ok:
            ok_runs.append(run)
        if run_reasons and len(runs) > 1:
            prefix = f"repeat {int(run.get('repeat') or 0) + 1} of {len(runs)}: "
            run_reasons = [{**r, "message": prefix + r["message"]} for r in run_reasons]
        if run_reasons and run.get("logTail"):
            failed_logs.append(str(run["logTail"]))
        reasons.extend(run_reasons)
        blame.extend(_run_blame(run_reasons, [n for n in run.get("nodes") or []] or nodes))
    metric_names = sorted({k for run in runs for k in (run.get("metrics") or {})})
    metrics = {m: _worst(m, (_number((run.get("metrics") or {}).get(m)) for run in runs)) for m in metric_names}
    warnings = list(dict.fromkeys(str(w) for run in runs for w in run.get("warnings") or []))[:WARNINGS_KEPT]
    unpinned = any(run.get("placement") == "Unpinned" for run in runs)
    # WorkloadSchedulingBlocked: the longest time a repeat's pods waited unschedulable (off timeoutPerJob)
    blocked = [r["schedulingBlocked"] for r in runs if isinstance(r.get("schedulingBlocked"), dict)]
    curve = _curve(ok_runs)
    # the transport NCCL logged for the traffic (NET/IB, NET/Socket, P2P/NVLink ...), each once: what carried it
    transports = sorted({str(r["transport"]) for r in runs if r.get("transport")})
    group = {"name": name, "nodes": nodes, "status": "Failed" if reasons else "Passed",
             **({"transport": transports} if transports else {}),
             # Unpinned: the scheduler chose the nodes and the step does not know which: a count, no names
             **({"unpinned": True, "nodeCount": max(int(r.get("nodeCount") or 0) for r in runs)} if unpinned else {}),
             **({"warnings": warnings} if warnings else {}),  # NCCL WARN lines: kept, never a failure by themselves
             **({"schedulingBlocked": max(blocked, key=lambda b: float(b.get("seconds") or 0))} if blocked else {}),
             "metrics": {k: v for k, v in metrics.items() if v is not None}, "reasons": reasons,
             **({"curve": curve} if curve else {}),  # per-size bandwidth over its judged runs, for the charts
             "repeats": len(runs), "runtimeSec": round(sum(float(r.get("runtimeSec") or 0) for r in runs), 3),
             "failureLog": _log_tail(failed_logs[0]) if failed_logs else ""}
    return group, ok_runs, blame


def _failed_group(group: dict, blame: list[dict]) -> dict:
    """A failed group in NVCRE's shape, plus `blamedNodes`: the nodes its evidence blames (all of them unless the
    log named some); the others are members of the failed group (the report's `failedGroupMembers`)."""
    reason = min((r["reason"] for r in group["reasons"]), key=_precedence)
    messages = list(dict.fromkeys(r["message"] for r in group["reasons"] if r["message"]))
    return {"name": group["name"], "nodeCount": group.get("nodeCount", len(group["nodes"])), "nodes": group["nodes"],
            **({"unpinned": True} if group.get("unpinned") else {}), "reason": reason,
            "message": "; ".join(messages), "failureLog": group["failureLog"],
            "blamedNodes": list(dict.fromkeys(b["name"] for b in blame))}


THRESHOLD_KINDS = ("explicit", "profile", "baseline", "fleet-relative")


def _source(metric: str, expr: str, program: Any, sources: Any) -> dict:
    """Where a threshold came from: the caller's `thresholdSources[metric]` when it gives one, else fleet-relative
    (its CEL reads `fleet`) or explicit, from the spec."""
    given = sources.get(metric) if isinstance(sources, dict) else None
    if isinstance(given, dict) and given.get("kind"):
        kind = str(given["kind"])  # an explicit threshold that reads `fleet` is the fleet-relative kind
        return {"kind": "fleet-relative" if kind == "explicit" and _uses_fleet(program, expr) else kind,
                "from": str(given.get("from") or "spec")}
    return {"kind": "fleet-relative" if _uses_fleet(program, expr) else "explicit", "from": "spec"}


def _threshold_evaluations(thresholds: dict, compiled: dict, ok_runs: list[dict],
                           fleet: dict[str, FleetStats | None] | None = None, sources: Any = None) -> list[dict]:
    """One entry per threshold over the judged runs: passed only if every run has a value and passes it.

    `measuredValue` is the worst value: among the violating ones if any, else among all. A fleet-relative one also
    carries the `fleet` statistics it was judged against; on a fleet too small it is not passed (FleetTooSmall).
    """
    fleet = fleet or {}
    out = []
    for metric, expr in thresholds.items():
        program = compiled[metric]
        stats = fleet.get(metric)
        relative = metric in fleet
        values = [_number((r.get("metrics") or {}).get(metric)) for r in ok_runs]
        present = [v for v in values if v is not None]
        outcomes = [_outcome(program, v, stats if relative else None, relative) for v in present]
        if isinstance(program, str) or "error" in outcomes:
            reason = "EvaluationError"
        elif not ok_runs or len(present) < len(values):
            reason = "NoMeasurement"
        elif relative and _fleet_too_small(stats):
            reason = "FleetTooSmall"
        else:
            reason = None
        violating = [v for v, o in zip(present, outcomes) if o == "fail" or o == "error"]
        out.append({"metric": metric, "expression": expr, "measuredValue": _worst(metric, violating or present),
                    "passed": reason is None and not violating, "reason": reason,
                    # the statistics it was judged against, to 4 decimals like the category's `metrics` mean
                    **({"fleet": {k: round(v, 4) for k, v in stats.as_dict().items()} if stats else None}
                       if relative else {}),
                    "source": _source(metric, expr, program, sources)})
    return out


def _outcome(program: Any, value: float, stats: FleetStats | None = None, relative: bool = False) -> str:
    """pass | fail | error | unjudged (a fleet-relative threshold on a fleet too small: no verdict on the value)."""
    if isinstance(program, str):
        return "error"
    if relative and not math.isfinite(value):
        return "fail"
    if relative and _fleet_too_small(stats):
        return "unjudged"
    try:
        return "pass" if evaluate(program, value, stats.as_dict() if stats else None) else "fail"
    except ValueError:
        return "error"


def _finite(obj: Any) -> Any:
    """NaN/inf become null: the report must stay valid JSON for jq and browsers."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def _metric_stats(names: list[str], ok_runs: list[dict]) -> dict[str, dict]:
    seen = list(dict.fromkeys([*names, *sorted({k for r in ok_runs for k in (r.get("metrics") or {})})]))
    stats = {}
    for m in seen:
        vals = [v for v in (_number((r.get("metrics") or {}).get(m)) for r in ok_runs) if v is not None]
        if vals:
            stats[m] = {"min": min(vals), "max": max(vals), "mean": round(sum(vals) / len(vals), 4)}
    return stats


def sample_rows(samples: Any) -> list[dict]:
    """A test's bandwidth samples as rows: the run step writes columns (`{sizeBytes: [...], algBandwidthGBps:
    [...], busBandwidthGBps: [...]}`, one run each); rows (with their own `samples` count) are read as they are."""
    if isinstance(samples, list):
        return [r for r in samples if isinstance(r, dict)]
    if not isinstance(samples, dict):
        return []
    sizes = samples.get("sizeBytes") or []
    columns = {k: samples.get(k) or [] for k in ("algBandwidthGBps", "busBandwidthGBps")}
    return [{"sizeBytes": size, **{k: (v[i] if i < len(v) else None) for k, v in columns.items()}, "samples": 1}
            for i, size in enumerate(sizes)]


def _bandwidth(ok_runs: list[dict]) -> list[dict]:
    """Per message size, the mean over runs of alg/bus bandwidth and the total sample count."""
    by_size: dict[int, list[dict]] = {}
    for run in ok_runs:
        for row in sample_rows(run.get("samples")):
            if isinstance(row.get("sizeBytes"), (int, float)):
                by_size.setdefault(int(row["sizeBytes"]), []).append(row)
    table = []
    for size in sorted(by_size):
        rows = by_size[size]
        entry: dict[str, Any] = {"sizeBytes": size}
        for key in ("algBandwidthGBps", "busBandwidthGBps"):
            vals = [float(r[key]) for r in rows if _number(r.get(key)) is not None]
            entry[key] = round(sum(vals) / len(vals), 4) if vals else None
        entry["samples"] = sum(int(r.get("samples") or 0) for r in rows)
        table.append(entry)
    return table


def _curve(ok_runs: list[dict]) -> dict[str, list] | None:
    """A group's bandwidth per message size as columns (the run step's own shape, compact in the Workflow): the
    mean over its judged runs; None when none of them has samples."""
    rows = _bandwidth(ok_runs)
    if not rows:
        return None
    return {key: [r[key] for r in rows] for key in ("sizeBytes", "algBandwidthGBps", "busBandwidthGBps")}


CURVES_KEPT = 48  # passing groups that keep their per-size curve; every failed group keeps its own


def _trim_curves(entry: dict, ok_runs: list[dict]) -> None:
    """Keep the report (a Workflow output parameter, stored in etcd) small at scale: past CURVES_KEPT passing groups
    the rest drop their curve, and the category's per-size range (min and max over every judged run) stands for
    them (`curvesOmitted` says how many)."""
    passing = [g for g in entry["groups"] if g.get("curve") and g["status"] == "Passed"]
    if len(passing) <= CURVES_KEPT:
        return
    for g in passing[CURVES_KEPT:]:
        del g["curve"]
    entry["curvesOmitted"] = len(passing) - CURVES_KEPT
    by_size: dict[int, list[dict]] = {}
    for run in ok_runs:
        for row in sample_rows(run.get("samples")):
            if isinstance(row.get("sizeBytes"), (int, float)):
                by_size.setdefault(int(row["sizeBytes"]), []).append(row)
    sizes = sorted(by_size)
    rng: dict[str, list] = {"sizeBytes": sizes}
    for key in ("algBandwidthGBps", "busBandwidthGBps"):
        vals = [[float(r[key]) for r in by_size[s] if _number(r.get(key)) is not None] for s in sizes]
        rng[f"{key}Min"] = [min(v) if v else None for v in vals]
        rng[f"{key}Max"] = [max(v) if v else None for v in vals]
    entry["bandwidthRange"] = rng


def lower_is_better(metric: str) -> bool:
    """Times, latencies and counts: for these the best value is the smallest (the charts pick a node's best)."""
    return _lower_is_better(metric)


def judge_category(category: dict) -> tuple[dict, list[dict]]:
    """A category's report entry, and its per-node blame [{name, reason, message}]."""
    thresholds = dict(category.get("thresholds") or {})
    compiled: dict[str, Any] = {}
    for metric, expr in thresholds.items():
        try:
            compiled[metric] = compile_threshold(expr)
        except ValueError as err:
            compiled[metric] = str(err)  # the error text; judged as a failed evaluation (fail closed)
    results = category.get("results")
    incomplete = category.get("incomplete")
    entry: dict[str, Any] = {
        "domain": category.get("domain"), "variant": category.get("variant"),
        # a run over several GPU architectures repeats each category per architecture (see judge())
        **({k: category.get(k) for k in ("index", "gpu", "gpuProduct")} if category.get("gpu") else {}),
        "status": "Passed",
        "failureReason": None, "runtimeSec": _number(category.get("runtimeSec")), "testScale": category.get("testScale"),
        "nodesPerJob": category.get("nodesPerJob"), "jobs": len(results or []), "runsMeasured": 0,
        "enableMNNVL": bool(category.get("enableMNNVL", False)), "thresholdsSet": bool(thresholds),
        "thresholds": [], "metrics": {}, "bandwidth": [], "groups": [], "failedGroups": [],
        **({"incomplete": str(incomplete)} if incomplete else {}),
        # why a thresholdProfile gave this category no floor on its GPU (threshold_select.profile_notice)
        **({"thresholdNotice": str(category["thresholdNotice"])} if category.get("thresholdNotice") else {}),
        # which NIC resource the workers requested, and from where (detected | nicResourceName | none | ...)
        **({"nicResource": dict(category["nic"])} if category.get("nic") else {})}
    sources = category.get("thresholdSources")
    if not results and incomplete:  # nothing could run as asked: not a failure of any node, and never a pass
        entry.update(status="Incomplete",
                     thresholds=[{"metric": m, "expression": e, "measuredValue": None, "passed": False,
                                  "reason": "NoMeasurement", "source": _source(m, e, compiled[m], sources)}
                                 for m, e in thresholds.items()])
        return entry, []
    if not results:
        message = NO_RESULTS_MESSAGE if results is None else EMPTY_RESULTS_MESSAGE
        entry.update(status="Failed", failureReason="WorkloadFailed",
                     failedGroups=[{"name": None, "nodeCount": 0, "nodes": [], "reason": "WorkloadFailed",
                                    "message": message, "failureLog": "", "blamedNodes": []}],
                     thresholds=[{"metric": m, "expression": e, "measuredValue": None, "passed": False,
                                  "reason": "EvaluationError" if isinstance(compiled[m], str) else "NoMeasurement",
                                  "source": _source(m, e, compiled[m], sources)}
                                 for m, e in thresholds.items()])
        return entry, []
    by_group: dict[str, list[dict]] = {}
    for run in results:
        by_group.setdefault(str(run.get("group", "")), []).append(run)
    fleet = _fleet(thresholds, compiled, by_group)
    groups, ok_runs, blame, failed = [], [], [], []
    for name in sorted(by_group, key=_natural_key):
        group, ok, group_blame = _judge_group(name, by_group[name], thresholds, compiled, fleet)
        groups.append(group)
        ok_runs.extend(ok)
        blame.extend(group_blame)
        if group["status"] == "Failed":
            failed.append(_failed_group(group, group_blame))
    known_runtime = _number(category.get("runtimeSec"))
    entry.update(
        status="Failed" if failed else "Passed",
        failureReason=min((f["reason"] for f in failed), key=_precedence) if failed else None,
        runtimeSec=known_runtime if known_runtime is not None
        else round(sum(float(r.get("runtimeSec") or 0) for r in results), 3)
        if any(_number(r.get("runtimeSec")) is not None for r in results) else None,  # unknown, not 0 s
        runsMeasured=len(ok_runs), thresholds=_threshold_evaluations(thresholds, compiled, ok_runs, fleet, sources),
        metrics=_metric_stats(list(category.get("metricNames") or []), ok_runs),
        bandwidth=_bandwidth(ok_runs), groups=groups, failedGroups=failed)
    _trim_curves(entry, ok_runs)
    _shared_threshold_hint(entry, category)
    if category.get("diagnose") is not None:
        _add_diagnose(entry, category["diagnose"])
    small = [f"fleet-relative threshold {m} needs at least {MIN_FLEET} measured groups, this run has "
             f"{int(s.count) if s else 0}: not judged" for m, s in fleet.items() if _fleet_too_small(s)]
    if small:  # a handful of groups cannot say what normal is: no pass, and no node accused on it either
        incomplete = "; ".join([*([str(incomplete)] if incomplete else []), *small])
        entry["incomplete"] = incomplete
    if incomplete and entry["status"] == "Passed":
        entry["status"] = "Incomplete"  # what ran passed, but it could not exercise what the scale names
    return entry, blame


def _shared_threshold_hint(entry: dict, category: dict) -> None:
    """A GPU that missed an explicit threshold written for every GPU: say where its own go. In a run over several
    architectures, whenever it misses one (an A100 held to an H100 figure is the usual case); in a run over one, when
    every group missed it (a healthy GB300 rack held to an H100 number fails all its nodes alike: more likely the
    wrong figure than a bad fleet). Nothing else in the report would suggest it."""
    shared = set(category.get("sharedThresholds") or [])
    missed = [t["metric"] for t in entry["thresholds"] if not t["passed"] and t["metric"] in shared
              and (t.get("source") or {}).get("kind", "explicit") == "explicit"]
    gpu = category.get("gpu") or category.get("thresholdGpu")
    if not missed or not gpu or gpu == "unknown":
        return
    if category.get("gpu"):
        entry["hint"] = (f"{', '.join(missed)}: the threshold given applies to every GPU architecture; to hold "
                         f"{gpu} nodes to their own, set thresholds.{gpu}.{missed[0]} (README \"Mixed GPU "
                         f"architectures\")")
        return
    groups = [g for g in entry["groups"] if g.get("nodes")]
    if groups and all(g["status"] == "Failed" for g in groups):
        entry["hint"] = (f"{'every group' if len(groups) > 1 else 'the one group'} missed {', '.join(missed)}, a "
                         f"threshold written for every GPU: if it is "
                         f"another GPU's figure, judge {gpu} by its own with thresholdProfile: default or "
                         f"thresholds.{gpu}.{missed[0]} (README \"Thresholds on any cluster\")")


def _named_set(ranges: Any, count: Any, names: dict[int, str]) -> dict:
    """A node set of the round history: `{nodeCount, nodes}` when the plan step sent every name, else `{nodeCount,
    ranges: [{first, last, count}]}` (index order is name order among the eligible nodes) for the ranges it sent,
    `rangesOmitted` when those do not cover the count, or just `{nodeCount}` (a large set cleared in a round
    travels as its count: plan_step.compact_history). A name it did not send reads `index <i>`, never a guess."""
    spans = [(lo, hi) for lo, hi in ranges or [] if isinstance(lo, int) and isinstance(hi, int) and hi > lo]
    kept = sum(hi - lo for lo, hi in spans)
    total = count if isinstance(count, int) else kept
    members = [i for lo, hi in spans for i in range(lo, hi)] if kept <= 64 else []
    if kept == total and all(i in names for i in members) and len(members) == kept:
        return {"nodeCount": total, "nodes": [names[i] for i in members]}
    name = lambda i: names.get(i, f"index {i}")  # noqa: E731
    out: dict[str, Any] = {"nodeCount": total}
    if spans:
        out["ranges"] = [{"first": name(lo), "last": name(hi - 1), "count": hi - lo} for lo, hi in spans]
        if kept < total:
            out["rangesOmitted"] = True
    return out


def _round_history(history: dict, node_count: Any) -> dict:
    """The plan step's compact round history (plan_step.compact_history) as the report's `roundHistory`, `releases`
    and `nodesNotReleased` (docs/internals.md)."""
    table = history.get("names") if isinstance(history.get("names"), dict) else {}
    names = {i: f"{table.get('p') or ''}{rest}" for i, rest in zip(table.get("i") or [], table.get("s") or [])
             if isinstance(i, int)}
    rounds = [{"round": h[0], "tests": h[1], "failed": h[2], "testSizes": [{"nodes": k, "tests": v} for k, v in h[3]],
               "cleared": _named_set(h[4], h[5], names), "clearedNodesReused": h[6], "doubted": h[7],
               "endedAfterSec": h[8]}
              for h in history.get("rounds") or [] if isinstance(h, list) and len(h) == 9]
    released = [{"releasedAtRound": g[0], "releasedAfterSec": g[1], **_named_set(g[2], g[3], names)}
                for g in history.get("released") or [] if isinstance(g, list) and len(g) == 4]
    out: dict[str, Any] = {"roundHistory": rounds, "releases": released}
    if isinstance(node_count, int) and rounds:  # no round ran (nothing to localize): nothing was held either
        # every node in no release group is held: accused, on a fault, unresolved or never cleared
        out["nodesNotReleased"] = node_count - sum(g["nodeCount"] for g in released)
    return out


#: an unresolved group of near misses (diagnose/screens.py `hold_undecided`)
UNDECIDED_MESSAGE = ("their single-node screens read low more than once, but the near-miss test ran out of rounds "
                     "before it could accuse or clear them: held, not released (re-test these nodes on their own)")


#: an unresolved set that failed some runs, passed others, then stayed quiet (diagnose/intermittent.py `result`)
QUIET_MESSAGE = ("their runs disagreed: they failed beside known-healthy partners, yet passed in other runs (a run "
                 "of the whole group among them), and stayed quiet since; a flapping fault or transient dips: held, "
                 "not released (re-test these nodes on their own)")
#: a node whose confirmation runs leaned to a deficit but never decisively (diagnose/items.py `_result_s`)
MARGINAL_MESSAGE = ("their runs beside known-healthy partners leaned to a deficit, but four of them never made it "
                    "decisive (odds under 99 to 1): too close to healthy to accuse, too low to release: held, not "
                    "released (re-test these nodes on their own)")
WHY_MESSAGES = {UNDECIDED: UNDECIDED_MESSAGE, QUIET: QUIET_MESSAGE, MARGINAL: MARGINAL_MESSAGE}


def _measured_node_minutes(ledger: Any) -> float | None:
    """GPU node-minutes the diagnose jobs were measured to hold (steps/plan_step.py `job_ledger`); None when any
    job went untimed or the ledger predates the timing: a partial sum would read as the whole cost."""
    if not isinstance(ledger, dict) or not isinstance(ledger.get("nodeSec"), (int, float)) or ledger.get("untimed"):
        return None
    return round(float(ledger["nodeSec"]) / 60, 1)


def _add_diagnose(entry: dict, verdict: dict) -> None:
    """Diagnose's verdict: suspects are blamed through their groups; an infrastructure fault (a link or switch
    between nodes that pass on their own) fails the category without blaming either node."""
    stats = verdict.get("stats") or {}
    faults = list(verdict.get("infrastructureFaults") or [])
    unresolved = [{"nodeCount": int(g.get("nodeCount", len(g.get("nodes") or []))),
                   "nodes": [str(n) for n in g.get("nodes") or []], **({"why": str(g["why"])} if g.get("why") else {})}
                  for g in verdict.get("unresolved") or []]
    entry["diagnose"] = {"suspects": list(verdict.get("suspects") or []), "infrastructureFaults": faults,
                         "unresolved": unresolved,
                         "jobs": stats.get("jobs"), "rounds": stats.get("rounds"),
                         "nodeMinutes": stats.get("nodeMinutes"), "nodeCount": verdict.get("nodeCount"),
                         # the planner's pass line (from the busBandwidthGBps threshold) and repeats per test
                         "passLineGBps": verdict.get("floor"),
                         "repeatsPerTest": (verdict.get("measured") or {}).get("repeats")}
    ledger = verdict.get("cleanup")  # the plan step's job ledger (steps/plan_step.py `job_ledger`)
    measured_minutes = _measured_node_minutes(ledger)
    if measured_minutes is not None:
        entry["diagnose"]["nodeMinutesMeasured"] = measured_minutes
    created = ledger.get("created") if isinstance(ledger, dict) else None
    if isinstance(created, int):  # job objects run, repeats included (`jobs` counts the planner's tests once)
        entry["diagnose"]["jobsRun"] = created
    cut = stats.get("stoppedAtRoundBudget") is True
    if cut:  # open work was left unresolved when the rounds ran out (planner.round_budget)
        entry["diagnose"]["stoppedAtRoundBudget"] = True
    if isinstance(verdict.get("history"), dict):  # absent in a verdict from before the history was kept
        entry["diagnose"].update(_round_history(verdict["history"], verdict.get("nodeCount")))
    entry["jobs"] = stats.get("jobs", entry["jobs"])
    if isinstance((verdict.get("measured") or {}).get("runs"), int):  # the thresholds judged every job that ran
        entry["runsMeasured"] = verdict["measured"]["runs"]
    for fault in faults:
        sides = [[str(x) for x in side] if isinstance(side, list) else [str(side)]
                 for side in fault.get("between") or []]
        nodes = [n for side in sides for n in side]
        entry["failedGroups"].append({"name": " <-> ".join(",".join(side) for side in sides),
                                      "nodeCount": len(nodes), "nodes": nodes, "reason": "InfrastructureFault",
                                      "message": str(fault.get("evidence") or "infrastructure fault"),
                                      "failureLog": "", "blamedNodes": []})
    for group in unresolved:
        entry["failedGroups"].append({
            "name": f"unresolved ({group['nodeCount']} nodes)", "nodeCount": group["nodeCount"],
            "nodes": group["nodes"],
            "reason": "Unresolved", "failureLog": "", "blamedNodes": [],
            "message": WHY_MESSAGES.get(group.get("why")) or
                       "diagnose could not narrow this group down: its tests failed but no single node or link "
                       "explains it (a deficit shared by all of them, e.g. the fabric or the threshold)"
                       + ("; or the diagnose stopped at its round budget before it did" if cut else "")})
    reasons = (["InfrastructureFault"] if faults else []) + (["Unresolved"] if unresolved else [])
    if reasons:
        entry["status"] = "Failed"
        entry["failureReason"] = min([r for r in [entry["failureReason"], *reasons] if r], key=_precedence)


def _failed_nodes(blames: list[tuple[str, list[dict]]]) -> list[dict]:
    """Merge per-category blame into one entry per node: reasons unique and sorted, messages "; "-joined."""
    nodes: dict[str, dict[str, Any]] = {}
    for label, blame in blames:
        for b in blame:
            node = nodes.setdefault(b["name"], {"reasons": set(), "messages": {}})
            node["reasons"].add(b["reason"])
            msgs = node["messages"].setdefault(label, [])
            if b["message"] and b["message"] not in msgs:
                msgs.append(b["message"])
    return [{"name": name, "reasons": sorted(n["reasons"]),
             "nvcreReasons": sorted({NVCRE_NODE_REASON.get(r, "WorkloadFailed") for r in n["reasons"]}),
             "message": "; ".join(f"{label}: {'; '.join(m)}" if m else label for label, m in n["messages"].items())}
            for name, n in sorted(nodes.items())]


def _failed_group_members(entries: list[dict], blamed: set[str]) -> list[dict]:
    """Nodes of a failed group that no evidence blames: not certified (the result is not PASSED), not accused
    either. Each says which groups it was in and whom their evidence named."""
    members: dict[str, list[str]] = {}
    for e in entries:
        for g in e.get("failedGroups") or []:
            named = g.get("blamedNodes") or []
            for node in g.get("nodes") or []:
                if node not in blamed and node not in named:
                    who = f"blamed: {', '.join(named)}" if named else "no node blamed"
                    members.setdefault(node, []).append(f"{e['domain']}/{e['variant']} group {g['name']} "
                                                        f"({g['reason']}; {who})")
    return [{"name": n, "message": "; ".join(msgs)} for n, msgs in sorted(members.items())]


def _cleanup(categories: list[dict]) -> dict:
    created: dict[str, bool] = {}
    for cat in categories:
        for run in cat.get("results") or []:
            if run.get("jobName"):
                created[str(run["jobName"])] = created.get(str(run["jobName"]), False) or bool(run.get("jobDeleted"))
    report = {"jobsCreated": len(created), "jobsDeleted": sum(created.values()),
              "leftover": sorted(n for n, deleted in created.items() if not deleted)}
    for cat in categories:  # diagnose carries its own ledger: its runs never reach the judge one by one
        ledger = (cat.get("diagnose") or {}).get("cleanup") or {}
        report["jobsCreated"] += int(ledger.get("created") or 0)
        report["jobsDeleted"] += int(ledger.get("deleted") or 0)
        report["leftover"] = sorted([*report["leftover"], *map(str, ledger.get("leftover") or [])])
    return report


def category_label(entry: dict) -> str:
    """`communication/all_reduce`, with the architecture when the run has several (`... [a100]`)."""
    return f"{entry.get('domain')}/{entry.get('variant')}" + (f" [{entry['gpu']}]" if entry.get("gpu") else "")


def _result(entries: list[dict], excluded: list[dict], incomplete: list[str]) -> str:
    if any(e["status"] == "Failed" for e in entries):
        return "FAILED"
    if any(e["status"] != "Passed" for e in entries) or excluded or incomplete or not entries:
        return "INCOMPLETE"  # everything that ran passed, but not every target node (or nothing) was tested
    return "PASSED"


def _architectures(summary: dict, entries: list[dict]) -> list[dict]:
    """One section per GPU architecture of a run over several: its nodes, its categories' verdict. The run's
    result covers them all (any architecture failing fails the run)."""
    out = []
    for arch in summary.get("architectures") or []:
        own = [e for e in entries if e.get("gpu") == arch.get("gpu")]
        gone = [e for e in summary.get("excludedNodes") or [] if e.get("name") in set(arch.get("nodes") or [])]
        out.append({"gpu": arch.get("gpu"), "gpuProduct": arch.get("gpuProduct"),
                    "testedNodes": arch.get("selectedNodes"), "nodes": list(arch.get("nodes") or []),
                    "result": _result(own, gone, [e["incomplete"] for e in own if e.get("incomplete")]),
                    "categoriesPassed": sum(1 for e in own if e["status"] == "Passed"), "categoriesTotal": len(own)})
    return out


def judge(name: str, summary: dict, categories: list[dict], *, generated_at: str | None = None) -> dict:
    """The CertificationReport for one run. `generated_at` is passed in (None stays null) to keep this pure.
    A run over several GPU architectures passes one input category per (category, architecture), each tagged with
    its `gpu`: each is judged on its own by judge_category, and `architectures` sums them up per GPU."""
    entries, blames = [], []
    for cat in categories:
        entry, blame = judge_category(cat)
        entries.append(entry)
        blames.append((category_label(entry), blame))
    excluded = [dict(e) for e in summary.get("excludedNodes") or []]
    passed = sum(1 for e in entries if e["status"] == "Passed")
    incomplete = [str(m) for m in summary.get("incomplete") or []]
    incomplete += [f"{category_label(e)}: {e['incomplete']}" for e in entries if e.get("incomplete")]
    result = _result(entries, excluded, incomplete)
    architectures = _architectures(summary, entries)
    failed_nodes = _failed_nodes(blames)
    members = _failed_group_members(entries, {n["name"] for n in failed_nodes})
    return _finite({
        "apiVersion": API_VERSION, "kind": KIND, "name": name, "generatedAt": generated_at, "result": result,
        "platform": summary.get("platform"), "gpu": summary.get("gpu"), "gpuProduct": summary.get("gpuProduct"),
        "totalNodes": summary.get("totalNodes"), "testedNodes": summary.get("selectedNodes"),
        "excludedNodes": excluded, **({"incomplete": incomplete} if incomplete else {}),
        **({"architectures": architectures} if architectures else {}),
        "categories": entries, "failedNodes": failed_nodes, "failedGroupMembers": members,
        "cleanup": _cleanup(categories),
        "summary": {"categoriesPassed": passed, "categoriesTotal": len(entries), "failedNodeCount": len(failed_nodes),
                    "excludedNodeCount": len(excluded)},
    })


__all__ = ["API_VERSION", "KIND", "NO_BLAME_REASONS", "NVCRE_NODE_REASON", "REASON_PRECEDENCE", "THRESHOLD_KINDS",
           "category_label", "judge", "judge_category", "lower_is_better", "sample_rows"]
