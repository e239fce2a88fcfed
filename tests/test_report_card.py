"""The text card: formatting helpers and layout invariants the golden cases do not spell out."""

from __future__ import annotations

import pytest

from nvcre_hera.judge import judge
from nvcre_hera.report import FORMATS, render
from nvcre_hera.report.card import NO_THRESHOLDS, WIDTH, duration, human_size, number, render_card

SUMMARY = {"platform": "aws", "gpu": "h100", "totalNodes": 2, "selectedNodes": 2, "excludedNodes": []}


def _cat(results: list, thresholds: dict | None = None) -> dict:
    return {"domain": "communication", "variant": "nccl-all-reduce", "testScale": "full-scale", "nodesPerJob": 2,
            "enableMNNVL": True, "thresholds": thresholds or {}, "metricNames": ["busBandwidthGBps"],
            "results": results}


def _run(nodes: list[str], log: str = "", status: str = "ok", reasons: list | None = None, bus: float = 400.0,
         sizes: int = 0) -> dict:
    return {"group": "g0", "nodes": nodes, "status": status, "metrics": {"busBandwidthGBps": bus},
            "samples": [{"sizeBytes": 1 << (20 + i), "algBandwidthGBps": 1.0 + i, "busBandwidthGBps": 2.0 + i,
                         "samples": 1} for i in range(sizes)],
            "reasons": reasons or [], "runtimeSec": 5.0, "jobName": "j", "jobDeleted": True, "logTail": log}


@pytest.mark.parametrize(("n", "text"), [(16 << 30, "16 GiB"), (512 << 20, "512 MiB"), (1536, "1.5 KiB"), (8, "8 B"),
                                         (1 << 40, "1 TiB"), (None, "-")])
def test_human_size(n: int | None, text: str) -> None:
    assert human_size(n) == text


@pytest.mark.parametrize(("s", "text"), [(95.0, "1m35s"), (95.5, "1m36s"), (3723, "1h2m3s"), (7, "7s"), (0, "0s"),
                                         (None, "-")])
def test_duration(s: float | None, text: str) -> None:
    assert duration(s) == text


@pytest.mark.parametrize(("v", "text"), [(371.2, "371.2"), (0.951234, "0.9512"), (300.0, "300"), (None, "-"),
                                         (-0.00001, "0")])
def test_number(v: float | None, text: str) -> None:
    assert number(v) == text


def test_every_box_line_has_the_same_width() -> None:
    nodes = [f"a-very-long-node-name-{i:03d}.compute.internal" for i in range(12)]
    wf = [{"node": None, "reason": "WorkloadFailed", "message": "x " * 100}]
    report = judge("c", SUMMARY, [_cat([_run(nodes, log="y" * 300, status="failed", reasons=wf)])])
    card = render_card(report)
    boxed = [ln for ln in card.splitlines() if ln and ln[0] in "│┌└"]
    assert len(boxed) > 20 and {len(ln) for ln in boxed} == {WIDTH + 4}
    assert all(n in card for n in nodes)  # wrapped between names, never inside one


def test_log_tail_at_most_20_lines_and_no_control_chars() -> None:
    log = "\n".join(f"\x1b[1mline {i}\x1b[0m\r" for i in range(50))
    wf = [{"node": None, "reason": "WorkloadFailed", "message": "exit 1"}]
    card = render_card(judge("c", SUMMARY, [_cat([_run(["a"], log=log, status="failed", reasons=wf)])]))
    log_lines = [ln for ln in card.splitlines() if "| line" in ln]
    assert len(log_lines) == 20 and "line 49" in log_lines[-1] and "line 30" in log_lines[0]
    assert "\x1b" not in card and "\r" not in card


def test_bandwidth_table_shows_eight_largest_largest_last() -> None:
    card = render_card(judge("c", SUMMARY, [_cat([_run(["a", "b"], sizes=12)])]))
    rows = [ln for ln in card.splitlines() if "MiB " in ln or "GiB " in ln]
    assert len(rows) == 8
    assert "16 MiB" in rows[0] and "2 GiB" in rows[-1]
    assert "(8 largest of 12 sizes shown)" in card


def test_no_thresholds_notice_and_threshold_lines() -> None:
    plain = render_card(judge("c", SUMMARY, [_cat([_run(["a"])])]))
    assert NO_THRESHOLDS in plain and "Thresholds:" not in plain
    judged = render_card(judge("c", SUMMARY, [_cat([_run(["a"], bus=371.2)], {"busBandwidthGBps": "value >= 300"})]))
    assert "busBandwidthGBps value >= 300 → measured 371.2 ✓" in judged and NO_THRESHOLDS not in judged
    low = render_card(judge("c", SUMMARY, [_cat([_run(["a"], bus=99.0)], {"busBandwidthGBps": "value >= 300"})]))
    assert "busBandwidthGBps value >= 300 → measured 99 ✗" in low


def test_summary_lines() -> None:
    card = render_card(judge("c", SUMMARY, [_cat([_run(["a", "b"], bus=99.0)], {"busBandwidthGBps": "value >= 300"})]))
    assert "Categories:    0/1 passed" in card
    assert "a: ThresholdViolation" in card and "b: ThresholdViolation" in card
    assert "Cleanup:       1 job objects created, 1 deleted, 0 left" in card
    assert card.rstrip().splitlines()[-2].startswith("│ Result:        FAILED")
    assert "MNNVL:      enabled" in card


_RENDER_IN_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from test_report_card import SUMMARY, _cat, _run
from nvcre_hera.judge import judge
from nvcre_hera.report import render
bad = [{"node": n, "reason": r, "message": r + " on " + n} for n in ("n3", "n1", "n2")
       for r in ("WorkloadFailed", "ThresholdViolation", "DataCorruption")]
results = [_run(["n1", "n2", "n3", "n4"], status="failed", reasons=bad, bus=10.0, sizes=3),
           _run(["n5", "n6"], sizes=3)]
summary = {**SUMMARY, "totalNodes": 8, "selectedNodes": 6, "excludedNodes": [{"name": "n8", "reason": "NotReady"},
                                                                             {"name": "n7", "reason": "Cordoned"}]}
report = judge("c", summary, [_cat(results, {"busBandwidthGBps": "value >= 300"})],
               generated_at="2025-01-01T00:00:00Z")
sys.stdout.write(render(report, "text") + render(report, "json"))
"""


def test_deterministic() -> None:
    """Judge and render in fresh interpreters under different string hash seeds: any set or dict order that leaks
    into the card or the JSON (the old test rendered one object twice in one process, which cannot differ)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", _RENDER_IN_CHILD, here], env=env, capture_output=True, text=True,
                              timeout=120, check=True)
        assert "FAILED" in proc.stdout
        outs.add(proc.stdout)
    assert len(outs) == 1


def test_render_dispatch() -> None:
    report = judge("c", SUMMARY, [_cat([_run(["a"])])])
    assert set(FORMATS) == {"text", "json", "junit", "html", "ctrf"}
    assert render(report, "text") == render_card(report)
    with pytest.raises(ValueError, match="unknown report format 'yaml'"):
        render(report, "yaml")
