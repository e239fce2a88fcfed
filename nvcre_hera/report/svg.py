"""Inline SVG charts for the HTML report: pure functions from plain numbers to one `<svg>` string each.

No charting library and no script: the page must open offline, attached to a ticket. Every label that comes from
the cluster (group and node names) is HTML-escaped here, at the point it enters markup. Coordinates are rounded to
whole pixels so a 1,024-node page stays small (see bench/bench_report.py for its weight and render time).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nvcre_hera.report.card import clean, human_size, number

WIDTH, HEIGHT = 580, 280
LEFT, RIGHT, TOP, BOTTOM = 60, 16, 28, 44
HIGHLIGHTED = 40  # failing groups drawn (and titled) one by one; the rest share one red path
BARS_MAX = 96  # above this many nodes the per-node view is a heat map
HEAT_COLS = 32
HEAT_CELL = 16


def _e(value: Any) -> str:
    return html.escape(clean(value), quote=True)


@dataclass
class Curve:
    """One group's measurement against message size: (sizeBytes, value) points, sorted by size."""

    name: str
    points: list[tuple[float, float]]
    failed: bool = False


@dataclass
class NodeValue:
    """One node's best measurement in a category (None: it has none), and whether a group of it failed."""

    name: str
    value: float | None
    failed: bool = False


@dataclass
class Rule:
    """A horizontal line at `value`: the threshold or the fleet median."""

    value: float
    label: str
    kind: str = "rule"  # css class: rule (threshold) | median


@dataclass
class _Axes:
    x0: float
    x1: float
    y1: float
    ticks: list[float] = field(default_factory=list)

    def x(self, v: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return LEFT + (v - self.x0) / span * (WIDTH - LEFT - RIGHT)

    def y(self, v: float) -> float:
        return HEIGHT - BOTTOM - (v / (self.y1 or 1.0)) * (HEIGHT - TOP - BOTTOM)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps up to at least `top` (1, 2, 2.5 or 5 times a power of ten)."""
    if not math.isfinite(top) or top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def _frame(title: str, y_label: str, axes: _Axes, x_labels: list[tuple[float, str]], kind: str) -> list[str]:
    out = [f'<svg class="chart {kind}" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{_e(title)}">',
           f'<text class="t" x="{LEFT}" y="16">{_e(title)}</text>']
    for t in axes.ticks:
        y = axes.y(t)
        out.append(f'<line class="g" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.0f}" y2="{y:.0f}"/>'
                   f'<text class="yl" x="{LEFT - 4}" y="{y + 4:.0f}">{number(t)}</text>')
    for x, label in x_labels:
        out.append(f'<text class="xl" x="{x:.0f}" y="{HEIGHT - BOTTOM + 16}">{_e(label)}</text>')
    out.append(f'<text class="yt" x="12" y="{TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f}" '
               f'transform="rotate(-90 12 {TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f})">{_e(y_label)}</text>')
    out.append(f'<line class="ax" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{HEIGHT - BOTTOM}"/>'
               f'<line class="ax" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM}"/>')
    return out


def _rules(axes: _Axes, rules: Sequence[Rule]) -> list[str]:
    out = []
    for r in rules:
        y = axes.y(r.value)
        out.append(f'<line class="{_e(r.kind)}" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.0f}" y2="{y:.0f}">'
                   f'<title>{_e(r.label)}</title></line>'
                   f'<text class="{_e(r.kind)}l" x="{WIDTH - RIGHT - 2}" y="{y - 4:.0f}">{_e(r.label)}</text>')
    return out


def empty_chart(title: str, message: str, kind: str) -> str:
    """A chart frame that says why it has no data (never a silently missing chart)."""
    return (f'<svg class="chart {kind} empty" viewBox="0 0 {WIDTH} 80" '
            f'width="{WIDTH}" height="80" role="img" aria-label="{_e(title)}">'
            f'<text class="t" x="{LEFT}" y="16">{_e(title)}</text>'
            f'<rect class="none" x="{LEFT}" y="26" width="{WIDTH - LEFT - RIGHT}" height="44"/>'
            f'<text class="msg" x="{LEFT + 10}" y="53">{_e(message)}</text></svg>')


def _path(points: list[tuple[float, float]], axes: _Axes) -> str:
    return "M" + "L".join(f"{axes.x(math.log2(s)):.0f} {axes.y(v):.0f}" for s, v in points)


def bandwidth_chart(title: str, y_label: str, curves: Sequence[Curve], mean: list[tuple[float, float]],
                    rules: Sequence[Rule] = (), band: Sequence[tuple[float, float, float]] = (),
                    omitted: int = 0) -> str:
    """Value against message size (log2 axis): every group a faint line, failing groups red, the category's mean
    bold, each rule (the threshold) a dashed line. At scale the report keeps some groups' curves only: `band`
    (size, min, max over every judged run) is then shaded, and `omitted` says how many lines are not drawn."""
    band = [(s, lo, hi) for s, lo, hi in band if s > 0 and lo is not None and hi is not None]
    curves = [Curve(c.name, [(s, v) for s, v in c.points if s > 0 and v is not None and math.isfinite(v)], c.failed)
              for c in curves]
    curves = [c for c in curves if c.points]
    mean = [(s, v) for s, v in mean if s > 0 and v is not None and math.isfinite(v)]
    sizes = sorted({s for c in curves for s, _ in c.points} | {s for s, _ in mean} | {s for s, _, _ in band})
    if not sizes:
        return empty_chart(title, "no bandwidth samples: no group's workload completed a measurement", "bw")
    values = [v for c in curves for _, v in c.points] + [v for _, v in mean] + [r.value for r in rules] + \
        [hi for _, _, hi in band]
    ticks = nice_ticks(max(values) * 1.05)
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1])
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    axes = _Axes(lo, hi, ticks[-1], ticks)
    every = max(1, math.ceil(len(sizes) / 8))
    labels = [(axes.x(math.log2(s)), human_size(s)) for s in sizes[::every]]
    out = _frame(title, y_label, axes, labels, "bw")
    ok = [c for c in curves if not c.failed]
    bad = [c for c in curves if c.failed]
    if band:
        upper = [(axes.x(math.log2(s)), axes.y(hi)) for s, _, hi in band]
        lower = [(axes.x(math.log2(s)), axes.y(lo)) for s, lo, _ in reversed(band)]
        out.append(f'<polygon class="band" points="{" ".join(f"{x:.0f},{y:.0f}" for x, y in upper + lower)}">'
                   f'<title>range over every judged run ({omitted} group lines not drawn)</title></polygon>')
    if ok:
        out.append(f'<path class="grp" d="{"".join(_path(c.points, axes) for c in ok)}">'
                   f'<title>{len(ok)} passing group{"s" if len(ok) != 1 else ""}</title></path>')
    for c in bad[:HIGHLIGHTED]:
        out.append(f'<path class="fail" d="{_path(c.points, axes)}"><title>{_e(c.name)} (failed)</title></path>')
    if len(bad) > HIGHLIGHTED:
        out.append(f'<path class="fail" d="{"".join(_path(c.points, axes) for c in bad[HIGHLIGHTED:])}">'
                   f'<title>{len(bad) - HIGHLIGHTED} more failed groups</title></path>')
    if mean:
        out.append(f'<path class="mean" d="{_path(mean, axes)}"><title>mean over the runs whose workload completed</title></path>')
        out += [f'<circle class="mean" cx="{axes.x(math.log2(s)):.0f}" cy="{axes.y(v):.0f}" r="3"/>'
                for s, v in mean]
    out += _rules(axes, rules)
    out.append(_legend([("grp", f"{len(ok)} of {len(ok) + omitted} groups" if omitted else "each group"),
                        ("fail", "failed group"), ("mean", "mean"), *((("band", "range"),) if band else ()),
                        *(("rule", "threshold") for r in rules[:1] if r.kind == "rule")]))
    out.append("</svg>")
    return "".join(out)


def _legend(items: list[tuple[str, str]]) -> str:
    out, x = [], LEFT
    for cls, label in items:
        out.append(f'<line class="{cls}" x1="{x}" x2="{x + 18}" y1="{HEIGHT - 10}" y2="{HEIGHT - 10}"/>'
                   f'<text class="lg" x="{x + 22}" y="{HEIGHT - 6}">{_e(label)}</text>')
        x += 30 + 7 * len(label)
    return "".join(out)


def _value_text(n: NodeValue) -> str:
    return f"{n.name}: {number(n.value) if n.value is not None else 'no measurement'}" + \
        (" (failed)" if n.failed else "")


def node_chart(title: str, y_label: str, nodes: Sequence[NodeValue], rules: Sequence[Rule] = ()) -> str:
    """Each node's best measurement: bars up to BARS_MAX nodes, a heat map (ratio to the fleet median) above."""
    if not nodes:
        return empty_chart(title, "no node has a measurement in this category", "nodes")
    if len(nodes) > BARS_MAX:
        return _heat_map(title, nodes, rules)
    values = [n.value for n in nodes if n.value is not None] + [r.value for r in rules]
    ticks = nice_ticks(max(values) * 1.05 if values else 1.0)
    axes = _Axes(0, len(nodes), ticks[-1], ticks)
    slot = (WIDTH - LEFT - RIGHT) / len(nodes)
    labels = [(LEFT + (i + 0.5) * slot, n.name) for i, n in enumerate(nodes)] if len(nodes) <= 8 else \
        [(LEFT + 0.5 * slot, nodes[0].name), (WIDTH - RIGHT - 0.5 * slot, nodes[-1].name)]
    out = _frame(title, y_label, axes, [], "nodes")
    for x, label in labels:
        out.append(f'<text class="xl" x="{x:.0f}" y="{HEIGHT - BOTTOM + 16}">{_e(label)}</text>')
    bar = max(1.0, slot * 0.8)
    for i, n in enumerate(nodes):
        x = LEFT + i * slot + (slot - bar) / 2
        if n.value is None:  # a stub on the axis, so "no measurement" is visible, not a gap
            out.append(f'<rect class="nov" x="{x:.0f}" y="{HEIGHT - BOTTOM - 6}" width="{bar:.0f}" height="6">'
                       f'<title>{_e(_value_text(n))}</title></rect>')
            continue
        y = axes.y(max(0.0, n.value))
        out.append(f'<rect class="{"bf" if n.failed else "bp"}" x="{x:.0f}" y="{y:.0f}" width="{bar:.0f}" '
                   f'height="{max(1.0, HEIGHT - BOTTOM - y):.0f}"><title>{_e(_value_text(n))}</title></rect>')
    out += _rules(axes, rules)
    out.append(_legend([("bp", "passed"), ("bf", "failed"), *((r.kind, r.kind.replace("rule", "threshold"))
                                                              for r in rules)]))
    out.append("</svg>")
    return "".join(out)


def heat_class(n: NodeValue, median: float | None) -> str:
    """A cell's colour class: failed, no value, or its value's ratio to the fleet median (h0 best .. h3)."""
    if n.failed:
        return "hf"
    if n.value is None or not median:
        return "hn"
    ratio = n.value / median
    return "h0" if ratio >= 0.98 else "h1" if ratio >= 0.95 else "h2" if ratio >= 0.90 else "h3"


def _heat_map(title: str, nodes: Sequence[NodeValue], rules: Sequence[Rule]) -> str:
    median = next((r.value for r in rules if r.kind == "median"), None)
    rows = math.ceil(len(nodes) / HEAT_COLS)
    height = TOP + rows * HEAT_CELL + 30
    size = HEAT_CELL - 2
    out = [f'<svg class="chart nodes heat" viewBox="0 0 {WIDTH} {height}" '
           f'width="{WIDTH}" height="{height}" role="img" aria-label="{_e(title)}">',
           f'<style>.heat rect{{width:{size}px;height:{size}px}}.heat rect.k{{width:10px;height:10px}}</style>',
           f'<text class="t" x="{LEFT}" y="16">{_e(title)}</text>']
    for i, n in enumerate(nodes):
        x, y = LEFT + (i % HEAT_COLS) * HEAT_CELL, TOP + (i // HEAT_COLS) * HEAT_CELL
        out.append(f'<rect class="{heat_class(n, median)}" x="{x}" y="{y}"><title>{_e(_value_text(n))}</title></rect>')
    y = height - 10
    x = LEFT
    for cls, label in (("h0", "≥98% of median"), ("h1", "≥95%"), ("h2", "≥90%"), ("h3", "<90%"), ("hf", "failed"),
                       ("hn", "no value")):
        out.append(f'<rect class="{cls} k" x="{x}" y="{y - 9}" width="10" height="10"/>'
                   f'<text class="lg" x="{x + 14}" y="{y}">{_e(label)}</text>')
        x += 24 + 7 * len(label)
    if median is not None:
        out.append(f'<text class="lg" x="{WIDTH - RIGHT}" y="{y}" text-anchor="end">median {number(median)}</text>')
    out.append("</svg>")
    return "".join(out)


__all__ = ["Curve", "NodeValue", "Rule", "bandwidth_chart", "empty_chart", "heat_class", "nice_ticks",
           "node_chart"]
