"""Which thresholds apply to one GPU architecture: plain entries for every GPU, a per-GPU key inside `thresholds`
(`a100: {busBandwidthGBps: "value >= 150"}`) for that GPU only, winning key by key.

Pure. A minimal version (branch `arch`): explicit thresholds only; profiles are another branch's work, behind the
same signature.
"""

from __future__ import annotations

from typing import Any

from nvcre_hera.catalog import gpu_architectures


def select_thresholds(options: dict, gpu: str) -> tuple[dict[str, str], dict[str, dict]]:
    """(metric -> CEL expression, metric -> its source `{kind, gpu?}`) for GPU architecture `gpu` (h100, a100...;
    "" or unknown: the plain entries only)."""
    raw: dict[str, Any] = dict(options.get("thresholds") or {})
    archs = set(gpu_architectures())
    out: dict[str, str] = {}
    sources: dict[str, dict] = {}
    for metric, expr in raw.items():
        if isinstance(expr, str):
            out[metric] = expr
            sources[metric] = {"kind": "explicit"}
    own = raw.get(gpu) if gpu in archs else None
    for metric, expr in (own or {}).items() if isinstance(own, dict) else ():
        out[metric] = str(expr)
        sources[metric] = {"kind": "explicit", "gpu": gpu}
    return out, sources


__all__ = ["select_thresholds"]
