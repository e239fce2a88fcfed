"""Reasons and threshold metrics derived from parsed results (the judge's input; NVCRE's reason spelling).

Each reason is `{"node": None, "reason": str, "message": str}`; the runner fills `node` when it knows which node
the test ran on. Reasons:

- `DataCorruption`: nccl-tests counted wrong values (#wrong > 0) or printed `# Out of bounds values : N FAILED`.
- `WorkloadFailed`: NCCL/CUDA test failure, an MPI abort banner (unless it only follows DataCorruption:
  nccl-tests exits non-zero on wrong data), a training loss that became NaN, or `dcgmi diag` that could not run
  (`Error: ...`). NCCL WARN lines are no failure evidence: they are kept (`warnings`), never a reason.
- `MeasurementNotFound`: nothing complete to measure: no nccl-tests rows, rows without the `# Avg bus bandwidth`
  footer (a log cut short: the last row may be the one that never finished), no training step, no diag result.
- `DiagnosticFailed`: a `dcgmi diag` test failed; the message names the test and the GPUs.
- `TransportMismatch`: NCCL used `NET/Socket` (TCP) although the platform's fabric is InfiniBand, EFA or RoCE
  (`expected_fabric` in ib/infiniband/efa/roce, case-insensitive): the fast fabric was not used, so bandwidth
  numbers do not certify it. It needs NCCL_DEBUG=INFO lines (else `transport` is null and nothing is said).
  Switch it off with the option `transportCheck: false` (here `transport_check=False`), e.g. for a platform
  that runs NCCL over TCP on purpose.

`metrics_from(kind, result)` gives only the numbers that are present; a missing metric stays missing so the judge
fails closed.
"""

from __future__ import annotations

import math
from typing import Any

FAST_FABRICS = frozenset({"ib", "infiniband", "efa", "roce"})
_ABORT_BANNERS = ("Primary job", "mpirun noticed", "mpirun detected", "prterun noticed", "prterun detected")
_MSG_MAX = 300


def _reason(reason: str, message: str) -> dict[str, Any]:
    message = " ".join(message.split())
    if len(message) > _MSG_MAX:
        message = message[: _MSG_MAX - 3] + "..."
    return {"node": None, "reason": reason, "message": message}


def nccl_reasons(result: dict[str, Any], expected_fabric: str | None = None,
                 transport_check: bool = True) -> list[dict[str, Any]]:
    """Reasons for one nccl-tests result (see the module docstring for what triggers each)."""
    out: list[dict[str, Any]] = []
    test = result.get("test") or "nccl-tests"
    rows = result.get("rows") or []
    errors = [str(e) for e in result.get("errors") or []]
    wrong = result.get("wrong") or 0
    oob = result.get("outOfBounds") or {}
    corrupt = []
    if wrong > 0:
        corrupt.append(f"{wrong} wrong values")
    if oob and not oob.get("ok", True):
        corrupt.append(f"out of bounds values: {oob.get('count')} FAILED")
    if corrupt:
        out.append(_reason("DataCorruption", f"{test}: " + "; ".join(corrupt)))
    fatal = [e for e in errors if "NCCL WARN" not in e]  # older results listed WARN lines among the errors
    if corrupt and all(e.startswith(_ABORT_BANNERS) for e in fatal):
        fatal = []  # nccl-tests exits non-zero on wrong data: the abort banner is the consequence, not a 2nd cause
    if fatal:
        out.append(_reason("WorkloadFailed", f"{test}: {fatal[0]}"))
    elif not corrupt and (result.get("busBandwidthGBps") is None or result.get("status") != "ok"):
        what = ("no result rows" if not rows else "no bandwidth value in the result rows"
                if result.get("busBandwidthGBps") is None else
                "result rows but no `# Avg bus bandwidth` footer: the log ends before the run did")
        warnings = [str(w) for w in result.get("warnings") or []]
        seen = f"; last NCCL WARN: {warnings[-1]}" if warnings else ""
        out.append(_reason("MeasurementNotFound", f"{test}: {what}{seen}"))
    fabric = (expected_fabric or "").strip().lower()
    if transport_check and fabric in FAST_FABRICS and result.get("transport") == "NET/Socket":
        out.append(_reason("TransportMismatch",
                           f"{test}: NCCL used NET/Socket but the platform fabric is {expected_fabric} "
                           "(set transportCheck: false if TCP is intended)"))
    return out


def attribute_to_nodes(reasons: list[dict[str, Any]], result: dict[str, Any],
                       nodes: list[str], what: str = "nccl-tests") -> list[dict[str, Any]]:
    """Name the node when the log names its host: a `host: Test CUDA|NCCL failure …` line (or torchrun's root cause
    `host : …`, in `failedHosts` of a training parse) makes that host's
    WorkloadFailed its own, and a host whose own NCCL INFO lines fell back to NET/Socket while others of the group
    used the fabric makes the TransportMismatch its own; the message carries the evidence line. A host is matched
    to a node by its name (or the node name's first label): pod host names that are no node's stay group blame."""
    by_host: dict[str, str] = {}
    for node in nodes:
        by_host.setdefault(node, node)
        by_host.setdefault(node.split(".")[0], node)
    out: list[dict[str, Any]] = []
    test = result.get("test") or what
    for r in reasons:
        named: list[dict[str, Any]] = []
        if r.get("node") is None and r["reason"] == "WorkloadFailed":
            seen: set[str] = set()
            for hit in result.get("failedHosts") or []:
                node = by_host.get(str(hit.get("host")))
                if node and node not in seen:
                    seen.add(node)
                    named.append(_reason("WorkloadFailed", f"{test}: {hit.get('line')}") | {"node": node})
        elif r.get("node") is None and r["reason"] == "TransportMismatch":
            nets = [(by_host[str(h["host"])], h) for h in result.get("hostNetworks") or []
                    if str(h.get("host")) in by_host]
            if any(h.get("transport") != "NET/Socket" for _, h in nets):  # the others did use the fabric
                named = [_reason("TransportMismatch", f"{r['message']}; {node} fell back: {h.get('line')}")
                         | {"node": node} for node, h in nets if h.get("transport") == "NET/Socket"]
        out.extend(named or [r])
    return out


def dcgm_reasons(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One DiagnosticFailed per failed diag test; WorkloadFailed when dcgmi errored (beside any partial failure);
    MeasurementNotFound when nothing was diagnosed (no result, or every test skipped)."""
    status = result.get("status")
    out: list[dict[str, Any]] = []
    if status == "error":
        errors = result.get("errors") or ["unknown error"]
        out.append(_reason("WorkloadFailed", f"dcgmi diag could not run: {errors[0]}"))
    for test in result.get("tests") or []:
        if test.get("status") != "fail":
            continue
        gpus = sorted((int(g) for g, st in (test.get("gpus") or {}).items() if st == "fail"))
        where = f" on GPU {','.join(str(g) for g in gpus)}" if gpus else ""
        warnings = test.get("warnings") or []
        detail = f": {warnings[0]}" if warnings else ""
        out.append(_reason("DiagnosticFailed", f'dcgmi diag: test "{test.get("name")}" failed{where}{detail}'))
    if out:
        return out
    tests = result.get("tests") or []
    if status != "pass" and tests and all(t.get("status") == "skip" for t in tests):
        out.append(_reason("MeasurementNotFound", f"dcgmi diag: every test was skipped ({len(tests)}): "
                                                  "nothing was diagnosed"))
    elif status != "pass":
        out.append(_reason("MeasurementNotFound", "dcgmi diag: no complete diagnostic result in the output"))
    return out


def training_reasons(result: dict[str, Any]) -> list[dict[str, Any]]:
    """WorkloadFailed for a NaN loss; MeasurementNotFound when no training step was logged."""
    out: list[dict[str, Any]] = []
    if result.get("lossNaN"):
        at = result.get("lossNaNAtIteration")
        out.append(_reason("WorkloadFailed", "training loss became NaN" + (f" at iteration {at}" if at else "")))
    if not result.get("iterations"):
        out.append(_reason("MeasurementNotFound", "training: no iteration lines in the log"))
    return out


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


_METRICS = {
    "nccl": ("busBandwidthGBps", "algBandwidthGBps"),
    "training": ("avgTFLOPsPerGPU", "avgStepTimeSec", "goodputRatio"),
}


def measurement_complete(kind: str, result: dict[str, Any]) -> bool:
    """Whether a parsed log holds a finished measurement (the run step waits for one up to measurementTimeout):
    nccl-tests and dcgmi print a footer or closing border; a training log has at least one step."""
    if kind in ("nccl", "dcgm"):
        return result.get("status") not in (None, "incomplete")
    return bool(metrics_from(kind, result))


def metrics_from(kind: str, result: dict[str, Any]) -> dict[str, float]:
    """The threshold metrics a parsed result yields; absent or null values are left out (the judge fails closed)."""
    if kind == "exit":  # judged by the exit code alone: no metrics
        return {}
    if kind == "dcgm":
        status = result.get("status")
        return {"dcgmPassed": 1.0 if status == "pass" else 0.0} if status in ("pass", "fail") else {}
    if kind not in _METRICS:
        raise ValueError(f"unknown result kind {kind!r} (use nccl, dcgm or training)")
    out: dict[str, float] = {}
    for key in _METRICS[kind]:
        val = _num(result.get(key))
        if val is not None:
            out[key] = val
    return out


__all__ = ["FAST_FABRICS", "attribute_to_nodes", "dcgm_reasons", "measurement_complete", "metrics_from", "nccl_reasons", "training_reasons"]
