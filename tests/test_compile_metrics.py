"""Prometheus metrics in the compiled workflow (nvcre_hera/compile/metrics.py): names and label keys follow Argo's
rule, every value is an output the template declares and the steps write, and what they carry matches the report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvcre_hera.compile.metrics import BUSBW_METRIC, PROMETHEUS_METRIC_NAME_RE, STATUS_METRIC, valid_metric_name
from nvcre_hera.compile.workflow import compile_certification
from nvcre_hera.local_run import run_local
from nvcre_hera.spec_load import load_certification

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted([ROOT / "examples" / "certification.yaml", *(ROOT / "examples" / "certifications").glob("*.yaml")])
PROM_COMMON = Path.home() / "go/pkg/mod/github.com/prometheus/common@v0.64.0/model/metric.go"
ARGO_UTIL = Path.home() / "go/pkg/mod/github.com/argoproj/argo-workflows/v4@v4.0.5/workflow/metrics/util.go"
TAG = re.compile(r"{{\s*([^}]+?)\s*}}")


def _metrics(doc: dict) -> list[tuple[dict, dict]]:
    return [(t, p) for t in doc["spec"]["templates"] for p in (t.get("metrics") or {}).get("prometheus") or []]


@pytest.mark.parametrize("cert", EXAMPLES, ids=lambda p: p.stem)
def test_names_labels_help_and_values_follow_argos_rules(cert: Path) -> None:
    doc = compile_certification(load_certification(str(cert)))
    found = _metrics(doc)
    assert found, "every certification has at least the judge's status gauge"
    for tmpl, metric in found:
        assert valid_metric_name(metric["name"]), metric["name"]
        assert all(valid_metric_name(label["key"]) for label in metric.get("labels") or [])
        assert metric["help"] and metric["gauge"]["value"]
        declared = {p["name"] for p in (tmpl.get("outputs") or {}).get("parameters") or []}
        refs = [r for text in [metric["gauge"]["value"], metric.get("when") or "",
                               *[lab["value"] for lab in metric.get("labels") or []]] for r in TAG.findall(text)]
        assert {r.split(".")[-1] for r in refs if r.startswith("outputs.parameters.")} <= declared


def test_the_rule_rejects_what_argo_rejects() -> None:
    assert not valid_metric_name("nvcre:busbw")  # argo adds "no ':'" to prometheus' legacy rule
    assert not valid_metric_name("nvcre-busbw") and not valid_metric_name("1nvcre")
    assert valid_metric_name(BUSBW_METRIC) and valid_metric_name(STATUS_METRIC)


@pytest.mark.skipif(not PROM_COMMON.is_file() or not ARGO_UTIL.is_file(),
                    reason="argo-workflows v4.0.5 / prometheus common v0.64.0 not in the Go module cache")
def test_the_rule_is_the_one_in_the_upstream_source() -> None:
    assert f"var MetricNameRE = regexp.MustCompile(`{PROMETHEUS_METRIC_NAME_RE}`)" in PROM_COMMON.read_text()
    util = ARGO_UTIL.read_text()
    assert "model.IsValidLegacyMetricName(string(model.LabelValue(name))) && !strings.Contains(name, `:`)" in util


def test_values_resolve_to_what_the_report_says() -> None:
    """Substitute each metric the way Argo's prepareMetricScope would (the node's own output parameters) on a local
    run, and compare with the report."""
    local = run_local(str(ROOT / "examples/certifications/intra-node.yaml"),
                      str(ROOT / "examples/clusters/slow-nic.yaml"))
    templates = {t["name"]: t for t in local.workflow["spec"]["templates"]}
    report = local.report
    group_busbw = {(f"{c['domain']}/{c['variant']}", g["name"]): g["metrics"].get("busBandwidthGBps")
                   for c in report["categories"] for g in c["groups"]}
    seen = 0
    for tname in ("test-0", "test-1"):
        metric = templates[tname]["metrics"]["prometheus"][0]
        labels = {lab["key"]: lab["value"] for lab in metric["labels"]}
        for node in [n for n in local.run.nodes_of(tname) if n.type == "Pod"]:
            params = node.outputs.get("parameters") or {}
            value = float(TAG.sub(lambda mt: params[mt.group(1).split(".")[-1]], metric["gauge"]["value"]))
            group = params["group-id"]
            assert value == pytest.approx(group_busbw[(labels["category"], group)], abs=1e-4)
            seen += 1
    assert seen == 32
    judge = local.run.nodes_of("judge")[-1].outputs["parameters"]
    assert judge["status"] == "failed" and report["result"] == "FAILED"
    assert [judge[f"status-{i}"] for i in range(2)] == [
        {"Passed": "succeeded", "Failed": "failed"}[c["status"]] for c in report["categories"]]


@pytest.mark.parametrize("cert", EXAMPLES, ids=lambda p: p.stem)
def test_one_help_and_one_type_per_metric_name(cert: Path) -> None:
    """The controller keeps one instrument per name and refuses a second help text or type for it
    (argo-workflows v4.0.5 workflow/metrics/metrics_custom.go L129-150, matchExistingMetric)."""
    seen: dict[str, tuple[str, tuple[str, ...]]] = {}
    for _, metric in _metrics(compile_certification(load_certification(str(cert)))):
        shape = (metric["help"], tuple(k for k in ("gauge", "counter", "histogram") if k in metric))
        assert seen.setdefault(metric["name"], shape) == shape


def test_diagnose_tests_carry_no_busbw_series() -> None:
    """Diagnose's tests are probes of groups its planner picks: no per-group busbw series and no outputs for one."""
    doc = compile_certification(load_certification(str(ROOT / "examples/certifications/diagnose.yaml")))
    tests = [t for t in doc["spec"]["templates"] if t["name"].startswith("test-")]
    assert tests and all("metrics" not in t for t in tests)
    assert all({p["name"] for p in t["outputs"]["parameters"]} == {"metrics"} for t in tests)


def test_the_nodes_label_names_a_small_group_and_bounds_a_large_one() -> None:
    from nvcre_hera.steps.metric_outputs import NODES_LABELLED, run_outputs

    ok = [{"status": "ok", "metrics": {"busBandwidthGBps": 400.0}}]
    small = [f"n{i:04d}" for i in range(NODES_LABELLED)]
    assert run_outputs("g0", small, ok)["nodes"] == ",".join(small)
    big = [f"n{i:04d}" for i in range(1024)]
    assert run_outputs("g0", big, ok)["nodes"] == "n0000,…,n1023 (1024 nodes)"
