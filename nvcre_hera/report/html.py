"""One self-contained HTML page (inline CSS and inline SVG charts, no scripts, no external assets) to attach to a
ticket or serve as-is.

Every cluster-supplied string (node names, messages, logs) goes through html.escape: a node may be named
`<script>`. The page shows the card's content in the card's order, plus charts (nvcre_hera.report.charts):
bandwidth against message size, each node's best measurement against the threshold and the fleet median, and for
diagnose its rounds.
"""

from __future__ import annotations

import html
from typing import Any

from nvcre_hera.judge import category_label
from nvcre_hera.report.card import (
    NO_THRESHOLDS, clean, describe_evidence, duration, human_size, jobs_run, node_minutes, number, round_lines,
    threshold_line,
)
from nvcre_hera.report.charts import category_charts
from nvcre_hera.report.words import fixed, plural

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
section{border:1px solid #999;border-radius:4px;padding:0 1em 1em;margin:1em 0}
.Passed,.PASSED{color:#1a7f37}.Failed,.FAILED{color:#cf222e}.INCOMPLETE,.Incomplete{color:#9a6700}
pre{background:#f6f8fa;padding:.5em;overflow-x:auto}.charts{display:flex;flex-wrap:wrap;gap:1em}
.chart{background:#fff;border:1px solid #ddd}.chart text{font-size:11px;fill:#333}.chart .t{font-size:13px;
font-weight:600}.chart .yl{text-anchor:end}.chart .xl{text-anchor:middle}.chart .yt{text-anchor:middle}
.chart .rulel,.chart .medianl{text-anchor:end}.chart .g{stroke:#eee}.chart .ax{stroke:#888}
.chart .grp{fill:none;stroke:#777;stroke-opacity:.35;stroke-width:1}
.chart .fail{fill:none;stroke:#cf222e;stroke-width:2}.chart path.mean{fill:none;stroke:#0969da;stroke-width:2.5}
.chart line.mean{stroke:#0969da;stroke-width:2.5}.chart circle.mean{fill:#0969da}
.chart line.rule{stroke:#cf222e;stroke-dasharray:6 4;stroke-width:1.5}.chart .rulel{fill:#cf222e}
.chart line.median{stroke:#0969da;stroke-dasharray:2 3;stroke-width:1.5}.chart .medianl{fill:#0969da}
.chart .bp,.chart line.bp{fill:#2da44e;stroke:#2da44e}.chart .bf,.chart line.bf{fill:#cf222e;stroke:#cf222e}
.chart .nov{fill:#bbb}.chart .none{fill:#f6f8fa;stroke:#ddd}.chart .msg{fill:#666}
.chart .h0{fill:#1a7f37}.chart .h1{fill:#4ac26b}.chart .h2{fill:#d4a72c}.chart .h3{fill:#e16f24}
.chart .hf{fill:#cf222e}.chart .hn{fill:#ccc}.chart .band{fill:#0969da;fill-opacity:.12;stroke:none}
.chart line.band{stroke:#0969da;stroke-opacity:.3;stroke-width:8}.chart .rd{stroke:#ccc}.chart .ev{fill:#cf222e}
.chart .hr rect{fill:#8c959f}.chart .hf rect{fill:#cf222e}.chart .hc rect{fill:#2da44e}
.chart .hv{font-size:10px}
"""


def _e(value: Any) -> str:
    return html.escape(clean("-" if value is None else value), quote=True)


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{_e(v)}</td>'
                                    for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _runtime(c: dict) -> str:
    return duration(c.get("runtimeSec")) if c.get("runtimeSec") is not None else "not recorded"


def _diagnose(d: dict) -> str:
    nodes = d.get("nodeCount")
    head = (f"<h3>Diagnose</h3><p>{_e(plural(nodes, 'node') if nodes is not None else '? nodes')}, "
            f"{_e(plural(jobs_run(d), 'job'))} in {_e(plural(d.get('rounds') or 0, 'round'))}, "
            f"{_e(node_minutes(d))}</p>")
    items = []
    if d.get("passLineGBps") is not None:
        items.append(f"search pass line: busBandwidthGBps ≥ {number(d['passLineGBps'])} (from the threshold)")
    if d.get("repeatsPerTest"):
        items.append(f"each test ran {plural(d['repeatsPerTest'], 'time')} (repeatCount); the worst run counts")
    for s in d.get("suspects") or []:
        detail = f" ({s['detail']})" if s.get("detail") else ""
        items.append(f"suspect {s.get('node')}: {s.get('reason')}{detail}, deficit {number(s.get('deficit'))}, "
                     f"confidence {number(s.get('confidence'))}; {describe_evidence(s.get('evidence'))}")
    for f in d.get("infrastructureFaults") or []:
        sides = [", ".join(map(str, side)) if isinstance(side, list) else str(side) for side in f.get("between") or []]
        items.append(f"infrastructure fault between {' and '.join(sides)}")
    if d.get("stoppedAtRoundBudget"):
        items.append("stopped at its round budget: what it had not narrowed down is listed unresolved")
    for group in d.get("unresolved") or []:
        items.append(f"unresolved: {plural(group.get('nodeCount') or 0, 'node')} failed together, no single node "
                     f"or link explains it")
    if not d.get("suspects") and not d.get("infrastructureFaults") and not d.get("unresolved"):
        items.append("no suspects: every node passed")
    rounds = round_lines(d)
    history = ("<details><summary>Rounds</summary><ul>" + "".join(f"<li>{_e(i)}</li>" for i in rounds)
               + "</ul></details>") if rounds else ""
    return head + "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>" + history


GROUP_ROWS = 64  # rows of the groups table; every failed group is listed, report.json holds them all


def _groups_table(all_groups: list[dict]) -> str:
    failed = [g for g in all_groups if g.get("status") != "Passed"]
    passed = [g for g in all_groups if g.get("status") == "Passed"][:max(0, GROUP_ROWS - len(failed))]
    shown = {id(g) for g in failed + passed}
    groups = [g for g in all_groups if id(g) in shown]
    more = len(all_groups) - len(groups)
    metrics = list(dict.fromkeys(k for g in groups for k in g.get("metrics") or {}))
    rows = [[g.get("name"), g.get("status"), plural(len(g.get("nodes") or []), "node"),
             ", ".join(str(n) for n in g.get("nodes") or []),
             *(fixed((g.get("metrics") or {}).get(m)) for m in metrics)] for g in groups]
    return (f"<details><summary>Groups ({len(all_groups)})</summary>"
            + _table(["Group", "Status", "Size", "Nodes", *metrics], rows, set(range(4, 4 + len(metrics))))
            + (f"<p>… and {_e(plural(more, 'more passing group'))} (every group is in report.json)</p>" if more
               else "") + "</details>")


def _category(c: dict) -> str:
    status = c.get("status")
    nic = c.get("nicResource") or {}
    parts = [f"<section><h2>{_e(category_label(c))} "
             f"<span class=\"{_e(status)}\">{_e(status)}</span></h2>",
             _table(["Reason", "Runtime", "Scale", "Nodes/Job", "Jobs", "MNNVL", "NIC"],
                    [[c.get("failureReason") or "-", _runtime(c), c.get("testScale"), c.get("nodesPerJob"),
                      c.get("jobs"), "enabled" if c.get("enableMNNVL") else "disabled",
                      f"{nic.get('resource') or 'none'} ({nic.get('source')})" if nic else "-"]])]
    if c.get("thresholdsSet"):
        items = "".join(f"<li>{_e(threshold_line(t))}</li>" for t in c.get("thresholds") or [])
        parts.append(f"<h3>Thresholds</h3><ul>{items}</ul>")
        if c.get("hint"):
            parts.append(f"<p><em>Hint: {_e(c['hint'])}</em></p>")
    elif not c.get("diagnose"):  # diagnose judges bandwidth in its planner: its section says how
        parts.append(f"<p><em>{_e(NO_THRESHOLDS)}</em></p>")
    if c.get("thresholdNotice") and c["thresholdNotice"] not in str(c.get("incomplete") or ""):
        parts.append(f"<p><em>Profile: {_e(c['thresholdNotice'])}</em></p>")
    parts.append('<div class="charts">' + "".join(category_charts(c)) + "</div>")
    if c.get("diagnose"):
        parts.append(_diagnose(c["diagnose"]))
    if c.get("incomplete"):
        parts.append(f"<p><strong>Incomplete:</strong> {_e(c['incomplete'])}</p>")
    if c.get("bandwidth"):
        rows = [[human_size(r.get("sizeBytes")), fixed(r.get("algBandwidthGBps")), fixed(r.get("busBandwidthGBps")),
                 r.get("samples")] for r in c["bandwidth"]]
        parts.append("<h3>Bandwidth (mean over the runs whose workload completed)</h3>"
                     + _table(["Size", "AlgBW (GB/s)", "BusBW (GB/s)", "Samples"], rows, {1, 2, 3}))
    if c.get("metrics"):
        rows = [[k, fixed(s.get("min")), fixed(s.get("mean")), fixed(s.get("max"))] for k, s in c["metrics"].items()]
        parts.append("<h3>Metrics</h3>" + _table(["Metric", "min", "mean", "max"], rows, {1, 2, 3}))
    for g in c.get("failedGroups") or []:
        nodes = ", ".join(str(n) for n in g.get("nodes") or [])
        blamed = g.get("blamedNodes")
        parts.append(f"<h3>Failed group {_e(g.get('name') or '(whole category)')}: {_e(g.get('reason'))}</h3>"
                     f"<p>{_e(plural(g.get('nodeCount') or 0, 'node'))}{': ' + _e(nodes) if nodes else ''}</p>"
                     + (f"<p>blamed: {_e(', '.join(map(str, blamed)) or 'none (no node is blamed)')}</p>"
                        if blamed is not None and g.get("nodes") and blamed != g["nodes"] else "")
                     + f"<p>{_e(g.get('message'))}</p>")
        if g.get("failureLog"):
            parts.append(f"<pre>{_e(g['failureLog'])}</pre>")
    if c.get("groups"):
        parts.append(_groups_table(c["groups"]))
    parts.append("</section>")
    return "\n".join(parts)


def render_html(report: dict) -> str:
    """The report as one HTML page."""
    result = report.get("result")
    gpu = f"{report.get('gpu') or '-'}" + (f" ({report['gpuProduct']})" if report.get("gpuProduct") else "")
    tested, total = report.get("testedNodes"), report.get("totalNodes")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Certification Report: {_e(report.get('name'))}</title><style>{_CSS}</style></head><body>",
             f"<h1>Certification Report: {_e(report.get('name'))} "
             f"<span class=\"{_e(result)}\">{_e(result)}</span></h1>",
             _table(["Platform", "GPU", "Nodes tested", "Generated"],
                    [[report.get("platform"), gpu, f"{tested if tested is not None else '-'} of "
                      f"{plural(total, 'node') if total is not None else '-'}",
                      report.get("generatedAt") or "not recorded"]])]
    archs = report.get("architectures") or []
    for a in archs:  # a run over several GPU architectures: one section each, its categories under it
        product = f" ({a['gpuProduct']})" if a.get("gpuProduct") else ""
        parts.append(f"<h2>Architecture {_e(a.get('gpu'))}{_e(product)} <span class=\"{_e(a.get('result'))}\">"
                     f"{_e(a.get('result'))}</span></h2><p>{_e(plural(a.get('testedNodes') or 0, 'node'))} tested, "
                     f"{_e(a.get('categoriesPassed'))}/{_e(a.get('categoriesTotal'))} categories passed</p>")
        parts += [_category(c) for c in report.get("categories") or [] if c.get("gpu") == a.get("gpu")]
    if not archs:
        parts += [_category(c) for c in report.get("categories") or []]
    excluded = report.get("excludedNodes") or []
    if excluded:
        parts.append(f"<h2>Excluded Nodes ({len(excluded)})</h2>"
                     + _table(["Node", "Reason", "Message"],
                              [[e.get("name"), e.get("reason"), e.get("message")] for e in excluded]))
    s = report.get("summary") or {}
    cleanup = report.get("cleanup") or {}
    failed = report.get("failedNodes") or []
    parts.append(f"<h2>Summary</h2><p>Categories: {_e(s.get('categoriesPassed'))}/{_e(s.get('categoriesTotal'))}"
                 f" passed</p>")
    if failed:
        parts.append(f"<h3>Failed Nodes ({len(failed)})</h3>"
                     + _table(["Node", "Reasons", "Message"],
                              [[n.get("name"), ", ".join(n.get("reasons") or []), n.get("message")] for n in failed]))
    members = report.get("failedGroupMembers") or []
    if members:  # in a failed group whose evidence named other nodes: not certified, not blamed
        parts.append(f"<h3>Members of failed groups, not blamed ({len(members)})</h3>"
                     + _table(["Node", "Groups"], [[m.get("name"), m.get("message")] for m in members]))
    leftover = cleanup.get("leftover") or []
    parts.append(f"<p>Cleanup: {_e(plural(cleanup.get('jobsCreated', 0), 'job object'))} created, "
                 f"{_e(cleanup.get('jobsDeleted', 0))} deleted, {len(leftover)} left"
                 + (f" ({_e(', '.join(str(n) for n in leftover))})" if leftover else "") + "</p>")
    ex = report.get("execution") or {}
    if ex:
        parts.append(f"<p>Run: {_e(ex.get('engine'))}, workflow {_e(ex.get('workflowPhase'))}, "
                     f"{_e(plural(ex.get('podsStarted') or 0, 'pod'))}</p>")
    parts.append(f"<p>Result: <strong class=\"{_e(result)}\">{_e(result)}</strong></p></body></html>")
    return "\n".join(parts) + "\n"


__all__ = ["render_html"]
