"""CTRF (Common Test Report Format) JSON, the format AICR's `aicr validate` and the CTRF CI reporters read.

One test per category x group (a per-node test's group is one node, so it is one test per node and its name says
which), one `skipped` test per excluded node, and for a category that produced no groups one test that is never
`passed`. Statuses: a Passed group is `passed`, a Failed one `failed`, an excluded node `skipped`; a category
that could not test what it names (Incomplete, or no results at all) is `other`, never `passed` (fail closed).
`message` carries each threshold's expression and the group's measured value; `extra` the nodes, reasons and
metrics. The document validates against the CTRF JSON schema vendored in `nvcre_hera/schemas/ctrf/` (source and
commit in its SOURCES.md; `tests/test_report_ctrf.py` validates every golden report's rendering).

Pure: a CertificationReport dict in, a CTRF dict out.
"""

from __future__ import annotations

import json
from datetime import datetime
from importlib import resources
from typing import Any

from nvcre_hera import __version__
from nvcre_hera.report.card import fleet_text, threshold_source

SPEC_VERSION = "1.0.0"
TOOL_NAME = "nvcre-hera"
SCHEMA_RESOURCE = ("schemas", "ctrf", "ctrf.schema.json")
GROUP_STATUS = {"Passed": "passed", "Failed": "failed"}
STATUSES = ("passed", "failed", "skipped", "pending", "other")


def load_schema() -> dict:
    """The vendored CTRF JSON schema (draft-07)."""
    path = resources.files("nvcre_hera").joinpath(*SCHEMA_RESOURCE)
    return json.loads(path.read_text(encoding="utf-8"))


def _epoch_ms(stamp: Any) -> int | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _ms(seconds: Any) -> int:
    return int(round(float(seconds or 0) * 1000)) if isinstance(seconds, (int, float)) else 0


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "none"


def _threshold_lines(category: dict, metrics: dict) -> list[str]:
    """Each threshold of the category against this group's own measured value."""
    return [f"{t.get('metric')}: measured {_fmt(metrics.get(t.get('metric')))}, expression: {t.get('expression')}"
            + (f", {fleet_text(t.get('fleet'))}" if "fleet" in t else "")
            + (f" ({threshold_source(t)})" if threshold_source(t) else "")
            for t in category.get("thresholds") or []]


def _message(category: dict, group: dict, failed: dict | None) -> str:
    lines = []
    if group.get("status") != "Passed":
        lines.append(str((failed or {}).get("message") or "; ".join(
            str(r.get("message") or r.get("reason")) for r in group.get("reasons") or []) or "failed"))
    lines += _threshold_lines(category, group.get("metrics") or {})
    blocked = group.get("schedulingBlocked")
    if blocked:
        lines.append(f"WorkloadSchedulingBlocked: pods unschedulable for {float(blocked.get('seconds') or 0):.0f}s "
                     f"(not counted against timeoutPerJob): {blocked.get('message')}")
    if not category.get("thresholdsSet"):
        lines.append("no thresholds set: measurements recorded, not judged")
    return "\n".join(lines)


def _suite(category: dict) -> list[str]:
    """[domain, variant], and the GPU architecture when the run has several (each is its own suite)."""
    return [str(category.get("domain")), str(category.get("variant")),
            *([str(category["gpu"])] if category.get("gpu") else [])]


def _key(category: dict) -> str:
    return f"{category.get('domain')}/{category.get('variant')}"


def _gpu(category: dict) -> dict:
    return {"gpu": str(category["gpu"])} if category.get("gpu") else {}


def _group_test(category: dict, group: dict, failed: dict | None) -> dict:
    key = _key(category)
    label = "/".join(_suite(category))
    nodes = [str(n) for n in group.get("nodes") or []]
    name = f"{label} {nodes[0]}" if len(nodes) == 1 else f"{label} {group.get('name')}"
    status = GROUP_STATUS.get(str(group.get("status")), "other")
    test: dict[str, Any] = {
        "name": name, "status": status, "duration": _ms(group.get("runtimeSec")), "suite": _suite(category),
        "message": _message(category, group, failed), "rawStatus": str(group.get("status")),
        "tags": [str(category.get("testScale"))] if category.get("testScale") else [],
        "extra": {"category": key, **_gpu(category), "group": group.get("name"), "nodes": nodes,
                  **({"nodeCount": group.get("nodeCount"), "unpinned": True} if group.get("unpinned") else {}),
                  "reasons": list(group.get("reasons") or []), "metrics": dict(group.get("metrics") or {}),
                  "repeats": group.get("repeats"),
                  **({"transport": list(group["transport"])} if group.get("transport") else {}),
                  **({"schedulingBlocked": dict(group["schedulingBlocked"])} if group.get("schedulingBlocked") else {}),
                  **({"reason": failed.get("reason"), "blamedNodes": list(failed.get("blamedNodes") or [])}
                     if failed else {})}}
    if failed and failed.get("failureLog"):
        test["trace"] = str(failed["failureLog"])
    return test


def _category_tests(category: dict) -> list[dict]:
    key, label = _key(category), "/".join(_suite(category))
    failed_by_name = {f.get("name"): f for f in category.get("failedGroups") or []}
    groups = category.get("groups") or []
    tests = [_group_test(category, g, failed_by_name.get(g.get("name"))) for g in groups]
    names = {g.get("name") for g in groups}
    for f in category.get("failedGroups") or []:  # diagnose's infrastructure faults and unresolved groups
        if f.get("name") in names:
            continue
        tests.append({"name": f"{label} {f.get('name') or 'step'}", "status": "failed" if groups else "other",
                      "duration": 0, "suite": _suite(category), "rawStatus": str(category.get("status")),
                      "message": str(f.get("message") or f.get("reason")),
                      "extra": {"category": key, **_gpu(category), "group": f.get("name"),
                                "nodes": list(f.get("nodes") or []),
                                "reason": f.get("reason"), "blamedNodes": list(f.get("blamedNodes") or [])}})
    if category.get("incomplete") or (category.get("status") == "Incomplete" and not groups):
        tests.append({"name": f"{label} incomplete", "status": "other", "duration": 0, "suite": _suite(category),
                      "rawStatus": "Incomplete",
                      "message": str(category.get("incomplete") or "the category could not test what it names"),
                      "extra": {"category": key, **_gpu(category), "reason": "Incomplete"}})
    return tests


def _excluded_tests(report: dict) -> list[dict]:
    return [{"name": f"excluded-nodes {e.get('name')}", "status": "skipped", "duration": 0,
             "suite": ["excluded-nodes"], "rawStatus": "Excluded",
             "message": f"{e.get('reason')}: {e.get('message') or ''}".rstrip(": "),
             "extra": {"nodes": [str(e.get("name"))], "reason": e.get("reason")}}
            for e in report.get("excludedNodes") or []]


def to_ctrf(report: dict) -> dict:
    """The report as a CTRF document (a dict that validates against the vendored schema)."""
    tests = [t for c in report.get("categories") or [] for t in _category_tests(c)] + _excluded_tests(report)
    counts = {s: sum(1 for t in tests if t["status"] == s) for s in STATUSES}
    runtime_ms = sum(_ms(c.get("runtimeSec")) for c in report.get("categories") or [])
    wall = (report.get("execution") or {}).get("simulatedWallTimeSec")
    duration = _ms(wall) if isinstance(wall, (int, float)) else runtime_ms
    stop = _epoch_ms(report.get("generatedAt"))
    doc: dict[str, Any] = {
        "reportFormat": "CTRF", "specVersion": SPEC_VERSION, "generatedBy": f"{TOOL_NAME} {__version__}",
        **({"timestamp": report["generatedAt"]} if stop is not None else {}),
        "results": {
            "tool": {"name": TOOL_NAME, "version": __version__},
            "summary": {"tests": len(tests), **counts, "suites": len(report.get("categories") or []),
                        # generatedAt is when the judge ran; without it the times are unknown (0), never invented
                        "start": (stop - duration) if stop is not None else 0, "stop": stop or 0,
                        "duration": duration,
                        "extra": {"result": report.get("result")}},
            "tests": tests,
            "environment": {"reportName": str(report.get("name")),
                            "extra": {"platform": report.get("platform"), "gpu": report.get("gpu"),
                                      "gpuProduct": report.get("gpuProduct"), "totalNodes": report.get("totalNodes"),
                                      "testedNodes": report.get("testedNodes")}},
        },
        "extra": {"nvcreHera": {"apiVersion": report.get("apiVersion"), "name": report.get("name"),
                                "result": report.get("result"), "failedNodes": list(report.get("failedNodes") or []),
                                "failedGroupMembers": list(report.get("failedGroupMembers") or []),
                                "cleanup": report.get("cleanup"), "incomplete": list(report.get("incomplete") or [])}},
    }
    return doc


def render_ctrf(report: dict) -> str:
    return json.dumps(to_ctrf(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


__all__ = ["SPEC_VERSION", "load_schema", "render_ctrf", "to_ctrf"]
