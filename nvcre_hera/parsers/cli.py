"""The `nvcre parse nccl|dcgm|training FILE [--json]` helper: read a file, parse it, format it for a terminal.

Kept free of argparse so the lead's CLI wires it in one line and tests call it directly.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .dcgm import parse_dcgm
from .nccl import parse_nccl
from .reasons import dcgm_reasons, nccl_reasons, training_reasons
from .training import parse_training

PARSERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "nccl": parse_nccl,
    "dcgm": parse_dcgm,
    "training": parse_training,
}
_REASONS: dict[str, Callable[[dict[str, Any]], list[dict[str, Any]]]] = {
    "nccl": nccl_reasons,
    "dcgm": dcgm_reasons,
    "training": training_reasons,
}


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}{unit}"
    return f"{value}{unit}"


def _summary(kind: str, path: str, res: dict[str, Any]) -> str:
    """A few lines a person reads at a glance; the full data is in --json."""
    if kind == "nccl":
        lines = [f"{path}: nccl-tests {res['test'] or '?'} {res['status']}",
                 f"  busbw max {_fmt(res['busBandwidthGBps'], ' GB/s')}  algbw max "
                 f"{_fmt(res['algBandwidthGBps'], ' GB/s')}  avg busbw {_fmt(res['avgBusBandwidthGBps'], ' GB/s')}",
                 f"  rows {len(res['rows'])}  wrong {_fmt(res['wrong'])}  transport {_fmt(res['transport'])}"
                 f"  ranks {_fmt(res['ranks'])}  errors {res['errorCount']}"]
        lines += [f"  error: {e}" for e in res["errors"][:5]]
    elif kind == "dcgm":
        lines = [f"{path}: dcgmi diag {res['status']} (DCGM {_fmt(res['version'])}, {len(res['tests'])} tests)"]
        if res["failedTests"]:
            lines.append(f"  failed tests: {', '.join(res['failedTests'])}")
        if res["failedGpus"]:
            lines.append(f"  failed GPUs: {', '.join(str(g) for g in res['failedGpus'])}")
        lines += [f"  error: {e}" for e in res["errors"][:5]]
    else:
        lines = [f"{path}: training {res['framework'] or '?'}: {res['iterations']} iterations"
                 f" ({res['stepsParsed']} step lines, {res['warmupStepsExcluded']} warmup excluded)",
                 f"  avg step {_fmt(res['avgStepTimeSec'], ' s')}  avg TFLOP/s/GPU {_fmt(res['avgTFLOPsPerGPU'])}"
                 f"  goodput {_fmt(res['goodputRatio'])}  loss NaN {'yes' if res['lossNaN'] else 'no'}"]
    lines += [f"  reason {r['reason']}: {r['message']}" for r in _REASONS[kind](res)]
    return "\n".join(lines)


def parse_file(kind: str, path: str, as_json: bool) -> tuple[str, int]:
    """(text to print, exit code): 0 when parsed (whatever the run's status), 2 with `FILE: reason` otherwise."""
    parser = PARSERS.get(kind)
    if parser is None:
        return f"{path}: unknown log kind {kind!r} (use {', '.join(PARSERS)})", 2
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as err:
        return f"{path}: cannot read: {err.strerror or err}", 2
    res = parser(text)
    if as_json:
        return json.dumps(res, indent=2, allow_nan=False), 0
    return _summary(kind, path, res), 0


__all__ = ["PARSERS", "parse_file"]
