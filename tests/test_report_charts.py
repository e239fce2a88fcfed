"""The HTML report's charts (nvcre_hera.report.svg / charts) and the page's wording: pure functions, checked on
hand-made inputs whose expected pixels and values are worked out here by hand."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from nvcre_hera.judge import judge
from nvcre_hera.report import render_html
from nvcre_hera.report.charts import category_charts, diagnose_timeline, node_values, primary_metric, \
    threshold_rules
from nvcre_hera.report.svg import BARS_MAX, Curve, NodeValue, Rule, bandwidth_chart, heat_class, nice_ticks, \
    node_chart
from nvcre_hera.report.timing import spans_from_argo, with_wall_runtimes
from nvcre_hera.report.words import fixed, plural

EVIL = "<script>alert(1)</script>"
GIB = 1 << 30


class _Svg(HTMLParser):
    """Counts svg elements and collects the attributes of one element kind."""

    def __init__(self) -> None:
        super().__init__()
        self.svgs = 0
        self.elements: list[tuple[str, dict]] = []
        self.titles: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.svgs += tag == "svg"
        self.elements.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.titles.append(data)


def _parse(markup: str) -> _Svg:
    p = _Svg()
    p.feed(markup)
    return p


def test_nice_ticks() -> None:
    assert nice_ticks(399.0) == [0, 100, 200, 300, 400]
    assert nice_ticks(9.0) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(0) == [0.0, 1.0]


def test_bandwidth_chart_draws_groups_failures_mean_and_the_threshold_where_it_belongs() -> None:
    ok = Curve("g0: a", [(GIB, 380.0), (2 * GIB, 380.0)])
    bad = Curve(f"g1: {EVIL}", [(GIB, 200.0), (2 * GIB, 210.0)], failed=True)
    svg = bandwidth_chart("busbw", "GB/s", [ok, bad], [(GIB, 290.0), (2 * GIB, 295.0)], [Rule(300.0, "threshold")])
    p = _parse(svg)
    classes = [a.get("class") for t, a in p.elements if t == "path"]  # the legend has lines, not paths
    assert classes.count("grp") == 1 and classes.count("fail") >= 1 and "mean" in classes
    # y axis 0..400 (380 * 1.05 = 399 -> ticks to 400); plot height 280 - 28 - 44 = 208, bottom at 236:
    # y(300) = 236 - 300 / 400 * 208 = 80
    rule = next(a for t, a in p.elements if t == "line" and a.get("class") == "rule")
    assert rule["y1"] == rule["y2"] == "80"
    assert "<script" not in svg and f"g1: {EVIL} (failed)" in p.titles


def test_bandwidth_chart_without_samples_says_so() -> None:
    svg = bandwidth_chart("busbw", "GB/s", [], [])
    assert "empty" in svg and "no bandwidth samples" in svg


def test_node_chart_bars_then_heat_map() -> None:
    nodes = [NodeValue("n1", 400.0), NodeValue("n2", 200.0, failed=True), NodeValue(EVIL, None)]
    p = _parse(node_chart("per node", "GB/s", nodes, [Rule(300.0, "t")]))
    rects = {a.get("class") for t, a in p.elements if t == "rect"}
    assert {"bp", "bf", "nov"} <= rects and f"{EVIL}: no measurement" in p.titles
    many = [NodeValue(f"n{i}", 100.0) for i in range(BARS_MAX + 1)]
    heat = node_chart("per node", "GB/s", many, [Rule(100.0, "median", "median")])
    assert "heat" in heat and heat.count("<rect") >= BARS_MAX + 1


def test_heat_class_is_the_ratio_to_the_median() -> None:
    assert heat_class(NodeValue("a", 99.0), 100.0) == "h0"
    assert heat_class(NodeValue("a", 96.0), 100.0) == "h1"
    assert heat_class(NodeValue("a", 91.0), 100.0) == "h2"
    assert heat_class(NodeValue("a", 50.0), 100.0) == "h3"
    assert heat_class(NodeValue("a", 100.0, failed=True), 100.0) == "hf"
    assert heat_class(NodeValue("a", None), 100.0) == "hn"


def _cat(**extra: object) -> dict:
    groups = [{"name": "g0", "nodes": ["b", "a"], "status": "Passed", "metrics": {"busBandwidthGBps": 400.0,
                                                                                 "timeSec": 5.0}},
              {"name": "g1", "nodes": ["a", "c"], "status": "Failed", "metrics": {"busBandwidthGBps": 250.0,
                                                                                 "timeSec": 9.0}}]
    return {"domain": "communication", "variant": "x", "groups": groups,
            "thresholds": [{"metric": "busBandwidthGBps", "expression": "value >= 300 && value < 5000"}], **extra}


def test_node_values_take_each_nodes_best_and_mark_failed_groups() -> None:
    by_name = {n.name: n for n in node_values(_cat(), "busBandwidthGBps")}
    assert [n for n in by_name] == ["a", "b", "c"]
    assert by_name["a"].value == 400.0 and by_name["a"].failed  # best over both groups; in the failed one
    assert by_name["b"].value == 400.0 and not by_name["b"].failed
    assert by_name["c"].value == 250.0 and by_name["c"].failed
    assert {n.name: n.value for n in node_values(_cat(), "timeSec")}["a"] == 5.0  # lower is better


def test_threshold_rules_and_primary_metric() -> None:
    rules = threshold_rules(_cat(), "busBandwidthGBps")
    assert [(r.value, r.label) for r in rules] == [(300.0, "threshold ≥ 300"), (5000.0, "threshold < 5000")]
    assert primary_metric(_cat()) == "busBandwidthGBps"
    not_simple = _cat(thresholds=[{"metric": "busBandwidthGBps", "expression": "value > 1 || value < 0"}])
    assert threshold_rules(not_simple, "busBandwidthGBps") == []
    # the < 5000 bound is far above every value: not drawn; the median of 400, 400, 250 is
    charts = "".join(category_charts(_cat()))
    assert "threshold &lt; 5000" not in charts and "median 400" in charts


def test_diagnose_timeline_marks_the_evidence_round() -> None:
    d = {"rounds": 4, "jobs": 19, "nodeMinutes": 582.5, "suspects": [
        {"node": EVIL, "evidence": [{"test": "r3-t0", "ratio": 0.52}]}]}
    svg = diagnose_timeline(d)
    p = _parse(svg)
    marks = [a for t, a in p.elements if t == "circle"]
    labels = [a for t, a in p.elements if t == "text" and a.get("class") == "xl"]
    assert len(marks) == 1 and len(labels) == 4
    assert "<script" not in svg and "test r3-t0 ran at 52% of its peers" in p.titles
    # round 3 of 4 over the lane: the mark sits on the third round's label
    third = re.search(r'<text class="xl" x="(\d+)"[^>]*>r3<', svg).group(1)
    assert marks[0]["cx"] == third


def test_runtime_from_the_workflow_spans() -> None:
    """A stand-in Workflow shaped like the Argo Server's answer (status.nodes with RFC 3339 times)."""
    wf = {"metadata": {"name": "w"}, "status": {"nodes": {
        "1": {"name": "w.c0-nccl-all-reduce", "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:10:30Z"},
        "2": {"name": "w.c0-nccl-all-reduce.test(0:g0)", "startedAt": "2026-01-01T00:00:00Z",
              "finishedAt": "2026-01-01T00:01:00Z"},
        "3": {"name": "w.c1-dcgm-diag", "startedAt": "2026-01-01T00:00:00Z"}}}}
    assert spans_from_argo("w", wf["status"]["nodes"].values()) == {0: 630.0}
    report = {"categories": [{"runtimeSec": 4000.0}, {"runtimeSec": 7.0}]}
    out = with_wall_runtimes(report, spans_from_argo("w", wf["status"]["nodes"].values()))
    assert out["categories"] == [{"runtimeSec": 630.0, "machineTimeSec": 4000.0}, {"runtimeSec": 7.0}]
    assert report["categories"][0] == {"runtimeSec": 4000.0}  # pure: the input is not changed


def test_words() -> None:
    assert [plural(n, "node") for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]
    assert [fixed(v) for v in (265.2, 464.125, None, 3)] == ["265.20", "464.12", "-", "3.00"]


def _judged(**cat: object) -> dict:
    run = {"group": "g0", "nodes": ["n1"], "status": "ok", "metrics": {"busBandwidthGBps": 280.0},
           "samples": {"sizeBytes": [GIB], "algBandwidthGBps": [150.0], "busBandwidthGBps": [280.0]}}
    base = {"domain": "communication", "variant": "nccl-loopback", "thresholds": {"busBandwidthGBps": "value >= 300"},
            "results": [run]}
    return judge("c", {"totalNodes": 1, "selectedNodes": 1}, [{**base, **cat}])


def test_page_wording_timestamp_plural_and_charts() -> None:
    page = render_html(_judged())
    assert "1 of 1 node" in page and "not recorded" in page  # generatedAt null: said, not "-"
    assert page.count("<svg") == 3  # busbw, algbw, per node
    assert "465.92" not in page and "280.00" in page  # fixed decimals in the tables
    report = _judged()
    report["generatedAt"] = "2026-12-02T09:00:00Z"
    assert "2026-12-02T09:00:00Z" in render_html(report)


def test_diagnose_page_shows_its_threshold_rounds_jobs_and_node_minutes() -> None:
    verdict = {"stats": {"jobs": 19, "rounds": 4, "nodeMinutes": 582.5}, "nodeCount": 64, "floor": 300.0,
               "suspects": [{"node": "gpu-node-13", "reason": "ThresholdViolation", "deficit": 0.5,
                             "confidence": 1.0, "evidence": [{"test": "r3-t0", "ratio": 0.5}]}]}
    report = _judged(testScale="diagnose", diagnose=verdict)
    page = render_html(report)
    assert "No thresholds set" not in page and "busBandwidthGBps value &gt;= 300" in page
    assert "64 nodes, 19 jobs in 4 rounds, 582.5 node-minutes (estimated)" in page
    assert 'class="chart diag"' in page


def test_at_scale_the_report_keeps_some_curves_and_the_range() -> None:
    """60 passing groups: 48 keep their curve (judge.CURVES_KEPT), 12 are summed up by the per-size range."""
    runs = [{"group": f"g{i}", "nodes": [f"n{i}"], "status": "ok", "metrics": {"busBandwidthGBps": 400.0 + i},
             "samples": {"sizeBytes": [GIB], "algBandwidthGBps": [200.0 + i], "busBandwidthGBps": [400.0 + i]}}
            for i in range(60)]
    cat = judge("c", {"totalNodes": 60, "selectedNodes": 60}, [
        {"domain": "communication", "variant": "nccl-loopback", "thresholds": {}, "results": runs}])["categories"][0]
    assert sum(1 for g in cat["groups"] if "curve" in g) == 48 and cat["curvesOmitted"] == 12
    assert cat["bandwidthRange"] == {"sizeBytes": [GIB], "algBandwidthGBpsMin": [200.0], "algBandwidthGBpsMax": [259.0],
                                     "busBandwidthGBpsMin": [400.0], "busBandwidthGBpsMax": [459.0]}
    charts = "".join(category_charts(cat))
    assert 'class="band"' in charts and "48 of 60 groups" in charts
