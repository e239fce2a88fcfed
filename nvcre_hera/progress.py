"""Live progress of a certification: one record as each test ends (its category, group and nodes, the measured value
against its threshold, ✗ the moment a test fails, `N/M` done in its category), one summary per category, one at
the end. Shared by `nvcre certify` (the local executor's nodes as they finish) and `nvcre submit --watch` (the
Workflow's `status.nodes`, polled through the Argo Server).

Pure: `Progress.update(node)` takes one node, normalised by `node_from_local` or `node_from_argo`, and returns the
records it completes (plain dicts, `format_text` / `format_json` print them). Node fields follow Argo's NodeStatus
(argo-workflows v4 pkg/apis/workflow/v1alpha1/workflow_types.go `NodeStatus`: id, name, displayName, type,
templateName, phase, message, startedAt, finishedAt, inputs, outputs). Which node is what follows our compiler:
tests are pods of template `test-<index>`, the category is the DAG task `c<index>-<variant>` (template
`category-<index>` or `diagnose-<index>`), a diagnose round's planner is `plan-<index>`, discovery is `discover`.

The per-test verdict is informational and fails closed on nothing: the judge step's report is the verdict. A
threshold this module cannot evaluate on one value (a fleet-relative one, say) is shown as "judged at the end".
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from nvcre_hera.judge import lower_is_better
from nvcre_hera.report.card import clean, number
from nvcre_hera.report.timing import epoch_seconds
from nvcre_hera.report.words import fixed, plural
from nvcre_hera.threshold_select import select_thresholds

DONE = frozenset({"Succeeded", "Failed", "Error", "Skipped", "Omitted"})
_TEST = re.compile(r"^test-(\d+)$")
_CATEGORY = re.compile(r"^(?:category|diagnose)-(\d+)$")
_PLAN = re.compile(r"^plan-(\d+)$")
NAMES_SHOWN = 3


@dataclass
class Node:
    """A workflow node, the fields progress reads (parameters as name -> string, as both sources store them)."""

    id: str
    template: str
    type: str
    phase: str
    message: str = ""
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    time: float | None = None  # seconds since the workflow started, when the node ended


def node_from_local(node: Any) -> Node:
    """From the local executor's NodeStatus (simulated seconds)."""
    return Node(node.id, node.template, node.type, node.phase, node.message or "", dict(node.inputs),
                dict((node.outputs or {}).get("parameters") or {}), node.finished)


def node_from_argo(node: dict, started_at: Any = None) -> Node:
    """From one entry of a Workflow's `status.nodes` (RFC 3339 times; `started_at` is the workflow's start)."""
    params = lambda side: {p.get("name"): str(p.get("value", "")) for p in  # noqa: E731
                           ((node.get(side) or {}).get("parameters") or []) if p.get("name")}
    end, start = epoch_seconds(node.get("finishedAt")), epoch_seconds(started_at) if started_at else None
    return Node(str(node.get("id") or node.get("name")), str(node.get("templateName") or ""),
                str(node.get("type") or ""), str(node.get("phase") or ""), str(node.get("message") or ""),
                params("inputs"), params("outputs"), None if end is None or start is None else end - start)


@dataclass
class _Category:
    key: str
    scale: str
    thresholds: dict[str, str]  # those for the run's GPU (until discovery says which: the plain ones)
    options: dict[str, Any] = field(default_factory=dict)  # as planned: per-GPU maps and profile floors included
    compiled: dict[str, Any] = field(default_factory=dict)
    total: int | None = None
    done: int = 0
    failed: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    summarised: bool = False


def _json(text: str | None, default: Any) -> Any:
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default


def plan_of(workflow: dict) -> list[dict]:
    """The plan the compiler put in `spec.arguments.parameters[plan]`: categories with options and thresholds."""
    for p in ((workflow.get("spec") or {}).get("arguments") or {}).get("parameters") or []:
        if p.get("name") == "plan":
            return list((_json(p.get("value"), {}) or {}).get("categories") or [])
    return []


class Progress:
    """Turns finished nodes into progress records; each node counts once, however often it is seen."""

    def __init__(self, workflow: dict) -> None:
        self.categories: dict[int, _Category] = {}
        for c in plan_of(workflow):
            opts = c.get("options") or {}
            self.categories[int(c["index"])] = _Category(f"{c.get('domain')}/{c.get('variant')}",
                                                         str(opts.get("testScale") or ""),
                                                         select_thresholds(opts, "unknown")[0],
                                                         options=dict(opts))
        self.seen: set[str] = set()
        self.tests = self.failed_tests = 0

    # -- records -------------------------------------------------------------------------------------------------
    def update(self, node: Node) -> list[dict]:
        if node.phase not in DONE or node.id in self.seen:
            return []
        if node.type not in ("Pod", "DAG", "Steps"):
            return []
        self.seen.add(node.id)
        if node.type == "Pod" and (m := _TEST.match(node.template)):
            return [self._test(int(m.group(1)), node)]
        if node.type == "Pod" and node.template == "discover":
            return [self._discover(node)]
        if node.type == "Pod" and (m := _PLAN.match(node.template)):
            return self._plan(int(m.group(1)), node)
        if node.type != "Pod" and (m := _CATEGORY.match(node.template)):
            return self._category_done(int(m.group(1)), node)
        if node.type == "Pod" and node.phase in ("Failed", "Error") and node.template != "judge":
            return [{"event": "step", "step": node.template, "phase": node.phase, "message": node.message,
                     "t": node.time}]  # the judge fails on a failed verdict: its card says why
        return []

    def finish(self, name: str, phase: str, message: str = "", seconds: float | None = None) -> dict:
        """The last record: the workflow's phase and the tests' tally."""
        return {"event": "workflow", "workflow": name, "phase": phase, "message": message, "t": seconds,
                "categories": len(self.categories), "tests": self.tests, "failedTests": self.failed_tests}

    def _discover(self, node: Node) -> dict:
        summary = _json(node.outputs.get("summary"), {}) or {}
        gpu = str(summary.get("gpu") or "unknown")
        if "+" not in gpu:  # one architecture: its per-GPU and profile thresholds (mixed runs: each group's own GPU)
            for cat in self.categories.values():
                cat.thresholds = select_thresholds(cat.options, gpu)[0]
                cat.compiled.clear()
        for c in summary.get("categories") or []:
            cat = self.categories.get(int(c.get("index", -1)))
            if cat is not None and cat.scale != "diagnose" and isinstance(c.get("groups"), int):
                cat.total = c["groups"]
        return {"event": "discover", "phase": node.phase, "t": node.time, "message": node.message,
                "selectedNodes": summary.get("selectedNodes"), "totalNodes": summary.get("totalNodes"),
                "tests": {self.categories[i].key: self.categories[i].total for i in sorted(self.categories)}}

    def _plan(self, index: int, node: Node) -> list[dict]:
        tests = _json(node.outputs.get("tests"), [])
        cat = self.categories.get(index)
        if not isinstance(tests, list) or not tests or cat is None:
            return []
        return [{"event": "round", "category": cat.key, "tests": len(tests), "t": node.time,
                 "round": str(tests[0].get("id", "")).split("-")[0] if isinstance(tests[0], dict) else None}]

    def _metric(self, thresholds: dict[str, str], metrics: dict) -> str | None:
        for m in thresholds:
            if m in metrics:
                return m
        return "busBandwidthGBps" if "busBandwidthGBps" in metrics else next(iter(metrics), None)

    def _judge_value(self, cat: _Category, expr: str | None, value: float) -> bool | None:
        from nvcre_hera.thresholds import compile_threshold, evaluate

        if expr is None:
            return True
        try:
            if expr not in cat.compiled:
                cat.compiled[expr] = compile_threshold(expr)
            return bool(evaluate(cat.compiled[expr], value))
        except ValueError:
            return None  # not decidable on one value: the judge decides

    def _test(self, index: int, node: Node) -> dict:
        cat = self.categories.setdefault(index, _Category(f"category {index}", "", {}))
        group = _json(node.inputs.get("group"), {}) or {}
        runs = _json(node.outputs.get("metrics"), [])
        runs = [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
        nodes = [str(n) for n in group.get("nodes") or []] or \
            sorted({str(n) for r in runs for n in r.get("nodes") or []})
        size = len(nodes) or sum(int(b) - int(a) for a, b in group.get("ranges") or [] if isinstance(b, int))
        metrics = {}
        for r in runs:  # the worst repeat counts, as in the judge
            for k, v in (r.get("metrics") or {k: r[k] for k in r if k.endswith(("GBps", "Ratio", "Sec"))}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    metrics[k] = (max if lower_is_better(k) else min)(metrics.get(k, v), v)
        reasons = [x for r in runs for x in (r.get("reasons") or []) if isinstance(x, (dict, str))]
        # seconds its pods waited Pending (WorkloadSchedulingBlocked time, kept off timeoutPerJob), worst repeat
        blocked = max((float(b.get("seconds") or 0) for r in runs if isinstance(b := r.get("schedulingBlocked"), dict)),
                      default=0.0)
        workload_ok = node.phase == "Succeeded" and bool(runs) and all(r.get("status", "ok") == "ok" for r in runs)
        # a group discovery tagged with its GPU architecture is held to that GPU's thresholds
        thresholds = select_thresholds(cat.options, str(group["gpu"]))[0] if group.get("gpu") \
            else cat.thresholds
        metric = self._metric(thresholds, metrics)
        value = metrics.get(metric) if metric else None
        verdict: bool | None = workload_ok
        if workload_ok and metric is not None and value is not None:
            verdict = self._judge_value(cat, thresholds.get(metric), float(value))
            cat.values.append(float(value))
        elif workload_ok and thresholds:
            verdict = False  # a threshold with no measurement fails (the judge: MeasurementNotFound)
        cat.done += 1
        self.tests += 1
        name = str(group.get("id") or node.id)
        if verdict is False:
            cat.failed.append(name)
            self.failed_tests += 1
        why = node.message if node.phase != "Succeeded" else ""
        if reasons and not workload_ok:
            first = reasons[0]
            why = f"{first.get('reason')}: {first.get('message')}" if isinstance(first, dict) else str(first)
        return {"event": "test", "category": cat.key, "group": name, "nodes": nodes, "nodeCount": size,
                "phase": node.phase, "workloadOk": workload_ok, "passed": verdict, "metric": metric, "value": value,
                "threshold": thresholds.get(metric) if metric else None, "reason": why or None,
                "done": cat.done, "total": cat.total, "t": node.time,
                **({"schedulingBlockedSec": round(blocked, 1)} if blocked else {})}

    def _category_done(self, index: int, node: Node) -> list[dict]:
        cat = self.categories.get(index)
        if cat is None or cat.summarised:
            return []
        cat.summarised = True
        vals = cat.values
        return [{"event": "category", "category": cat.key, "phase": node.phase, "done": cat.done, "total": cat.total,
                 "failed": len(cat.failed), "failedGroups": cat.failed[:20], "t": node.time,
                 "min": min(vals) if vals else None, "median": statistics.median(vals) if vals else None,
                 "max": max(vals) if vals else None}]


def _stamp(t: Any) -> str:
    return f"[{t:7.1f}s]" if isinstance(t, (int, float)) else "[      -]"


def _names(nodes: list[str], count: int) -> str:
    if not nodes:
        return plural(count, "node") if count else ""
    shown = ", ".join(clean(n) for n in nodes[:NAMES_SHOWN])
    return shown + (f", … (+{len(nodes) - NAMES_SHOWN})" if len(nodes) > NAMES_SHOWN else "")


def format_text(r: dict) -> str:
    """One line for a person; cluster-supplied strings are cleaned of control characters."""
    ev, t = r.get("event"), _stamp(r.get("t"))
    if ev == "test":
        mark = {True: "✓", False: "✗", None: "?"}[r["passed"]]
        count = f"{r['done']}/{r['total']}" if r.get("total") else f"{r['done']}"
        where = f"{clean(r['group'])} {_names(r.get('nodes') or [], r.get('nodeCount') or 0)}".rstrip()
        if r.get("workloadOk") is False:  # what it measured before it failed is not judged
            what = "workload failed" if not r.get("reason") else ""
        elif r.get("value") is not None:
            what = f"{r['metric']} {fixed(r['value'])}"
            if r.get("threshold"):
                what += f" vs {clean(r['threshold'])}" + (" (judged at the end)" if r["passed"] is None else "")
        else:
            what = "no measurement"
        if r.get("reason"):
            what += (": " if what else "") + clean(r["reason"])[:160]
        elif r.get("schedulingBlockedSec"):  # it ran in the end: say how long it could not start
            what += f" (pods Pending {r['schedulingBlockedSec']:.0f}s first: WorkloadSchedulingBlocked, " \
                    "not counted against timeoutPerJob)"
        return f"{t} {mark} {clean(r['category'])} {count:>7}  {where}  {what}"
    if ev == "category":
        total = r.get("total") or r.get("done")
        stats = f"; min {fixed(r['min'])}, median {fixed(r['median'])}, max {fixed(r['max'])}" \
            if r.get("median") is not None else ""
        failed = f" ({', '.join(clean(g) for g in r['failedGroups'])}{', …' if r['failed'] > 20 else ''})" \
            if r.get("failed") else ""
        mark = "✗" if r.get("failed") or r.get("phase") != "Succeeded" else "✓"
        return (f"{t} {mark} {clean(r['category'])}: {r['done']}/{total} done, {r['failed']} failed{failed}"
                f"{stats}")
    if ev == "discover":  # a line only when it fails: each test line says `N/M` (the JSON record has the counts)
        if r.get("phase") != "Succeeded":
            return f"{t} ✗ discover {r.get('phase')}: {clean(r.get('message'))}"
        return ""
    if ev == "round":
        return f"{t} · {clean(r['category'])} diagnose {r.get('round') or 'round'}: {plural(r['tests'], 'test')}"
    if ev == "step":
        return f"{t} ✗ {clean(r['step'])} {r['phase']}: {clean(r.get('message'))}"
    if ev == "workflow":
        failed = f", {r['failedTests']} failed" if r.get("failedTests") else ""
        return (f"{t} workflow {clean(r['workflow'])} {r['phase']}: {plural(r['tests'], 'test')} in "
                f"{plural(r['categories'], 'category', 'categories')}{failed}"
                + (f": {clean(r['message'])}" if r.get("message") else ""))
    return f"{t} {json.dumps(r, ensure_ascii=False)}"


def format_json(r: dict) -> str:
    """One JSON object on one line (no NaN), for machines; times to 0.1 s."""
    if isinstance(r.get("t"), float):
        r = {**r, "t": round(r["t"], 1)}
    return json.dumps(r, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class Printer:
    """The thin edge: feeds nodes to a Progress and prints its records as they come (flushed: a failing test is on
    the terminal the moment it ends)."""

    def __init__(self, mode: str = "text", out: TextIO | None = None) -> None:
        self.mode, self.out = mode, out
        self.progress: Progress | None = None
        self.started_at: str | None = None

    def _print(self, records: list[dict]) -> None:
        out = self.out or sys.stdout
        for r in records:
            line = format_json(r) if self.mode == "json" else format_text(r)
            if line:
                out.write(line + "\n")
        out.flush()

    def start(self, workflow: dict) -> None:
        self.progress = Progress(workflow)

    def local_watch(self, workflow: dict) -> Callable[[Any], None]:
        """For run_local(watch=...): the callback for the local executor's nodes."""
        self.start(workflow)
        return lambda node: self._print(self.progress.update(node_from_local(node)))

    def argo_node(self, node: dict, workflow_started_at: str | None = None) -> None:
        """One entry of `status.nodes` (seen again on every poll: counted once)."""
        if self.progress is None:
            self.start({})
        stamp = workflow_started_at or node.get("startedAt")
        if stamp and (self.started_at is None or (epoch_seconds(stamp) or 0) < (epoch_seconds(self.started_at) or 0)):
            self.started_at = stamp  # the earliest start seen: the workflow's, or its first node's
        self._print(self.progress.update(node_from_argo(node, self.started_at)))

    def end(self, name: str, phase: str, message: str = "", seconds: float | None = None) -> None:
        if self.progress is None:
            self.start({})
        self._print([self.progress.finish(name, phase, message, seconds)])

    def result(self, result: str, report_path: str | None = None) -> None:
        self._print([{"event": "result", "result": result, "report": report_path}])


__all__ = ["Node", "Printer", "Progress", "format_json", "format_text", "node_from_argo", "node_from_local",
           "plan_of"]
