"""Threshold profiles: per-GPU floors as data (`catalog/_lib/thresholds/<gpu>.yaml`), or a user's profile file.

A profile (kind ThresholdProfile) names one GPU and, per catalog category (`domain/variant`) and testScale, a rule per
metric: a healthy `figure` with its `source`, turned into a floor at `fraction` of it (`value >= fraction*figure`;
for a lower-is-better metric such as avgStepTimeSec the ceiling `value <= figure/fraction`), or an explicit `floor`
/ `ceiling`. `none known` (at category, scale or metric level) sets no floor: a profile only holds sourced figures.
A scale key `<scale>+mnnvl` (e.g. `intra-rack+mnnvl`) is used instead of `<scale>` when the category sets
enableMNNVL. The file `nvcre baseline` writes (a Certification fragment) loads as a profile too: its rules have kind
`baseline`. Loading reads files (thin I/O); `category_rules` narrows a loaded profile set to one category and scale.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from nvcre_hera.catalog import catalog_dir, gpu_architectures
from nvcre_hera.errors import InputError
from nvcre_hera.threshold_select import ANY_GPU

DEFAULT_PROFILE = "default"
NONE_KNOWN = "none known"
_RULE_FIELDS = {"figure", "fraction", "floor", "ceiling", "source", "note"}

# normalized: {gpu: {category key: {scale key: {metric: {"expression", "kind", "from"}}}}}
Profiles = dict[str, dict[str, dict[str, dict[str, dict[str, str]]]]]


def profile_dir() -> Path:
    return catalog_dir() / "_lib" / "thresholds"


def lower_is_better(metric: str) -> bool:
    from nvcre_hera.judge import lower_is_better as judged  # the judge's own rule (times, latencies, counts)

    return judged(metric)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InputError(f"expected a positive number, got {value!r}", where)
    return float(value)


def _rule(metric: str, raw: Any, fraction: float, where: str, file: str) -> dict[str, str] | None:
    """One metric's rule as {"expression", "kind", "from"}; None for `none known`."""
    from nvcre_hera.thresholds import check_threshold

    if raw == NONE_KNOWN:
        return None
    if not isinstance(raw, dict):
        raise InputError(f"expected a rule (figure + source, or floor/ceiling + source) or {NONE_KNOWN!r}", where)
    unknown = sorted(set(raw) - _RULE_FIELDS)
    if unknown:
        raise InputError(f"unknown field (allowed: {', '.join(sorted(_RULE_FIELDS))})", f"{where}.{unknown[0]}")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise InputError("every floor needs its source (URL and the figure it gives)", f"{where}.source")
    frac = _number(raw["fraction"], f"{where}.fraction") if "fraction" in raw else fraction
    if "floor" in raw or "ceiling" in raw:
        bound = "floor" if "floor" in raw else "ceiling"
        value = _number(raw[bound], f"{where}.{bound}")
        expr = f"value {'>=' if bound == 'floor' else '<='} {value:.1f}"
        how = f"{bound} {value:g}"
    elif "figure" in raw:
        figure = _number(raw["figure"], f"{where}.figure")
        if lower_is_better(metric):
            expr, how = f"value <= {figure / frac:.1f}", f"{figure:g} / {frac:g}"
        else:
            expr, how = f"value >= {figure * frac:.1f}", f"{frac:g} x {figure:g}"
    else:
        raise InputError("a rule needs figure (with the profile's fraction), floor or ceiling", where)
    try:
        check_threshold(metric, expr)
    except ValueError as exc:
        raise InputError(str(exc), where) from None
    return {"expression": expr, "kind": "profile", "from": f"{file}: {how}: {source.strip()}"}


def _parse_profile(data: Any, file: str) -> tuple[str, dict]:
    """A ThresholdProfile document: (gpu, {category: {scale: {metric: rule}}})."""
    gpus = gpu_architectures()
    gpu = data.get("gpu")
    if gpu not in gpus:
        raise InputError(f"gpu must be one of {', '.join(gpus)} (got {gpu!r})", f"{file}: gpu")
    fraction = _number(data.get("fraction"), f"{file}: fraction")
    if fraction > 1:
        raise InputError(f"fraction {fraction:g} is above 1: a floor is below the healthy figure", f"{file}: fraction")
    categories = data.get("categories")
    if not isinstance(categories, dict):
        raise InputError("expected a mapping of domain/variant to scales", f"{file}: categories")
    from typing import get_args

    from nvcre_hera.api import TestScale
    from nvcre_hera.catalog import load_catalog

    known, scale_names = load_catalog(), [*get_args(TestScale), *(f"{s}+mnnvl" for s in get_args(TestScale))]
    out: dict = {}
    for key, scales in categories.items():
        where = f"{file}: categories.{key}"
        if key not in known:
            raise InputError(f"unknown category {key!r} (known: {', '.join(sorted(known))})", where)
        out[key] = {}
        if scales == NONE_KNOWN:
            continue
        if not isinstance(scales, dict):
            raise InputError(f"expected a mapping of testScale to metrics, or {NONE_KNOWN!r}", where)
        for scale, metrics in scales.items():
            if scale not in scale_names:
                raise InputError(f"unknown testScale {scale!r} (known: {', '.join(scale_names)})", f"{where}.{scale}")
            out[key][scale] = {}
            if metrics == NONE_KNOWN:
                continue
            if not isinstance(metrics, dict):
                raise InputError(f"expected a mapping of metric to rule, or {NONE_KNOWN!r}", f"{where}.{scale}")
            for metric, raw in metrics.items():
                if metric not in known[key].metrics:
                    raise InputError(f"{key} does not produce metric {metric!r} (it produces: "
                                     f"{', '.join(known[key].metrics)})", f"{where}.{scale}.{metric}")
                rule = _rule(metric, raw, fraction, f"{where}.{scale}.{metric}", file)
                if rule:
                    out[key][scale][metric] = rule
    return gpu, out


def _parse_baseline(data: Any, file: str) -> Profiles:
    """The Certification fragment `nvcre baseline` writes, as a profile: per GPU key (or any GPU), kind baseline."""
    gpus = set(gpu_architectures())
    cats = ((data.get("spec") or {}).get("categories")) if isinstance(data.get("spec"), dict) else None
    if not isinstance(cats, list):
        raise InputError("a baseline file needs spec.categories (as `nvcre baseline` writes it)", f"{file}: spec")
    import json

    out: Profiles = {}
    try:  # what the run was, for the sources: `nvcre baseline` records it in an annotation
        record = json.loads(((data.get("metadata") or {}).get("annotations") or {}).get("nvcre-hera.dev/baseline"))
        origin = (f" (baseline of {record.get('report')}, certification {record.get('certification')}, "
                  f"generatedAt {record.get('generatedAt')}, {record.get('fraction')} x the worst group)")
    except (TypeError, ValueError, AttributeError):
        origin = ""
    for i, cat in enumerate(cats):
        where = f"{file}: spec.categories[{i}]"
        if not isinstance(cat, dict) or not cat.get("domain") or not cat.get("variant"):
            raise InputError("expected domain and variant", where)
        opts = cat.get("options") or {}
        scale = (opts.get("testScale") or "full-scale") + ("+mnnvl" if opts.get("enableMNNVL") else "")
        key = f"{cat['domain']}/{cat['variant']}"
        for name, value in (opts.get("thresholds") or {}).items():
            gpu, metrics = (name, value) if isinstance(value, dict) else (ANY_GPU, {name: value})
            if isinstance(value, dict) and name not in gpus:
                raise InputError(f"unknown GPU architecture {name!r} (known: {', '.join(sorted(gpus))})",
                                 f"{where}.options.thresholds.{name}")
            for metric, expr in metrics.items():
                from nvcre_hera.thresholds import check_threshold

                try:
                    check_threshold(metric, str(expr))
                except ValueError as exc:
                    raise InputError(str(exc), f"{where}.options.thresholds.{name}") from None
                rule = {"expression": str(expr), "kind": "baseline", "from": f"{file}: {key} {scale} {metric}{origin}"}
                out.setdefault(gpu, {}).setdefault(key, {}).setdefault(scale, {})[metric] = rule
    return out


def _read(path: Path, where: str) -> Any:
    from nvcre_hera.safe_yaml import parse_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read threshold profile {str(path)!r}: {getattr(exc, 'strerror', None) or exc}",
                         where) from None
    data = parse_yaml(text, str(path))
    if not isinstance(data, dict):
        raise InputError("a threshold profile must be a YAML mapping", str(path))
    return data


def load_profile_file(path: Path, where: str) -> Profiles:
    """A user's profile file: a ThresholdProfile, or a baseline fragment from `nvcre baseline`."""
    data = _read(path, where)
    if data.get("kind") == "ThresholdProfile":
        gpu, rules = _parse_profile(data, str(path))
        return {gpu: rules}
    if data.get("kind") == "Certification":
        return _parse_baseline(data, str(path))
    raise InputError("a threshold profile is kind ThresholdProfile (catalog/_lib/thresholds/*.yaml) or the "
                     f"Certification fragment `nvcre baseline` writes (got kind {data.get('kind')!r})",
                     f"{path}: kind")


@functools.lru_cache(maxsize=1)
def default_profiles() -> Profiles:
    """Every catalog profile, keyed by its GPU."""
    out: Profiles = {}
    for path in sorted(profile_dir().glob("*.yaml")):
        rel = f"catalog/_lib/thresholds/{path.name}"
        gpu, rules = _parse_profile(_read(path, rel), rel)
        if gpu in out:
            raise InputError(f"a second profile for {gpu}", rel)
        out[gpu] = rules
    return out


def load_profiles(name: str, base: Path, where: str) -> Profiles:
    """`default` (the catalog's) or a file, relative to the Certification's folder."""
    if name == DEFAULT_PROFILE:
        return default_profiles()
    path = Path(name)
    return load_profile_file(path if path.is_absolute() else base / path, where)


def category_rules(profiles: Profiles, key: str, scale: str, mnnvl: bool) -> dict[str, dict[str, dict[str, str]]]:
    """{gpu: {metric: rule}} for one category and scale (`<scale>+mnnvl` first when enableMNNVL); {} for a GPU
    whose profile has no sourced floor there."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for gpu, cats in profiles.items():
        scales = cats.get(key) or {}
        rules = scales.get(f"{scale}+mnnvl") if mnnvl and f"{scale}+mnnvl" in scales else scales.get(scale)
        out[gpu] = dict(rules or {})
    return out


__all__ = [
    "ANY_GPU",
    "DEFAULT_PROFILE",
    "NONE_KNOWN",
    "Profiles",
    "category_rules",
    "default_profiles",
    "load_profile_file",
    "load_profiles",
    "lower_is_better",
    "profile_dir",
]
