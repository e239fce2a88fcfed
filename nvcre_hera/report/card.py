"""The text card, laid out like `nvcrectl certification report` (NVCRE `pkg/report/report.go`).

Deterministic plain text with Unicode box drawing and no colours, so it can be diffed, pasted into a ticket and
compared byte for byte in golden tests. Long lines (node lists, messages, log lines) wrap inside the box.
"""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any

from nvcre_hera.judge import category_label

WIDTH = 78  # text width inside a box; the box is WIDTH + 4 columns wide
BANDWIDTH_ROWS = 8
LOG_LINES = 20
NO_THRESHOLDS = "No thresholds set: measurements recorded, not judged."
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


MEMBERS_SHOWN = 6  # names of failed groups' unblamed members on the card (all of them are in the JSON)

def clean(text: Any) -> str:
    """Printable text: tabs to spaces, ANSI colour codes and other control characters dropped."""
    text = "" if text is None else str(text)
    return _CONTROL.sub("", _ANSI.sub("", text.replace("\t", "    ")))


def human_size(n: Any) -> str:
    """Bytes as nccl-tests users read them: 16 GiB, 512 MiB, 1.5 KiB, 8 B."""
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return "-"
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def duration(seconds: Any) -> str:
    """Seconds as a Go-style duration (1h2m3s, 95.5 -> 1m36s): what NVCRE prints."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds):
        return "-"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h{m}m{sec}s"
    return f"{m}m{sec}s" if m else f"{sec}s"


def number(value: Any) -> str:
    """A measured value to at most 4 decimals, trailing zeros trimmed (371.2, 0.9512); '-' when absent."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def threshold_source(t: dict) -> str:
    """`explicit, from spec`: which kind of threshold applied and where it came from ("" when the entry says not)."""
    src = t.get("source") if isinstance(t.get("source"), dict) else {}
    if not src.get("kind"):
        return ""
    return f"{src['kind']}, from {src.get('from') or 'spec'}"


def fleet_text(fleet: Any) -> str:
    """`fleet median 470.1 (mad 3.2, p10 462, 64 groups)`: what a fleet-relative threshold was judged against."""
    if not isinstance(fleet, dict):
        return "no fleet measured"
    count = fleet.get("count")
    groups = (f"{int(count)} group{'' if count == 1 else 's'}" if isinstance(count, (int, float))
              and math.isfinite(count) else "? groups")
    return (f"fleet median {number(fleet.get('median'))} (mad {number(fleet.get('mad'))}, "
            f"p10 {number(fleet.get('p10'))}, {groups})")


def threshold_line(t: dict) -> str:
    """`busBandwidthGBps value >= 300 → measured 371.2 ✓ (explicit, from spec)`."""
    mark = "✓" if t.get("passed") else "✗"
    if t.get("reason") == "FleetTooSmall":
        from nvcre_hera.fleet import MIN_FLEET

        outcome = f"{fleet_text(t.get('fleet'))}: fewer than {MIN_FLEET} groups, not judged"
    elif t.get("reason") == "EvaluationError":
        outcome = "evaluation error"
        if t.get("measuredValue") is not None:
            outcome = f"measured {number(t['measuredValue'])}, evaluation error"
    elif t.get("measuredValue") is None:
        outcome = "no measurement"
    else:
        outcome = f"measured {number(t['measuredValue'])}"
        if t.get("reason") == "NoMeasurement":
            outcome += ", some groups have no measurement"
    if "fleet" in t and t.get("reason") != "FleetTooSmall":
        outcome += f", {fleet_text(t.get('fleet'))}"
    source = threshold_source(t)
    return f"{t.get('metric')} {t.get('expression')} → {outcome} {mark}" + (f" ({source})" if source else "")


def _wrap(text: str, indent: str = "", width: int = WIDTH) -> list[str]:
    """Wrap one logical line to the box width, continuation lines indented two more spaces."""
    text = clean(text)
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width=width, initial_indent="", subsequent_indent=indent + "  ",
                         break_long_words=True, break_on_hyphens=False, drop_whitespace=True) or [""]


def _box(title: str, lines: list[str]) -> list[str]:
    title = clean(title)
    top = f"┌─ {title} " + "─" * max(1, WIDTH + 1 - len(title) - 2) + "┐"
    body = []
    for line in (sub for raw in lines for sub in clean(raw).splitlines() or [""]):
        indent = line[: len(line) - len(line.lstrip(" "))]
        body.extend(f"│ {part.ljust(WIDTH)} │" for part in _wrap(line, indent))
    return [top, *body, "└" + "─" * (WIDTH + 2) + "┘"]


def _bandwidth_lines(rows: list[dict]) -> list[str]:
    shown = rows[-BANDWIDTH_ROWS:]  # the largest sizes, largest last
    lines = [f"{'Size':<12}{'AlgBW (GB/s)':>14}{'BusBW (GB/s)':>14}{'Samples':>10}"]
    for r in shown:
        alg = "-" if r.get("algBandwidthGBps") is None else f"{r['algBandwidthGBps']:.2f}"
        bus = "-" if r.get("busBandwidthGBps") is None else f"{r['busBandwidthGBps']:.2f}"
        lines.append(f"{human_size(r.get('sizeBytes')):<12}{alg:>14}{bus:>14}{r.get('samples', 0):>10}")
    if len(rows) > len(shown):
        lines.append(f"({len(shown)} largest of {len(rows)} sizes shown)")
    return lines


def _runs(c: dict) -> str:
    """"2 runs", or "1 of 2 runs" when failed workloads were left out of the numbers."""
    measured, jobs = c.get("runsMeasured", c.get("jobs", 0)), c.get("jobs", 0)
    return f"{measured} of {jobs} runs" if measured != jobs else f"{jobs} run{'s' if jobs != 1 else ''}"


def _metric_lines(metrics: dict, runs: str) -> list[str]:
    lines = [f"Metrics over {runs}:",
             f"  {'':<28}{'min':>14}{'mean':>14}{'max':>14}"]
    for name, s in metrics.items():
        lines.append(f"  {clean(name):<28}{number(s.get('min')):>14}{number(s.get('mean')):>14}"
                     f"{number(s.get('max')):>14}")
    return lines


def _failed_group_lines(groups: list[dict]) -> list[str]:
    lines = [f"Failed Groups ({len(groups)}):"]
    for g in groups:
        name = g.get("name") or "(whole category)"
        count = g.get("nodeCount", 0)
        lines.append(f"  {name}  {count} node{'s' if count != 1 else ''}  {g.get('reason')}")
        if g.get("nodes"):
            lines.append("    nodes: " + ", ".join(clean(n) for n in g["nodes"]))
        elif g.get("unpinned"):
            lines.append("    nodes: chosen by the scheduler (placement Unpinned): no node is blamed")
        blamed = g.get("blamedNodes")
        if blamed is not None and g.get("nodes") and blamed != g["nodes"]:  # the evidence named some of them
            lines.append("    blamed: " + (", ".join(clean(n) for n in blamed) or "none (no node is blamed)"))
        if g.get("message"):
            lines.append("    " + g["message"])
        log = [ln for ln in clean(g.get("failureLog")).splitlines()][-LOG_LINES:]
        if log:
            lines.append("    log:")
            lines.extend("      | " + ln for ln in log)
    return lines


def describe_evidence(evidence: Any) -> str:
    """The planner's evidence ([{test, ratio}] or text) as one readable clause."""
    if isinstance(evidence, list) and evidence and all(isinstance(e, dict) for e in evidence):
        parts = []
        for e in evidence[:4]:
            ratio = e.get("ratio")
            where = f"test {e.get('test')}" if e.get("test") else "a test"
            parts.append(f"{where} ran at {ratio:.0%} of its peers" if isinstance(ratio, (int, float))
                         else f"{where} failed")
        return "; ".join(parts)
    return str(evidence) if evidence else "slower than its peers"


def round_lines(d: dict) -> list[str]:
    """One line per diagnose round from `roundHistory` and `releases`: tests run and failed, nodes cleared and
    released in it, and when it ended (seconds from the first plan step, when the plan step had a clock)."""
    released: dict[int, int] = {}
    for g in d.get("releases") or []:
        if isinstance(g, dict) and isinstance(g.get("releasedAtRound"), int):
            released[g["releasedAtRound"]] = released.get(g["releasedAtRound"], 0) + int(g.get("nodeCount") or 0)
    lines = []
    for h in d.get("roundHistory") or []:
        if not isinstance(h, dict):
            continue
        t, f = int(h.get("tests") or 0), h.get("failed")
        cleared = int((h.get("cleared") or {}).get("nodeCount") or 0)
        doubted = f", {h['doubted']} back in doubt" if h.get("doubted") else ""
        ended = f" (ended at {duration(h['endedAfterSec'])})" if h.get("endedAfterSec") is not None else ""
        lines.append(f"round {h.get('round')}: {t} test{'s' if t != 1 else ''}, "
                     f"{'?' if f is None else f} failed, {cleared} node{'s' if cleared != 1 else ''} cleared"
                     f"{doubted}, {released.get(h.get('round'), 0)} released{ended}")
    if lines and d.get("nodesNotReleased") is not None:
        lines.append(f"not released: {d['nodesNotReleased']} node{'s' if d['nodesNotReleased'] != 1 else ''} "
                     f"(accused, on a fault, unresolved or never cleared)")
    return lines


def jobs_run(d: dict) -> int:
    """Diagnose's jobs as the cluster ran them: every repeat of every test (judge.py `jobsRun`, the job ledger),
    else the planner's count of tests (a verdict without a ledger)."""
    return int(d["jobsRun"]) if isinstance(d.get("jobsRun"), int) else int(d.get("jobs") or 0)


def node_minutes(d: dict) -> str:
    """Diagnose's GPU node-minutes: the jobs' measured run times when every job was timed (judge.py
    `_measured_node_minutes`), else the planner's estimate, saying which."""
    if d.get("nodeMinutesMeasured") is not None:
        return f"{number(d['nodeMinutesMeasured'])} node-minutes (measured)"
    return f"{number(d.get('nodeMinutes'))} node-minutes (estimated)"


def _diagnose_lines(d: dict) -> list[str]:
    lines = [f"Diagnose:   {d.get('nodeCount') or '?'} nodes, {jobs_run(d)} jobs in {d.get('rounds') or 0} "
             f"rounds, {node_minutes(d)}"]
    if d.get("passLineGBps") is not None:
        lines.append(f"  search pass line: busBandwidthGBps >= {number(d['passLineGBps'])} (from the threshold)")
    if d.get("repeatsPerTest"):
        lines.append(f"  each test ran {d['repeatsPerTest']} time(s) (repeatCount); the worst run counts")
    for s in d.get("suspects") or []:
        detail = f" ({clean(s['detail'])})" if s.get("detail") else ""
        lines.append(f"  suspect {clean(s.get('node'))}: {clean(s.get('reason'))}{detail}, "
                     f"deficit {number(s.get('deficit'))}, "
                     f"confidence {number(s.get('confidence'))}")
        if s.get("evidence"):
            lines.append(f"    {clean(describe_evidence(s.get('evidence')))}")
    for f in d.get("infrastructureFaults") or []:
        sides = [", ".join(map(clean, side)) if isinstance(side, list) else clean(side) for side in f.get("between") or []]
        lines.append(f"  infrastructure fault between {' and '.join(sides)}")
    if d.get("stoppedAtRoundBudget"):
        lines.append("  stopped at its round budget: what it had not narrowed down is listed unresolved")
    for group in d.get("unresolved") or []:
        lines.append(f"  unresolved: {group.get('nodeCount')} nodes failed together, no single node or link explains it")
    if not d.get("suspects") and not d.get("infrastructureFaults") and not d.get("unresolved"):
        lines.append("  no suspects: every node passed")
    lines.extend(f"  {clean(line)}" for line in round_lines(d))
    return lines


def _repeat_lines(c: dict) -> list[str]:
    """How many times each group ran (repeatCount): a flapping node hides from a single run."""
    counts = sorted({int(g.get("repeats") or 1) for g in c.get("groups") or [] if g.get("nodes")})
    if (c.get("diagnose") or {}).get("repeatsPerTest"):
        counts = [int(c["diagnose"]["repeatsPerTest"])]
    if not counts or counts == [1]:
        return []
    return [f"Repeats:    {counts[0] if len(counts) == 1 else f'{counts[0]}-{counts[-1]}'} per group"]


def _nic_lines(c: dict) -> list[str]:
    """The NIC resource the workers requested and where it came from (only when discovery said)."""
    nic = c.get("nicResource")
    if not nic:
        return []
    return [f"NIC:        {nic.get('resource') or 'none'} ({nic.get('source')})"]


def _waited_lines(c: dict) -> list[str]:
    """Groups that ran only after their pods waited Pending (WorkloadSchedulingBlocked time, off timeoutPerJob):
    they passed or failed on their own; the wait says the cluster was short of capacity while they ran."""
    waited = [g for g in c.get("groups") or [] if (g.get("schedulingBlocked") or {}).get("seconds")
              and g.get("status") == "Passed"]
    if not waited:
        return []
    waited.sort(key=lambda g: -float(g["schedulingBlocked"]["seconds"]))
    first = waited[0]
    more = f" and {len(waited) - 1} more" if len(waited) > 1 else ""
    nodes = ", ".join(clean(n) for n in first.get("nodes") or [])[:60]
    return ["", f"Waited:     {clean(first['name'])} ({nodes}) Pending {duration(first['schedulingBlocked']['seconds'])} "
                f"before it ran{more} (WorkloadSchedulingBlocked time, not counted against timeoutPerJob)"]


def _category_box(c: dict) -> list[str]:
    lines = [
        f"Status:     {c.get('status')}",
        f"Reason:     {c.get('failureReason') or '-'}",
        f"Runtime:    {duration(c.get('runtimeSec'))}",
        f"Scale:      {c.get('testScale') or '-'}",
        f"Nodes/Job:  {c.get('nodesPerJob') if c.get('nodesPerJob') is not None else '-'}",
        f"Jobs:       {c.get('jobs', 0)}",
        *_repeat_lines(c),
        f"MNNVL:      {'enabled' if c.get('enableMNNVL') else 'disabled'}",
        *_nic_lines(c),
    ]
    if c.get("bandwidth"):
        lines += ["", *_bandwidth_lines(c["bandwidth"])]
    if c.get("metrics"):
        lines += ["", *_metric_lines(c["metrics"], _runs(c))]
    lines.append("")
    if c.get("thresholdsSet"):
        judged = _runs(c)
        head = f"Thresholds (judged on {judged}; failed workloads are not judged):" if " of " in judged else "Thresholds:"
        lines += [head, *("  " + threshold_line(t) for t in c.get("thresholds") or [])]
    elif not c.get("diagnose"):  # diagnose judges bandwidth in its planner; its lines follow
        lines.append(NO_THRESHOLDS)
    if c.get("thresholdNotice") and c["thresholdNotice"] not in str(c.get("incomplete") or ""):  # no floor: why
        lines.append(f"Profile:    {clean(c['thresholdNotice'])}")
    if c.get("hint"):
        lines.append(f"Hint: {clean(c['hint'])}")
    if c.get("diagnose"):
        lines += ["", *_diagnose_lines(c["diagnose"])]
    if c.get("incomplete"):
        lines += ["", f"Incomplete: {clean(c['incomplete'])}"]
    warned = [g for g in c.get("groups") or [] if g.get("warnings")]
    if warned:  # kept for the reader; a warning is no failure evidence
        lines += ["", f"Warnings:   {len(warned)} group(s) logged NCCL WARN lines, e.g. {clean(warned[0]['warnings'][0])}"]
    lines += _waited_lines(c)
    if c.get("failedGroups"):
        lines += ["", *_failed_group_lines(c["failedGroups"])]
    return _box(category_label(c), lines)


def _architecture_lines(a: dict) -> list[str]:
    """The head of one architecture's section: its GPU, how many of its nodes were tested, its own verdict."""
    product = f" ({clean(a['gpuProduct'])})" if a.get("gpuProduct") else ""
    return [f"Architecture {clean(a.get('gpu'))}{product}: {a.get('testedNodes')} nodes tested, "
            f"{a.get('categoriesPassed', 0)}/{a.get('categoriesTotal', 0)} categories passed, {a.get('result')}"]


def render_card(report: dict) -> str:
    """The whole report as a text card, ending in a newline."""
    gpu = clean(report.get("gpu") or "-")
    if report.get("gpuProduct"):
        gpu += f" ({clean(report['gpuProduct'])})"
    out = [
        "Certification Report",
        "═" * (WIDTH + 4),
        f"Name:       {clean(report.get('name'))}",
        f"Platform:   {clean(report.get('platform') or '-')}",
        f"GPU:        {gpu}",
        f"Nodes:      {report.get('testedNodes', '-')}/{report.get('totalNodes', '-')} tested",
    ]
    if report.get("generatedAt"):
        out.append(f"Generated:  {clean(report['generatedAt'])}")
    archs = report.get("architectures") or []
    if archs:  # a run over several GPU architectures: one section each, its categories under it
        for a in archs:
            own = [c for c in report.get("categories") or [] if c.get("gpu") == a.get("gpu")]
            out += ["", "═" * (WIDTH + 4), *_architecture_lines(a), "═" * (WIDTH + 4)]
            out += [line for c in own for line in ("", *_category_box(c))]
    else:
        for c in report.get("categories") or []:
            out += ["", *_category_box(c)]
    excluded = report.get("excludedNodes") or []
    if excluded:
        rows = [f"{clean(e.get('name'))}: {e.get('reason')}" + (f" ({e['message']})" if e.get("message") else "")
                for e in excluded]
        out += ["", *_box(f"Excluded Nodes ({len(excluded)})", rows)]
    s = report.get("summary") or {}
    cleanup = report.get("cleanup") or {}
    leftover = cleanup.get("leftover") or []
    failed = report.get("failedNodes") or []
    lines = [f"Categories:    {s.get('categoriesPassed', 0)}/{s.get('categoriesTotal', 0)} passed",
             *(["Architectures: " + ", ".join(f"{clean(a.get('gpu'))} {a.get('result')} ({a.get('testedNodes')} "
                                               f"nodes)" for a in archs)] if archs else []),
             f"Failed Nodes:  {len(failed) if failed else 'none'}"]
    lines += [f"  {clean(n.get('name'))}: {', '.join(n.get('reasons') or [])}" for n in failed]
    members = report.get("failedGroupMembers") or []
    if members:  # in a failed group whose evidence named other nodes: not certified, not blamed
        names = [clean(m.get("name")) for m in members]
        shown = ", ".join(names[:MEMBERS_SHOWN]) + (f", … (+{len(names) - MEMBERS_SHOWN})"
                                                     if len(names) > MEMBERS_SHOWN else "")
        lines.append(f"Group members: {len(members)} not blamed, in failed groups: {shown}")
    if excluded:
        lines.append(f"Excluded:      {len(excluded)}")
    lines += [f"Incomplete:    {clean(m)}" for m in report.get("incomplete") or []]
    lines.append(f"Cleanup:       {cleanup.get('jobsCreated', 0)} job objects created, "
                 f"{cleanup.get('jobsDeleted', 0)} deleted, {len(leftover)} left"
                 + (f" ({', '.join(clean(n) for n in leftover)})" if leftover else ""))
    lines.append(f"Result:        {report.get('result')}")
    out += ["", *_box("Summary", lines)]
    return "\n".join(out) + "\n"


__all__ = ["NO_THRESHOLDS", "clean", "duration", "fleet_text", "human_size", "jobs_run", "node_minutes", "number",
           "render_card", "round_lines", "threshold_line", "threshold_source"]
