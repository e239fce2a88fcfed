"""Baselines: thresholds from a passing run (`nvcre baseline`), and a run compared with one (`certify --baseline`).

The measured value of a category x scale x metric is its **worst group**: the lowest group value (the highest for a
lower-is-better metric such as avgStepTimeSec). Of a passing run that is the value every group reached, so a
threshold at `fraction` of it (`value >= f*worst`, or `value <= worst/f`) passes that run again with room for
noise, and fails a cluster that got slower by more than 1-f. The bound is rounded to 2 decimals towards the side
that still accepts the measured value (down for a floor, up for a ceiling).

The file written is a Certification fragment: `spec.categories[*]` with `options.testScale` and
`options.thresholds` under the run's GPU key (`thresholds: {h100: {busBandwidthGBps: "value >= 306.90"}}`; plain
keys when the GPU was unknown), so pasting it cannot apply H100 numbers to a GB300. It also loads as
`thresholdProfile: ./thresholds.yaml` (nvcre_hera.threshold_profiles, kind baseline). The measured values travel in
the annotation `nvcre-hera.dev/baseline` (JSON) for `certify --baseline`. Pure functions; the CLI does the I/O.
"""

from __future__ import annotations

import json
import math
from typing import Any

from nvcre_hera.errors import InputError
from nvcre_hera.judge import lower_is_better

ANNOTATION = "nvcre-hera.dev/baseline"
DEFAULT_FRACTION = 0.9


def worst_values(report: dict) -> list[dict]:
    """[{domain, variant, testScale, enableMNNVL, metric, value, groups}] over each category's groups that carry the
    metric (a suspect group of diagnose measures nothing and is skipped)."""
    out = []
    for cat in report.get("categories") or []:
        per_metric: dict[str, list[float]] = {}
        for group in cat.get("groups") or []:
            for metric, value in (group.get("metrics") or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    per_metric.setdefault(metric, []).append(float(value))
        for metric in sorted(per_metric):
            values = per_metric[metric]
            worst = max(values) if lower_is_better(metric) else min(values)
            out.append({"domain": cat.get("domain"), "variant": cat.get("variant"), "testScale": cat.get("testScale"),
                        "enableMNNVL": bool(cat.get("enableMNNVL")), "metric": metric, "value": worst,
                        "groups": len(values)})
    return out


def threshold_for(metric: str, measured: float, fraction: float) -> str:
    """`value >= f*measured` (floor rounded down) or, lower-is-better, `value <= measured/f` (rounded up)."""
    if lower_is_better(metric):
        return f"value <= {math.ceil(measured / fraction * 100 - 1e-9) / 100:.2f}"
    return f"value >= {math.floor(measured * fraction * 100 + 1e-9) / 100:.2f}"


def check_fraction(fraction: float) -> float:
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise InputError(f"{fraction!r} is not a fraction in (0, 1] (e.g. 0.9: thresholds at 90 % of the run)",
                         "--fraction")
    return float(fraction)


def _usable(report: Any, where: str) -> list[dict]:
    if not isinstance(report, dict) or report.get("kind") != "CertificationReport":
        raise InputError("not a certification report (report.json from `nvcre certify --out DIR`)", where)
    if report.get("result") != "PASSED":
        raise InputError(f"the run did not pass (result {report.get('result')}): a baseline comes from a passing "
                         "run", where)
    values = worst_values(report)
    if not values:
        raise InputError("the run has no measurements to take a baseline from", where)
    return values


def baseline_fragment(report: dict, fraction: float, where: str) -> tuple[str, int]:
    """(the YAML text, how many thresholds) for a passing report; InputError for one that did not pass or measured
    nothing."""
    import yaml

    fraction = check_fraction(fraction)
    values = _usable(report, where)
    gpu = str(report.get("gpu") or "unknown")
    categories: list[dict] = []
    index: dict[tuple, dict] = {}
    for v in values:
        key = (v["domain"], v["variant"], v["testScale"], v["enableMNNVL"])
        if key not in index:
            options: dict[str, Any] = {"testScale": v["testScale"]}
            if v["enableMNNVL"]:
                options["enableMNNVL"] = True
            options["thresholds"] = {}
            index[key] = {"domain": v["domain"], "variant": v["variant"], "options": options}
            categories.append(index[key])
        thresholds = index[key]["options"]["thresholds"]
        block = thresholds if gpu == "unknown" else thresholds.setdefault(gpu, {})
        block[v["metric"]] = threshold_for(v["metric"], v["value"], fraction)
    record = {"report": where, "certification": report.get("name"), "generatedAt": report.get("generatedAt"),
              "gpu": gpu, "fraction": fraction, "statistic": "worst group", "measured": values}
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
           "metadata": {"name": f"{str(report.get('name') or 'run')[:41]}-baseline",
                        "annotations": {ANNOTATION: json.dumps(record, sort_keys=True)}},
           "spec": {"categories": categories}}
    header = [
        f"# nvcre baseline of {where}: certification {report.get('name')}, generatedAt {report.get('generatedAt')},",
        f"# result {report.get('result')}, GPU {gpu} ({report.get('gpuProduct') or 'no product label'}), platform "
        f"{report.get('platform')}, {report.get('testedNodes')} nodes tested.",
        f"# Each threshold is {fraction:g} x the category's worst group value (the lowest; for a lower-is-better "
        f"metric the highest / {fraction:g}):",
        *(f"#   {v['domain']}/{v['variant']} {v['testScale']} {v['metric']}: worst of {v['groups']} group(s) "
          f"{v['value']:g}" for v in values),
        "# Paste spec.categories[*].options.thresholds into a Certification, or use this file as",
        "# `thresholdProfile: ./<this file>` (explicit thresholds still win key by key).",
    ]
    body = yaml.safe_dump(doc, sort_keys=False, width=120)
    return "\n".join(header) + "\n" + body, len(values)


def measured_of(data: Any, where: str) -> list[dict]:
    """The measured values of a stored baseline: a file `nvcre baseline` wrote, or a report JSON (passing or not:
    it is a point of comparison, not a source of thresholds)."""
    if isinstance(data, dict) and data.get("kind") == "CertificationReport":
        values = worst_values(data)
    elif isinstance(data, dict) and data.get("kind") == "Certification":
        raw = ((data.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
        if not raw:
            raise InputError(f"a Certification without the {ANNOTATION} annotation `nvcre baseline` writes: no "
                             "measured values to compare with", where)
        try:
            values = json.loads(raw)["measured"]
        except (ValueError, KeyError, TypeError):
            raise InputError(f"the {ANNOTATION} annotation is not the JSON `nvcre baseline` writes", where) from None
    else:
        raise InputError("a baseline is the file `nvcre baseline` wrote or a report.json", where)
    if not values:
        raise InputError("the baseline holds no measurements", where)
    return values


def _key(v: dict) -> tuple:
    return (v.get("domain"), v.get("variant"), v.get("testScale"), v.get("metric"))


def compare(report: dict, baseline: list[dict], where: str) -> dict:
    """Per metric: this run's worst group value, the baseline's, and the change in % of the baseline. Reporting
    only: the verdict stays the thresholds' (a baseline is not a threshold unless you make it one)."""
    now = {_key(v): v for v in worst_values(report)}
    then = {_key(v): v for v in baseline}
    rows = []
    for key in sorted(set(now) | set(then), key=lambda k: tuple(str(p) for p in k)):
        measured = now.get(key, {}).get("value")
        base = then.get(key, {}).get("value")
        change = None
        if measured is not None and base not in (None, 0):
            change = round((float(measured) - float(base)) / float(base) * 100, 1) + 0.0  # no -0.0
        rows.append({"category": f"{key[0]}/{key[1]}", "testScale": key[2], "metric": key[3],
                     "measured": measured, "baseline": base, "changePercent": change,
                     "lowerIsBetter": lower_is_better(str(key[3])),
                     **({"note": "not measured in this run"} if measured is None else
                        {"note": "not in the baseline"} if base is None else {})})
    return {"baseline": where, "statistic": "worst group", "affectsVerdict": False, "rows": rows}


def comparison_lines(comparison: dict) -> list[str]:
    lines = [f"Compared with baseline {comparison['baseline']} (worst group per metric; the verdict is unchanged):"]
    for r in comparison["rows"]:
        if r["changePercent"] is None:
            lines.append(f"  {r['category']} {r['testScale']} {r['metric']}: measured {r['measured']}, baseline "
                         f"{r['baseline']} ({r.get('note') or 'no change computable'})")
            continue
        worse = (r["changePercent"] > 0) == r["lowerIsBetter"] and r["changePercent"] != 0
        lines.append(f"  {r['category']} {r['testScale']} {r['metric']}: {r['measured']:g} vs {r['baseline']:g} "
                     f"({r['changePercent']:+.1f} %{', worse' if worse else ''})")
    return lines


__all__ = ["ANNOTATION", "DEFAULT_FRACTION", "baseline_fragment", "check_fraction", "compare", "comparison_lines",
           "measured_of", "threshold_for", "worst_values"]
