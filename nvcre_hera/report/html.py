"""One self-contained HTML page (inline CSS, no scripts, no external assets) to attach to a ticket or serve as-is.

Every cluster-supplied string (node names, messages, logs) goes through html.escape: a node may be named
`<script>`. The page shows the same content as the text card, in the same order.
"""

from __future__ import annotations

import html
from typing import Any

from nvcre_hera.report.card import NO_THRESHOLDS, clean, duration, human_size, number, threshold_line

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
td.n{text-align:right}section{border:1px solid #999;border-radius:4px;padding:0 1em 1em;margin:1em 0}
.Passed,.PASSED{color:#1a7f37}.Failed,.FAILED{color:#cf222e}.INCOMPLETE{color:#9a6700}
pre{background:#f6f8fa;padding:.5em;overflow-x:auto}
"""


def _e(value: Any) -> str:
    return html.escape(clean("-" if value is None else value), quote=True)


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{_e(v)}</td>'
                                    for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _category(c: dict) -> str:
    status = c.get("status")
    parts = [f"<section><h2>{_e(c.get('domain'))}/{_e(c.get('variant'))} "
             f"<span class=\"{_e(status)}\">{_e(status)}</span></h2>",
             _table(["Reason", "Runtime", "Scale", "Nodes/Job", "Jobs", "MNNVL"],
                    [[c.get("failureReason") or "-", duration(c.get("runtimeSec")), c.get("testScale"),
                      c.get("nodesPerJob"), c.get("jobs"), "enabled" if c.get("enableMNNVL") else "disabled"]])]
    if c.get("bandwidth"):
        rows = [[human_size(r.get("sizeBytes")), number(r.get("algBandwidthGBps")),
                 number(r.get("busBandwidthGBps")), r.get("samples")] for r in c["bandwidth"]]
        parts.append("<h3>Bandwidth</h3>" + _table(["Size", "AlgBW (GB/s)", "BusBW (GB/s)", "Samples"], rows,
                                                    {1, 2, 3}))
    if c.get("metrics"):
        rows = [[k, number(s.get("min")), number(s.get("mean")), number(s.get("max"))]
                for k, s in c["metrics"].items()]
        parts.append("<h3>Metrics</h3>" + _table(["Metric", "min", "mean", "max"], rows, {1, 2, 3}))
    if c.get("thresholdsSet"):
        items = "".join(f"<li>{_e(threshold_line(t))}</li>" for t in c.get("thresholds") or [])
        parts.append(f"<h3>Thresholds</h3><ul>{items}</ul>")
    else:
        parts.append(f"<p><em>{_e(NO_THRESHOLDS)}</em></p>")
    for g in c.get("failedGroups") or []:
        parts.append(f"<h3>Failed group {_e(g.get('name') or '(whole category)')}: {_e(g.get('reason'))}</h3>"
                     f"<p>{_e(g.get('nodeCount'))} nodes: {_e(', '.join(str(n) for n in g.get('nodes') or []))}</p>"
                     f"<p>{_e(g.get('message'))}</p>")
        if g.get("failureLog"):
            parts.append(f"<pre>{_e(g['failureLog'])}</pre>")
    groups = c.get("groups") or []
    if groups:
        rows = [[g.get("name"), g.get("status"), ", ".join(str(n) for n in g.get("nodes") or []),
                 ", ".join(f"{k}={number(v)}" for k, v in (g.get("metrics") or {}).items())] for g in groups]
        parts.append(f"<details><summary>Groups ({len(groups)})</summary>"
                     + _table(["Group", "Status", "Nodes", "Metrics"], rows) + "</details>")
    parts.append("</section>")
    return "\n".join(parts)


def render_html(report: dict) -> str:
    """The report as one HTML page."""
    result = report.get("result")
    gpu = f"{report.get('gpu') or '-'}" + (f" ({report['gpuProduct']})" if report.get("gpuProduct") else "")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Certification Report: {_e(report.get('name'))}</title><style>{_CSS}</style></head><body>",
             f"<h1>Certification Report: {_e(report.get('name'))} "
             f"<span class=\"{_e(result)}\">{_e(result)}</span></h1>",
             _table(["Platform", "GPU", "Nodes tested", "Generated"],
                    [[report.get("platform"), gpu, f"{report.get('testedNodes')}/{report.get('totalNodes')}",
                      report.get("generatedAt")]])]
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
    parts.append(f"<p>Cleanup: {_e(cleanup.get('jobsCreated', 0))} job objects created, "
                 f"{_e(cleanup.get('jobsDeleted', 0))} deleted, {len(leftover)} left"
                 + (f" ({_e(', '.join(str(n) for n in leftover))})" if leftover else "") + "</p>")
    parts.append(f"<p>Result: <strong class=\"{_e(result)}\">{_e(result)}</strong></p></body></html>")
    return "\n".join(parts) + "\n"


__all__ = ["render_html"]
