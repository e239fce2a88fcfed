"""JUnit XML, so CI systems (GitLab, Jenkins, GitHub test reporters) show a certification like a test run.

One testsuite per category, one testcase per group (a failure carries the reason, message, nodes and log tail),
and a suite of skipped testcases for the excluded nodes. Built with xml.etree so escaping is never hand-rolled;
characters XML 1.0 forbids (control codes from logs) are dropped first, or the file would not parse.
Follows the JUnit schema as the Jenkins JUnit plugin reads it (NVCRE `pkg/report/junit.go` does the same).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from nvcre_hera.report.card import clean, threshold_source

_XML_FORBIDDEN = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: Any) -> str:
    return _XML_FORBIDDEN.sub("", clean(text))


def _failure_text(group: dict, failed: dict | None) -> str:
    lines = [f"nodes: {', '.join(str(n) for n in group.get('nodes') or [])}"]
    for r in group.get("reasons") or []:
        who = r.get("node") or "group"
        lines.append(f"{r.get('reason')} ({who}): {r.get('message')}")
    log = (failed or {}).get("failureLog") or group.get("failureLog")
    if log:
        lines += ["", "log tail:", str(log)]
    return "\n".join(lines)


def _category_suite(parent: ET.Element, c: dict) -> tuple[int, int]:
    name = f"{c.get('domain')}/{c.get('variant')}" + (f"/{c['gpu']}" if c.get("gpu") else "")
    suite = ET.SubElement(parent, "testsuite", name=_x(name))
    props = ET.SubElement(suite, "properties")
    for key in ("testScale", "nodesPerJob", "enableMNNVL", "failureReason"):
        ET.SubElement(props, "property", name=key, value=_x(c.get(key)))
    for t in c.get("thresholds") or []:
        ET.SubElement(props, "property", name=f"threshold.{_x(t.get('metric'))}",
                      value=_x(f"{t.get('expression')} → {t.get('measuredValue')} "
                               f"{'passed' if t.get('passed') else 'failed'}"
                               + (f" ({threshold_source(t)})" if threshold_source(t) else "")))
    if not c.get("thresholdsSet"):
        ET.SubElement(props, "property", name="thresholds", value="none set: measurements recorded, not judged")
    failed_by_name = {f.get("name"): f for f in c.get("failedGroups") or []}
    tests = failures = 0
    groups = c.get("groups") or []
    for g in groups:
        tests += 1
        case = ET.SubElement(suite, "testcase", name=_x(g.get("name")), classname=_x(name.replace("/", ".")),
                             time=f"{float(g.get('runtimeSec') or 0):.3f}")
        if g.get("status") != "Passed":
            failures += 1
            failed = failed_by_name.get(g.get("name"))
            reason = (failed or {}).get("reason") or "Failed"
            message = (failed or {}).get("message") or reason
            fail = ET.SubElement(case, "failure", message=_x(message), type=_x(reason))
            fail.text = _x(_failure_text(g, failed))
        metrics = g.get("metrics") or {}
        if metrics:
            out = ET.SubElement(case, "system-out")
            out.text = _x("\n".join(f"{k}={v}" for k, v in metrics.items()))
    if c.get("incomplete"):  # it could not test what it names: never green in a CI view (INCOMPLETE exits 1)
        tests += 1
        failures += 1
        case = ET.SubElement(suite, "testcase", name="incomplete", classname=_x(name.replace("/", ".")), time="0.000")
        ET.SubElement(case, "failure", message=_x(c["incomplete"]), type="Incomplete").text = _x(c["incomplete"])
    elif not groups:  # the step itself errored: one failing testcase so the category is not silently green
        for f in c.get("failedGroups") or [{"reason": c.get("failureReason") or "WorkloadFailed", "message": ""}]:
            tests += 1
            failures += 1
            case = ET.SubElement(suite, "testcase", name="step", classname=_x(name.replace("/", ".")), time="0.000")
            fail = ET.SubElement(case, "failure", message=_x(f.get("message") or f.get("reason")),
                                 type=_x(f.get("reason")))
            fail.text = _x(f.get("message") or "")
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    suite.set("time", f"{float(c.get('runtimeSec') or 0):.3f}")
    return tests, failures


def render_junit(report: dict) -> str:
    """The report as a JUnit XML document (UTF-8 text with an XML declaration)."""
    root = ET.Element("testsuites", name=_x(report.get("name")))
    tests = failures = skipped = 0
    for c in report.get("categories") or []:
        t, f = _category_suite(root, c)
        tests += t
        failures += f
    excluded = report.get("excludedNodes") or []
    if excluded:
        suite = ET.SubElement(root, "testsuite", name="excluded-nodes", tests=str(len(excluded)), failures="0",
                              errors="0", skipped=str(len(excluded)), time="0.000")
        for e in excluded:
            case = ET.SubElement(suite, "testcase", name=_x(e.get("name")), classname="excluded-nodes", time="0.000")
            ET.SubElement(case, "skipped", message=_x(f"{e.get('reason')}: {e.get('message') or ''}".rstrip(": ")))
        tests += len(excluded)
        skipped += len(excluded)
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", "0")
    root.set("skipped", str(skipped))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["render_junit"]
