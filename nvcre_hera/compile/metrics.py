"""Prometheus metrics the Argo controller emits from the compiled workflow (template `metrics`, argo-workflows
docs/metrics.md "Custom metrics"), with the names NVCRE uses:

- `nvcre_nccl_busbw_gbs` (gauge, NVCRE docs: "NCCL bus bandwidth in GB/s"): on every NCCL category's test
  template, the run's best bus bandwidth (largest over its repeats that ran their workload), labelled with the
  certification, category, group and the group's nodes (one node for a per-node test). A run with no measurement
  writes -1 and `when` skips it: no invented 0.
- `nvcre_certification_status` (gauge): on the judge, 1 with label `status` = succeeded | failed | incomplete, for
  the certification (`category="all"`) and for each category. NVCRE's own gauge also emits 0 for the statuses an
  object is not in (cluster-readiness-engine pkg/controller/status_metrics.go, emitExclusiveStatus); Argo emits
  one series per template metric, so here only the current status has a series (query `== 1` either way).

Values come from output parameters the steps write (`{{outputs.parameters.X}}`, which Argo puts in a template
metric's scope once the node is fulfilled: argo-workflows v4.0.5 workflow/controller/steps.go L661-710,
prepareMetricScope). The controller keeps one instrument per name: every template's metric of one name has the same
help and type (workflow/metrics/metrics_custom.go L129-150, matchExistingMetric). A value Argo cannot resolve or parse adds a `MetricsError` condition to the workflow and
changes nothing else (operator.go L4061-4174, computeMetrics / reportMetricEmissionError).

Name and label-key rule: argo-workflows v4.0.5 workflow/metrics/util.go L18-21 (IsValidMetricName: prometheus
`model.IsValidLegacyMetricName` and no `:`), applied to names in workflow/validate/validate.go L556-572 and to
label keys by ValidateMetricLabels (util.go L43-50); help is required (validate.go L563-565). The legacy rule is
prometheus/common v0.64.0 (argo's go.mod) model/metric.go L114 `MetricNameRE`.
"""

from __future__ import annotations

import re

from hera.workflows import models as m

from nvcre_hera.spec_load import ResolvedCategory
from nvcre_hera.steps.metric_outputs import NO_MEASUREMENT

BUSBW_METRIC = "nvcre_nccl_busbw_gbs"
STATUS_METRIC = "nvcre_certification_status"
# prometheus/common v0.64.0 model/metric.go L114, and argo's own extra rule: no ':' (util.go L20)
PROMETHEUS_METRIC_NAME_RE = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"


def valid_metric_name(name: str) -> bool:
    return bool(re.match(PROMETHEUS_METRIC_NAME_RE, name)) and ":" not in name


def has_busbw(cat: ResolvedCategory) -> bool:
    return "busBandwidthGBps" in cat.entry.metrics


def _labels(**labels: str) -> list[m.MetricLabel]:
    return [m.MetricLabel(key=k, value=v) for k, v in labels.items()]


def run_metrics(cat: ResolvedCategory, certification: str) -> m.Metrics | None:
    """The test template's metrics: the best bus bandwidth of an NCCL category's run."""
    if not has_busbw(cat):
        return None
    return m.Metrics(prometheus=[m.Prometheus(
        name=BUSBW_METRIC, help="NCCL bus bandwidth in GB/s: the run's best over its repeats",
        labels=_labels(certification=certification, category=cat.key,
                       group="{{outputs.parameters.group-id}}", nodes="{{outputs.parameters.nodes}}"),
        when=f"{{{{outputs.parameters.busbw}}}} > {NO_MEASUREMENT}",
        gauge=m.Gauge(value="{{outputs.parameters.busbw}}", realtime=False))])


def judge_metrics(categories: list[ResolvedCategory], certification: str) -> m.Metrics:
    """The judge's metrics: the verdict of the certification and of each category."""
    gauges = [m.Prometheus(
        name=STATUS_METRIC, help="NVCRE certification status (1 = current status)",
        labels=_labels(certification=certification, category=category, status=f"{{{{outputs.parameters.{param}}}}}"),
        gauge=m.Gauge(value="1", realtime=False))
        for category, param in [("all", "status"), *[(c.key, f"status-{c.index}") for c in categories]]]
    return m.Metrics(prometheus=gauges)


__all__ = ["BUSBW_METRIC", "PROMETHEUS_METRIC_NAME_RE", "STATUS_METRIC", "has_busbw", "judge_metrics", "run_metrics",
           "valid_metric_name"]
