"""The `nvcre parse nccl|dcgm|training FILE [--json]` helper: read a file, parse it, format it for a terminal.

Kept free of argparse so the lead's CLI wires it in one line and tests call it directly.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .dcgm import parse_dcgm
from .nccl import is_nccl_tests_log, parse_nccl
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


def not_a_log(kind: str, text: str, res: dict[str, Any]) -> str | None:
    """Why `text` is not a log of `kind` at all (None when it is one, whatever its run did)."""
    if kind == "nccl" and not is_nccl_tests_log(text):
        return ("not an nccl-tests log: no result row, `#` header or footer, NCCL INFO/WARN line or "
                "`Test … failure` line")
    if kind == "dcgm" and not (res.get("format") or res.get("tests") or res.get("version") or res.get("errors")):
        return "not a dcgmi diag log: no diagnostic table, JSON result or dcgmi error line"
    if kind == "training" and not (res.get("framework") or res.get("stepsParsed")):
        return "not a training log: no Megatron-LM or NeMo iteration line"
    return None


def parse_file(kind: str, path: str, as_json: bool) -> tuple[str, int]:
    """(text to print, exit code): 0 when the log shows a complete, passing run; 1 when it shows a failed or
    incomplete one (any reason); 2 with `FILE: reason` when it cannot be read or is not a log of that kind."""
    parser = PARSERS.get(kind)
    if parser is None:
        return f"{path}: unknown log kind {kind!r} (use {', '.join(PARSERS)})", 2
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as err:
        return f"{path}: cannot read: {err.strerror or err}", 2
    res = parser(text)
    why = not_a_log(kind, text, res)
    if why is not None:
        return f"{path}: {why}", 2
    code = 1 if _REASONS[kind](res) else 0
    if as_json:
        return json.dumps(res, indent=2, allow_nan=False), code
    return _summary(kind, path, res), code


__all__ = ["PARSERS", "not_a_log", "parse_file"]
