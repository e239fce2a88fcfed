"""HTML: one self-contained page; cluster-supplied strings are escaped (a node may be named `<script>`)."""

from __future__ import annotations

from html.parser import HTMLParser

from nvcre_hera.judge import judge
from nvcre_hera.report import render_html

EVIL = "<script>alert(1)</script>"
SUMMARY = {"platform": "aws", "gpu": "h100", "totalNodes": 3, "selectedNodes": 2,
           "excludedNodes": [{"name": '"><img src=x onerror=alert(2)>', "reason": "NotReady", "message": EVIL}]}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page() -> str:
    wf = [{"node": EVIL, "reason": "HardwareFailureDetected", "message": "<b>boom</b> & more"}]
    cats = [{"domain": "communication", "variant": "nccl-loopback", "testScale": "per-node", "nodesPerJob": 1,
             "thresholds": {"busBandwidthGBps": "value >= 300 && value < 2000"},
             "results": [{"group": "g0", "nodes": [EVIL], "status": "failed", "metrics": {}, "samples": [],
                          "reasons": wf, "runtimeSec": 3.0, "jobName": "j", "jobDeleted": False,
                          "logTail": "</pre><script>x()</script>"},
                         {"group": "g1", "nodes": ["ok-node"], "status": "ok", "metrics": {"busBandwidthGBps": 480.0},
                          "samples": [{"sizeBytes": 1 << 30, "algBandwidthGBps": 240.0, "busBandwidthGBps": 480.0,
                                       "samples": 2}], "reasons": [], "runtimeSec": 3.0, "jobName": "k",
                          "jobDeleted": True, "logTail": ""}]}]
    return render_html(judge(EVIL, SUMMARY, cats))


def test_node_named_script_is_escaped() -> None:
    page = _page()
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert "onerror" not in parser.attrs
    assert EVIL in "".join(parser.text)  # shown as text, not run


def test_self_contained_and_complete() -> None:
    page = _page()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "Result: <strong class=\"FAILED\">FAILED</strong>" in page
    assert "1 GiB" in page and "HardwareFailureDetected" in page and "1 left (j)" in page


def test_members_of_a_failed_group_are_listed_apart_and_escaped() -> None:
    run = {"group": "g0", "nodes": ["gpu-node-03", EVIL], "status": "failed", "metrics": {}, "reasons": [
        {"node": "gpu-node-03", "reason": "WorkloadFailed", "message": "gpu-node-03: Test CUDA failure"}]}
    cat = {"domain": "communication", "variant": "nccl-all-reduce", "thresholds": {}, "results": [run]}
    page = render_html(judge("c", {"totalNodes": 2, "selectedNodes": 2}, [cat]))
    assert "Members of failed groups, not blamed (1)" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page
    assert "blamed: gpu-node-03" in page
