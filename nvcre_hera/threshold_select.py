"""Which thresholds judge a category on a GPU: the profile's floors, then the explicit thresholds key by key.

The GPU is known only at run time (discover), so the compiled plan carries, per category, the explicit thresholds
as written (plain `{metric: CEL}` keys and per-GPU `{gpu: {metric: CEL}}` keys) and, when `thresholdProfile` is set,
the profile's rules for this category and scale for every GPU the profile knows (`PROFILE_KEY`, filled by
`nvcre_hera.threshold_profiles` at load time). Precedence for GPU g and metric m, highest first:

1. `thresholds.<g>.<m>` (explicit, for that GPU only),
2. `thresholds.<m>` (explicit, any GPU),
3. the profile's rule for (g, category, scale, m).

A GPU the profile does not know (or `unknown`) gets no profile floor: its metrics are then judged by the explicit
thresholds alone, or recorded and not judged, as without a profile. Pure functions over the plan's options dict.
"""

from __future__ import annotations

from typing import Any

# Options keys the loader adds when `thresholdProfile` is set (absent otherwise, so plans without one are unchanged).
ANY_GPU = "*"  # rules of a baseline measured on an unknown GPU: they apply whatever GPU is found
PROFILE_KEY = "profileThresholds"  # {gpu: {metric: {"expression", "kind", "from"}}}
THRESHOLDS_FROM_KEY = "thresholdsFrom"  # where the explicit thresholds were written (file: spec path)


def select_thresholds(options: dict[str, Any], gpu: str) -> tuple[dict[str, str], dict[str, dict]]:
    """(thresholds {metric: CEL}, sources {metric: {"kind": explicit|profile|baseline, "from": where}}) for one
    category's options on one GPU architecture (h100, gb300, ..., or unknown)."""
    gpu = (gpu or "unknown").lower()
    thresholds: dict[str, str] = {}
    sources: dict[str, dict] = {}
    profile = options.get(PROFILE_KEY) or {}
    for metric, rule in (profile.get(gpu, profile.get(ANY_GPU)) or {}).items():
        thresholds[metric] = str(rule["expression"])
        # `gpu`: it holds for this GPU only (a plain explicit threshold holds for every GPU)
        sources[metric] = {"kind": str(rule.get("kind") or "profile"), "from": str(rule.get("from") or ""),
                           **({"gpu": gpu} if gpu in profile else {})}
    where = str(options.get(THRESHOLDS_FROM_KEY) or "thresholds")
    written = options.get("thresholds") or {}
    for metric, expr in written.items():
        if isinstance(expr, str):
            thresholds[metric] = expr
            sources[metric] = {"kind": "explicit", "from": f"{where}.{metric}"}
    own = written.get(gpu)
    if isinstance(own, dict):
        for metric, expr in own.items():
            thresholds[metric] = expr
            sources[metric] = {"kind": "explicit", "from": f"{where}.{gpu}.{metric}", "gpu": gpu}
    return thresholds, sources


def threshold_metrics(options: dict[str, Any]) -> list[str]:
    """Every metric a threshold may judge in this category on some GPU (explicit, per-GPU or profile): what a step
    that runs before the GPU is known to it (diagnose's test step) must keep the measurements of."""
    written = options.get("thresholds") or {}
    names = {m for m, e in written.items() if isinstance(e, str)}
    names.update(m for e in written.values() if isinstance(e, dict) for m in e)
    names.update(m for rules in (options.get(PROFILE_KEY) or {}).values() for m in rules)
    return sorted(names)


def profile_unknown_gpu(options: dict[str, Any], gpu: str) -> bool:
    """A thresholdProfile is set and knows nothing of this GPU: the category cannot be judged as asked (INCOMPLETE,
    never a pass on "no thresholds"), unlike a profile that knows the GPU and has no sourced floor ("none known")."""
    profile = options.get(PROFILE_KEY)
    if not options.get("thresholdProfile") or profile is None:
        return False
    return (gpu or "unknown").lower() not in profile and ANY_GPU not in profile


def profile_notice(options: dict[str, Any], gpu: str) -> str | None:
    """Why a category with a profile got no floor from it on this GPU, or None."""
    profile = options.get(PROFILE_KEY)
    if not options.get("thresholdProfile") or profile is None:
        return None
    gpu = (gpu or "unknown").lower()
    if gpu not in profile and ANY_GPU not in profile:
        return (f"thresholdProfile {options['thresholdProfile']}: no profile for GPU {gpu} (it has: "
                f"{', '.join(sorted(profile)) or 'none'}), so this category is not judged as asked: give thresholds "
                f"for {gpu} (thresholds.{gpu}.<metric>) or a baseline of a run on it (nvcre baseline)")
    if not profile.get(gpu, profile.get(ANY_GPU)):
        return (f"thresholdProfile {options['thresholdProfile']}: no sourced floor for this category and scale on "
                f"{gpu} (none known)")
    return None


__all__ = ["ANY_GPU", "PROFILE_KEY", "THRESHOLDS_FROM_KEY", "profile_notice", "profile_unknown_gpu",
           "select_thresholds", "threshold_metrics"]
