"""Which charts a category gets, and the numbers in them, from the report JSON alone (pure).

- bandwidth against message size (busbw and algbw): each group's `curve` (judge.py keeps it per group), the
  category's mean (`bandwidth`), the threshold's bound as a rule (threshold_bounds.py reads it from the CEL);
- each node's best measurement of the category's primary metric (the first threshold metric, else busbw, else the
  first metric measured), against the threshold and the fleet median;
- for diagnose, its rounds: tests run, failed and nodes released per round (`roundHistory`, `releases`), and the
  round each suspect's evidence came from (test ids are `r<round>-t<n>`).
"""

from __future__ import annotations

import html
import math
import re
import statistics
from typing import Any

from nvcre_hera.judge import lower_is_better
from nvcre_hera.report.card import clean, describe_evidence, duration, jobs_run, node_minutes, number
from nvcre_hera.report.words import plural
from nvcre_hera.report.svg import LEFT, RIGHT, WIDTH, Curve, NodeValue, Rule, bandwidth_chart, empty_chart, \
    node_chart

_TEST_ID = re.compile(r"^r(\d+)-t\d+$")
_BANDWIDTH_KEYS = (("busBandwidthGBps", "Bus bandwidth (GB/s)"), ("algBandwidthGBps", "Algorithm bandwidth (GB/s)"))


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(name))]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def primary_metric(c: dict) -> str | None:
    measured = list(dict.fromkeys(k for g in c.get("groups") or [] for k in g.get("metrics") or {}))
    for t in c.get("thresholds") or []:
        if t.get("metric") in measured:
            return str(t["metric"])
    if "busBandwidthGBps" in measured:
        return "busBandwidthGBps"
    return measured[0] if measured else None


def threshold_rules(c: dict, metric: str) -> list[Rule]:
    """The bounds the category's threshold on `metric` puts on a value; none when it is no simple interval (the
    chart then draws no rule: the card's threshold line still says what was judged)."""
    from nvcre_hera.threshold_bounds import threshold_bounds

    rules = []
    for t in c.get("thresholds") or []:
        if t.get("metric") != metric or not t.get("expression"):
            continue
        try:
            b = threshold_bounds(str(t["expression"]))
        except ValueError:
            continue
        if b.low is not None:
            rules.append(Rule(b.low, f"threshold {'>' if b.low_strict else '≥'} {number(b.low)}"))
        if b.high is not None:
            rules.append(Rule(b.high, f"threshold {'<' if b.high_strict else '≤'} {number(b.high)}"))
    return rules


def group_curves(c: dict, key: str) -> list[Curve]:
    out = []
    for g in c.get("groups") or []:
        curve = g.get("curve") or {}
        sizes, values = curve.get("sizeBytes") or [], curve.get(key) or []
        points = [(float(s), float(v)) for s, v in zip(sizes, values) if _num(s) and _num(v) is not None]
        if points:
            label = f"{g.get('name')}: {', '.join(map(str, g.get('nodes') or []))}"
            out.append(Curve(label, points, g.get("status") == "Failed"))
    return out


def node_values(c: dict, metric: str) -> list[NodeValue]:
    """Each node's best value over the groups it was in (a node in a failed group is marked failed)."""
    best: dict[str, float | None] = {}
    failed: set[str] = set()
    low = lower_is_better(metric)
    for g in c.get("groups") or []:
        value = _num((g.get("metrics") or {}).get(metric))
        for node in g.get("nodes") or []:
            node = str(node)
            old = best.get(node)
            if value is not None and (old is None or (value < old if low else value > old)):
                best[node] = value
            else:
                best.setdefault(node, None)
            if g.get("status") == "Failed":
                failed.add(node)
    return [NodeValue(n, best[n], n in failed) for n in sorted(best, key=_natural)]


def _within(rules: list[Rule], values: list[float]) -> list[Rule]:
    """Drop a bound far above every value (`value < 5000`): it would squash the chart and says nothing here."""
    top = max(values, default=0.0)
    return [r for r in rules if r.value <= 1.5 * top or not values]


def category_charts(c: dict) -> list[str]:
    """The `<svg>` charts of one category, in page order."""
    out = []
    if c.get("diagnose"):
        return [diagnose_timeline(c["diagnose"])]
    groups = c.get("groups") or []
    has_curves = any(g.get("curve") for g in groups)
    if has_curves or c.get("domain") == "communication":
        for key, label in _BANDWIDTH_KEYS:
            curves = group_curves(c, key)
            mean = [(float(r["sizeBytes"]), float(r[key])) for r in c.get("bandwidth") or []
                    if _num(r.get("sizeBytes")) and _num(r.get(key)) is not None]
            rng = c.get("bandwidthRange") or {}
            band = [(float(sz), lo, hi) for sz, lo, hi in zip(rng.get("sizeBytes") or [], rng.get(f"{key}Min") or [],
                                                              rng.get(f"{key}Max") or [])
                    if _num(sz) and _num(lo) is not None and _num(hi) is not None]
            values = [v for cv in curves for _, v in cv.points] + [hi for _, _, hi in band]
            out.append(bandwidth_chart(f"{label} vs message size", label, curves, mean,
                                       _within(threshold_rules(c, key), values), band,
                                       int(c.get("curvesOmitted") or 0)))
            if not curves and not mean and not band:
                break  # one empty frame says it; two would repeat it
    metric = primary_metric(c)
    if metric is None:
        out.append(empty_chart("Per-node measurement", "no node has a measurement in this category", "nodes"))
        return out
    nodes = node_values(c, metric)
    present = [n.value for n in nodes if n.value is not None]
    rules = _within(threshold_rules(c, metric), present)
    if present:
        rules.append(Rule(statistics.median(present), f"median {number(statistics.median(present))}", "median"))
    out.append(node_chart(f"Best {metric} per node ({len(nodes)} node{'s' if len(nodes) != 1 else ''})", metric,
                          nodes, rules))
    return out


def _history_rows(d: dict, rounds: int) -> list[tuple[str, str, list[tuple[int, float, str, str]]]]:
    """The round history as chart rows (label, css class, [(round, bar share, text, tooltip)]): tests run, tests
    failed, and the nodes released so far (cumulative, from the release groups). Empty without a history."""
    hist = [h for h in d.get("roundHistory") or [] if isinstance(h, dict) and isinstance(h.get("round"), int)]
    if not hist:
        return []
    top = max((int(h.get("tests") or 0) for h in hist), default=0) or 1
    ran, failed = [], []
    for h in hist:
        r, t, f = h["round"], int(h.get("tests") or 0), h.get("failed")
        sizes = ", ".join(f"{x.get('tests')} × {plural(x.get('nodes'), 'node')}" for x in h.get("testSizes") or [])
        cleared = int((h.get("cleared") or {}).get("nodeCount") or 0)
        ended = f", ended {duration(h['endedAfterSec'])} into the diagnose" if _num(h.get("endedAfterSec")) else ""
        ran.append((r, t / top, str(t), f"round {r}: {plural(t, 'test')} ({sizes}), {plural(cleared, 'node')} "
                                         f"cleared{ended}"))
        if isinstance(f, int):
            failed.append((r, f / top, str(f), f"round {r}: {f} of {plural(t, 'test')} failed"))
    total = int(d.get("nodeCount") or 0)
    by_round: dict[int, int] = {}
    for g in d.get("releases") or []:
        if isinstance(g, dict) and isinstance(g.get("releasedAtRound"), int):
            by_round[g["releasedAtRound"]] = by_round.get(g["releasedAtRound"], 0) + int(g.get("nodeCount") or 0)
    released, so_far = [], 0
    for r in range(1, rounds + 1):
        so_far += by_round.get(r, 0)
        share = so_far / total if total else 0.0
        released.append((r, share, str(so_far), f"after round {r}: {plural(so_far, 'node')} released"
                                                 f"{f' of {total}' if total else ''}"))
    return [("tests run", "hr", ran), ("tests failed", "hf", failed), ("nodes released (total)", "hc", released)]


def diagnose_timeline(d: dict) -> str:
    """Rounds 1..R across. First the round history (tests run, tests failed, nodes released so far: a bar each,
    its number when the column is wide enough), then one row per suspect, infrastructure fault and unresolved group
    with a red mark at each round whose test is evidence against it."""
    e = lambda v: html.escape(clean(v), quote=True)  # noqa: E731
    rounds = int(d.get("rounds") or 0)
    rows: list[tuple[str, list[tuple[int, str]]]] = []
    for s in d.get("suspects") or []:
        marks = []
        for ev in s.get("evidence") or [] if isinstance(s.get("evidence"), list) else []:
            m = _TEST_ID.match(str((ev or {}).get("test") or ""))
            if m:
                marks.append((int(m.group(1)), describe_evidence([ev])))
        rows.append((f"suspect {s.get('node')}", marks))
    for f in d.get("infrastructureFaults") or []:
        rows.append(("link " + " / ".join(",".join(map(str, x)) if isinstance(x, list) else str(x)
                                           for x in f.get("between") or []), []))
    for u in d.get("unresolved") or []:
        rows.append((f"unresolved ({u.get('nodeCount')} nodes)", []))
    if not rows:
        rows.append(("no suspects: every node passed", []))
    history = _history_rows(d, rounds)
    label_w, top, row_h = 190, 40, 22
    lanes = len(history) + len(rows)
    height = top + row_h * lanes + 36
    span = WIDTH - RIGHT - (LEFT + label_w)
    step = span / max(1, rounds)
    col = lambda r: LEFT + label_w + (min(r, max(rounds, 1)) - 0.5) * step  # noqa: E731
    out = [f'<svg class="chart diag" viewBox="0 0 {WIDTH} {height}" '
           f'width="{WIDTH}" height="{height}" role="img" aria-label="Diagnose rounds">',
           f'<text class="t" x="{LEFT}" y="16">Diagnose: {rounds} round{"s" if rounds != 1 else ""}, '
           f'{e(jobs_run(d))} jobs, {e(node_minutes(d))}</text>']
    every = max(1, math.ceil(24 / step))  # narrow columns: label every few rounds (and the last), lines for all
    for r in range(1, rounds + 1):
        x = col(r)
        shown = (r - 1) % every == 0 or (r == rounds and (r - 1) % every >= every / 2)  # the last, if not crowded
        label = f'<text class="xl" x="{x:.0f}" y="{top - 6}">r{r}</text>' if shown else ""
        out.append(f'{label}<line class="rd" x1="{x:.0f}" x2="{x:.0f}" y1="{top}" y2="{top + row_h * lanes}"/>')
    bar_w = max(2.0, min(step * 0.3, 18.0))
    for i, (label, kind, cells) in enumerate(history):
        y0 = top + i * row_h
        out.append(f'<text x="{LEFT + label_w - 6}" y="{y0 + row_h / 2 + 4:.0f}" text-anchor="end">{e(label)}</text>')
        for r, share, text, why in cells:
            if r < 1 or r > rounds:
                continue
            h = max(1.0, (row_h - 6) * min(1.0, share)) if share > 0 else 0.0
            x0 = col(r) - step * 0.45
            # the number beside its bar when the column has room; the tooltip always says it
            out.append(f'<g class="{kind}" data-round="{r}" data-value="{e(text)}"><title>{e(why)}</title>'
                       f'<rect x="{x0:.0f}" y="{y0 + row_h - 3 - h:.0f}" width="{bar_w:.0f}" height="{h:.0f}"/>'
                       + (f'<text class="hv" x="{x0 + bar_w + 3:.0f}" y="{y0 + row_h / 2 + 4:.0f}">{e(text)}</text>'
                          if step * 0.9 >= bar_w + 3 + 6 * len(text) else "") + "</g>")
    for i, (label, marks) in enumerate(rows):
        y = top + (len(history) + i) * row_h + row_h / 2
        out.append(f'<text x="{LEFT + label_w - 6}" y="{y + 4:.0f}" text-anchor="end">{e(label)}</text>'
                   f'<line class="g" x1="{LEFT + label_w}" x2="{WIDTH - RIGHT}" y1="{y:.0f}" y2="{y:.0f}"/>')
        for r, why in marks:
            out.append(f'<circle class="ev" cx="{col(r):.0f}" cy="{y:.0f}" r="6"><title>{e(why)}</title></circle>')
    note = ("bars: tests run, failed, nodes released so far; red: the round of evidence against it" if history else
            "red: the round of the test that is evidence against it (no round history in this report)")
    out.append(f'<text class="msg" x="{LEFT}" y="{height - 10}">{e(note)}</text></svg>')
    return "".join(out)


__all__ = ["category_charts", "diagnose_timeline", "group_curves", "node_values", "primary_metric",
           "threshold_rules"]
