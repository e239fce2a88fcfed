"""Parse training logs: Megatron-LM iteration lines, NeMo 1 (Lightning tqdm) and NeMo 2 progress lines.

Follows `training_log()` in Megatron-LM `megatron/training/training.py` (` iteration  N/  M | key: value | ...`),
NeMo 2's progress printer (`Training epoch E, iteration N/M | key: value | ...`) and NeMo 1's tqdm postfix
(`Epoch E: ... n/total [elapsed<left, key=value, ...]`, `\\r`-separated refreshes).

Warmup: the FIRST logged step line is left out of the averages (compilation, allocator and NCCL warmup make it slow)
whenever more than one step line was read; with a single line, that line is used. A step logged twice (tqdm
refreshes, a re-read stream) keeps its last values. `goodputRatio` here is only an explicit `goodput` figure in the
log (e.g. a goodput-measurement summary); `productiveSec` is the step time the log accounts for (each logged step
time times the iterations since the previous logged line, warmup included: it is work done), so the run step can
compute NVCRE's goodput with the job's wall time (`goodput_ratio`).
"""

from __future__ import annotations

import math
import re
from statistics import mean, median
from typing import Any

_MEGATRON = re.compile(r"\biteration\s+(\d{1,18})\s*/\s*(\d{1,18})\s*\|(.*)$")
_TQDM = re.compile(r"\bEpoch\s+\d+:.*?(\d{1,18})/(\d{1,18})\s*\[[^,\]]*,(.*?)\]?\s*$")
_NUMBER = re.compile(r"[-+]?(?:nan|inf)|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.I)
_GOODPUT = re.compile(r"goodput[\w ()%]*?\s*[:=]\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(%?)", re.I)
_STEP_MS = ("elapsed time per iteration (ms)",)
_STEP_S = ("train_step_timing in s", "train_step_timing", "step_time", "step time (s)", "elapsed time per iteration (s)")
_TFLOPS = ("throughput per gpu (tflop/s/gpu)", "tflops_per_gpu", "tflops/gpu", "tflops per gpu", "tflops",
           "model_tflops_per_gpu")
_LOSS = ("lm loss", "reduced_train_loss", "train_loss", "loss")
WARMUP_STEPS = 1


def _value(raw: str) -> float | None:
    m = _NUMBER.search(raw)
    if not m:
        return None
    try:
        return float(m.group(0))
    except ValueError:
        return None


def _fields(parts: list[str], sep: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in parts:
        key, found, val = part.partition(sep)
        if found:
            out[key.strip().lower()] = val.strip()
    return out


def _pick(fields: dict[str, str], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if key in fields:
            return _value(fields[key])
    return None


def _step(line: str) -> tuple[str, int, int, dict[str, str]] | None:
    """(framework, iteration, total, fields) for a step line, else None."""
    if "iteration" in line and "|" in line:
        m = _MEGATRON.search(line)
        if m:
            fw = "nemo2" if "Training epoch" in line else "megatron"
            return fw, int(m.group(1)), int(m.group(2)), _fields(m.group(3).split("|"), ":")
    if "Epoch" in line and "=" in line:
        m = _TQDM.search(line)
        if m:
            fields = _fields(m.group(3).split(","), "=")
            it = int(m.group(1))
            gs = _value(fields.get("global_step", ""))
            if gs is not None and math.isfinite(gs):
                it = int(gs)
            return "nemo1", it, int(m.group(2)), fields
    return None


# torchrun's ChildFailedError summary: "Root Cause (first observed failure):", then "[0]:" and "  host      : X"
_ROOT_CAUSE = "Root Cause (first observed failure)"
_HOST_FIELD = re.compile(r"^\s*host\s*:\s*([A-Za-z0-9][-A-Za-z0-9_.]*)\s*$")


def _root_cause_hosts(lines: list[str]) -> list[dict[str, str]]:
    """The host(s) torchrun names as the root cause of a failed run, each with its `host :` line."""
    out: list[dict[str, str]] = []
    for i, line in enumerate(lines):
        if _ROOT_CAUSE not in line:
            continue
        for nxt in lines[i + 1:i + 12]:
            m = _HOST_FIELD.match(nxt)
            if m:
                out.append({"host": m.group(1), "line": f"torchrun root cause: {nxt.strip()}"})
                break
    return out


def parse_training(text: str, warmup_steps: int = WARMUP_STEPS) -> dict[str, Any]:
    """Read a training log into a plain dict; never raises on odd input (no step lines → iterations 0)."""
    steps: dict[int, dict[str, Any]] = {}
    frameworks: list[str] = []
    total: int | None = None
    loss_nan_at: int | None = None
    goodput: float | None = None
    for line in text.splitlines():
        if "oodput" in line:
            m = _GOODPUT.search(line)
            if m:
                v = _value(m.group(1))
                if v is not None:
                    v = v / 100.0 if m.group(2) or v > 1.0 else v
                    goodput = v if 0.0 <= v <= 1.0 else goodput
        parsed = _step(line)
        if parsed is None:
            continue
        fw, it, tot, fields = parsed
        if fw not in frameworks:
            frameworks.append(fw)
        total = tot
        ms = _pick(fields, _STEP_MS)
        secs = ms / 1000.0 if ms is not None else _pick(fields, _STEP_S)
        loss = _pick(fields, _LOSS)
        nan_iters = _pick(fields, ("number of nan iterations",))
        if (loss is not None and not math.isfinite(loss)) or (nan_iters or 0) > 0:
            loss_nan_at = it if loss_nan_at is None else loss_nan_at
        steps[it] = {"iteration": it, "stepTimeSec": _finite(secs), "tflopsPerGPU": _finite(_pick(fields, _TFLOPS)),
                     "loss": _finite(loss)}
    ordered = list(steps.values())
    productive: float | None = 0.0 if ordered else None
    previous = 0
    for step in sorted(ordered, key=lambda x: x["iteration"]):
        if step["stepTimeSec"] is None or productive is None:
            productive = None  # a logged step without its time: the productive time is unknown, not smaller
            break
        productive += step["stepTimeSec"] * max(1, step["iteration"] - previous)
        previous = step["iteration"]
    used = ordered[warmup_steps:] if len(ordered) > warmup_steps else ordered
    times = [s["stepTimeSec"] for s in used if s["stepTimeSec"] is not None]
    tflops = [s["tflopsPerGPU"] for s in used if s["tflopsPerGPU"] is not None]
    gaps = [b["iteration"] - a["iteration"] for a, b in zip(ordered, ordered[1:]) if b["iteration"] > a["iteration"]]
    losses = [s["loss"] for s in ordered if s["loss"] is not None]
    return {
        "framework": frameworks[-1] if frameworks else None,
        "iterations": max(steps) if steps else 0,
        "totalIterations": total,
        "stepsParsed": len(ordered),
        "warmupStepsExcluded": len(ordered) - len(used),
        "avgStepTimeSec": mean(times) if times else None,
        "avgTFLOPsPerGPU": mean(tflops) if tflops else None,
        "lossNaN": loss_nan_at is not None,
        "lossNaNAtIteration": loss_nan_at,
        "lastLoss": losses[-1] if losses else None,
        "goodputRatio": goodput,
        "productiveSec": productive,
        "logInterval": int(median(gaps)) if gaps else None,
        "failedHosts": _root_cause_hosts(text.splitlines()) if _ROOT_CAUSE in text else [],
    }


def goodput_ratio(result: dict[str, Any], wall_s: float) -> float | None:
    """NVCRE's runtime goodput, `(t_w - t_ch - t_rm - t_re - t_save) / (t_w - t_re)` (cluster-readiness-engine
    `pkg/goodput/calculator.go`), for one run of our training job: no interruption, reschedule or checkpoint
    (t_ch = t_re = t_save = 0), so it is the productive step time over the wall time since the job was created,
    `t_rm` being everything else (startup, rendezvous, model build, the end). An explicit goodput figure in the log
    wins. None when the log does not say how long its steps took."""
    if result.get("goodputRatio") is not None:
        return float(result["goodputRatio"])
    productive = result.get("productiveSec")
    if productive is None or not wall_s or wall_s <= 0 or not math.isfinite(wall_s):
        return None
    return max(0.0, min(1.0, float(productive) / float(wall_s)))


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def last_step_progress(text: str) -> tuple[int, float | None]:
    """(last iteration reached, average step seconds) for a watcher polling a growing log."""
    res = parse_training(text)
    return res["iterations"], res["avgStepTimeSec"]


def detect_stall(text: str, elapsed_since_last_step_s: float, multiplier: float = 3.0,
                 min_seconds: float = 0.0) -> bool:
    """True when no new step line came for `multiplier` × the expected gap between step lines.

    The expected gap is the average step time times the log interval (Megatron logs every N iterations), so a
    run logging every 10 steps is not called stalled after 3 steps. Before the first timed step there is no
    baseline: never a stall (the run's own deadline covers a hang at startup). `min_seconds` floors the
    threshold for very short steps.
    """
    res = parse_training(text)
    avg = res["avgStepTimeSec"]
    if avg is None or avg <= 0:
        return False
    threshold = max(min_seconds, multiplier * avg * (res["logInterval"] or 1))
    return elapsed_since_last_step_s > threshold


__all__ = ["WARMUP_STEPS", "detect_stall", "goodput_ratio", "last_step_progress", "parse_training"]
