"""Load a Certification file and resolve each category's options (global → category → catalog defaults).

Every problem becomes one `InputError` line naming the file and the field path
(`cert.yaml: spec.categories[1].options.maxBytes: '16 GB' is not a byte size …`).
"""

from __future__ import annotations

import difflib
import functools
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from nvcre_hera.api import OPTION_FIELDS, Category, CategoryOptions, Certification
from nvcre_hera.catalog import CatalogEntry, get_entry, load_catalog
from nvcre_hera.cluster.base import DEFAULT_SCHEDULING_TIMEOUT
from nvcre_hera.errors import InputError
from nvcre_hera.safe_yaml import parse_yaml

# Defaults NVCRE documents for Certification options (nvcre-and-peers.md §1.2); arch-dependent ones stay None
# here and are resolved at run time, once discovery knows the GPU (gpusPerNode, mlnxPerNode, maxBytes).
OPTION_DEFAULTS: dict[str, Any] = {
    "testScale": "full-scale",
    "numIterations": 100,
    "numCycles": 10,
    "maxConcurrent": 0,
    "minGroupSize": 2,
    "measurementTimeout": "5m",
    "schedulingTimeout": DEFAULT_SCHEDULING_TIMEOUT,
    "repeatCount": 1,
    "startupStallTimeoutSeconds": 1200,
    "enableMNNVL": False,
    "maxSteps": 50,
    "exitDurationMins": 30,
    "diagnoseStrategy": "adaptive",
    "diagnoseScreens": ["loopback", "intra"],
    "transportCheck": True,
    "rdmaDeviceAccess": "devicePlugin",
}
DIAGNOSE_TIMEOUT = "15m"
TRAINING_RESOURCES = {"limits": {"cpu": "128", "memory": "800Gi"}, "requests": {"cpu": "64", "memory": "500Gi"}}


@dataclass(frozen=True)
class ResolvedCategory:
    """One category with its catalog entry and effective options (camelCase keys, defaults applied)."""

    index: int
    entry: CatalogEntry
    options: dict[str, Any]

    @property
    def key(self) -> str:
        return self.entry.key

    @property
    def thresholds(self) -> dict[str, Any]:
        """As written: plain {metric: CEL} keys and per-GPU {gpu: {metric: CEL}} blocks."""
        return dict(self.options.get("thresholds") or {})


# pydantic's internal union/validator branch names in an error's location: noise to a user. Matched exactly (or by
# their bracketed prefix) so a user's own key such as `strength` or `intBW` is never dropped from the path.
_BRANCH_TAGS = frozenset({"str", "int", "bool", "float", "none", "list", "dict", "[key]"})
_BRANCH_PREFIXES = ("function-", "literal[", "union[", "tagged-union[")


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _BRANCH_TAGS or str(part).startswith(_BRANCH_PREFIXES):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def _format_error(err: dict[str, Any]) -> str:
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind.endswith("_type") or kind in ("literal_error", "enum"):
        return f"{msg} (got {err.get('input')!r})"
    return msg


def _model_classes(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, unions, lists and dict values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out.extend(_model_classes(arg))
    return out


def _field_names_at(model: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    """The YAML (alias) names of the fields allowed at `loc` under `model`; [] when the path cannot be followed."""
    models = [model]
    for part in loc:
        if isinstance(part, int) or part in _BRANCH_TAGS or str(part).startswith(_BRANCH_PREFIXES):
            continue
        nxt: list[type[BaseModel]] = []
        for m in models:
            for name, field in m.model_fields.items():
                if part in (name, field.alias):
                    nxt.extend(_model_classes(field.annotation))
        if not nxt:
            return []
        models = nxt
    return sorted({field.alias or name for m in models for name, field in m.model_fields.items()})


def unknown_field_hint(model: type[BaseModel], loc: Sequence[Any]) -> str:
    """` (did you mean 'maxBytes'?)` for a misspelled field, from the fields allowed beside it; else ''."""
    if not loc or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], _field_names_at(model, loc[:-1]), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def from_validation_error(exc: ValidationError, source: str, model: type[BaseModel] | None = None) -> InputError:
    errors = exc.errors()
    # A misspelled field is also a missing one: name the typo (`schedulerNme: unknown field`), not the omission.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    path = _format_loc(tuple(err["loc"]))
    message = _format_error(err)
    if err["type"] == "extra_forbidden" and model is not None:
        message += unknown_field_hint(model, tuple(err["loc"]))
    return InputError(message, f"{source}: {path}" if path else source)


def parse_certification(text: str, source: str = "<certification>") -> Certification:
    data = parse_yaml(text, source)
    if not isinstance(data, dict):
        raise InputError("a Certification must be a YAML mapping", source)
    if data.get("kind") == "WorkloadRun":  # one workload without the catalog: a one-category Certification
        return _workloadrun(data, source)
    if data.get("kind") == "SimulatedCluster":
        raise InputError("this is a SimulatedCluster file (a simulated cluster), not a Certification: pass it as "
                         "--cluster FILE and the Certification as the first argument", f"{source}: kind")
    if "kind" in data and data["kind"] != "Certification":
        raise InputError(f"{data['kind']!r} is neither Certification nor WorkloadRun", f"{source}: kind")
    try:
        cert = Certification.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, source, Certification) from None
    # Cross-field checks run at load time, so `validate` and `compile` catch them; the result is kept.
    cert._resolved = resolve_categories(cert, source)
    return cert


def _workloadrun(data: dict, source: str) -> Certification:
    """A WorkloadRun (docs/workloadrun.md) with its one category resolved, like a Certification's."""
    from nvcre_hera.workloadrun import convert  # only WorkloadRun files pay for it
    from nvcre_hera.workloadrun.model import WorkloadRun

    try:
        run = WorkloadRun.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, source, WorkloadRun) from None
    entry = convert.workload_entry(run, source)
    options = {**OPTION_DEFAULTS, **convert.workload_options(run.spec, entry)}
    check_thresholds(options["thresholds"], entry, f"{source}: spec.thresholds")
    cert = convert.workload_certification(run)
    cert._resolved = [ResolvedCategory(index=0, entry=entry, options=options)]
    return cert


def load_certification(path: str | Path) -> Certification:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {getattr(exc, 'strerror', None) or exc}", source) from None
    return parse_certification(text, source)


def _set_fields(options: CategoryOptions | None) -> dict[str, Any]:
    """The fields a user actually wrote, by their YAML (camelCase) names."""
    if options is None:
        return {}
    dumped = options.model_dump(by_alias=True, exclude_none=True, mode="json")
    names = {CategoryOptions.model_fields[f].alias or f for f in options.model_fields_set}
    return {k: v for k, v in dumped.items() if k in names}


def global_options(cert: Certification, source: str = "<certification>") -> dict[str, Any]:
    """Options inlined under `spec` (NVCRE) merged with `spec.options` (announcement); both ways is an error."""
    spec = cert.spec
    inline_names = {CategoryOptions.model_fields[f].alias or f for f in spec.model_fields_set if f in OPTION_FIELDS}
    dumped = spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    inline = {k: v for k, v in dumped.items() if k in inline_names}
    nested = _set_fields(spec.options)
    for key in sorted(set(inline) & set(nested)):
        raise InputError(f"given both as spec.{key} and spec.options.{key}; set it once", f"{source}: spec.{key}")
    return {**inline, **nested}


def merge_options(global_opts: dict[str, Any], category_opts: dict[str, Any]) -> dict[str, Any]:
    """Field by field; `workloadMetadata.labels` merge key by key; `resources` replaces whole (as NVCRE does)."""
    merged = {**global_opts, **category_opts}
    g_labels = (global_opts.get("workloadMetadata") or {}).get("labels") or {}
    c_labels = (category_opts.get("workloadMetadata") or {}).get("labels") or {}
    if g_labels or c_labels:
        merged["workloadMetadata"] = {"labels": {**g_labels, **c_labels}}
    return merged


def _entry_for(cat: Category, index: int, source: str) -> CatalogEntry:
    try:
        return get_entry(cat.domain, cat.variant)
    except KeyError:
        known = sorted(load_catalog())
        domains = sorted({k.split("/")[0] for k in known})
        if cat.domain not in domains:
            raise InputError(f"unknown domain {cat.domain!r} (known: {', '.join(domains)})",
                             f"{source}: spec.categories[{index}].domain") from None
        variants = [k.split("/")[1] for k in known if k.startswith(cat.domain + "/")]
        raise InputError(f"unknown variant {cat.variant!r} for domain {cat.domain} (known: {', '.join(variants)})",
                         f"{source}: spec.categories[{index}].variant") from None


@functools.lru_cache(maxsize=1024)
def _threshold_problem(metric: str, expr: str) -> str | None:
    from nvcre_hera.thresholds import check_threshold

    try:
        check_threshold(metric, expr)
    except ValueError as exc:
        return str(exc)
    return None


def _flat(thresholds: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(path under thresholds, metric, CEL) for plain keys and per-GPU blocks alike."""
    out = []
    for key, value in thresholds.items():
        if isinstance(value, dict):
            out.extend((f"{key}.{m}", m, e) for m, e in value.items())
        else:
            out.append((key, key, value))
    return out


def _check_gpu_keys(thresholds: dict[str, Any], where: str) -> None:
    """A mapping under `thresholds` is a per-GPU block and must name a known architecture; a GPU key holds a block."""
    from nvcre_hera.catalog import gpu_architectures

    gpus = gpu_architectures()
    for key, value in thresholds.items():
        if isinstance(value, dict) and key not in gpus:
            raise InputError(f"unknown GPU architecture {key!r} for a per-GPU threshold block (known: "
                             f"{', '.join(gpus)})", f"{where}.{key}")
        if not isinstance(value, dict) and key in gpus:
            raise InputError(f"{key} is a GPU architecture: it holds {{metric: CEL}} for that GPU, e.g. "
                             f"{key}: {{busBandwidthGBps: \"value >= 300\"}}", f"{where}.{key}")


def check_thresholds(thresholds: dict[str, Any], entry: CatalogEntry, where: str) -> None:
    _check_gpu_keys(thresholds, where)
    for path, metric, expr in _flat(thresholds):
        if metric not in entry.metrics:
            raise InputError(f"{entry.key} does not produce metric {metric!r} (it produces: "
                             f"{', '.join(entry.metrics)})", f"{where}.{path}")
        problem = _threshold_problem(metric, expr)
        if problem:
            raise InputError(problem, f"{where}.{path}")


def _check_diagnose_thresholds(thresholds: dict[str, Any], where: str) -> None:
    """Diagnose judges from a pass line and the lowest/highest job: only an interval threshold can be applied
    exactly (see threshold_bounds); anything else is refused here rather than dropped at run time."""
    from nvcre_hera.threshold_bounds import threshold_bounds
    from nvcre_hera.thresholds import compile_threshold

    for path, _metric, expr in _flat(thresholds):
        try:
            fleet_relative = compile_threshold(expr).uses_fleet
        except ValueError:
            fleet_relative = False  # a global threshold not checked yet: its own check names the problem
        if fleet_relative:
            raise InputError(f"{expr!r} is fleet-relative, which testScale diagnose cannot apply: its planner needs a "
                             f"pass line before any job runs; give a number, e.g. value >= 300.0", f"{where}.{path}")
        try:
            threshold_bounds(expr)
        except ValueError as exc:
            raise InputError(f"{expr!r} cannot be applied by testScale diagnose: {exc}", f"{where}.{path}") from None


def _for_entry(thresholds: dict[str, Any], entry: CatalogEntry) -> dict[str, Any]:
    """The global thresholds a category inherits: the metrics it produces, in plain keys and per-GPU blocks."""
    out: dict[str, Any] = {}
    for key, value in thresholds.items():
        if isinstance(value, dict):
            block = {m: e for m, e in value.items() if m in entry.metrics}
            if block:
                out[key] = block
        elif key in entry.metrics:
            out[key] = value
    return out


def _apply_profile(options: dict[str, Any], entry: CatalogEntry, where: str, thresholds_at: str, base: Path) -> None:
    """`thresholdProfile`: this category's rules for every GPU, and where the explicit thresholds were written."""
    from nvcre_hera.threshold_profiles import category_rules, load_profiles
    from nvcre_hera.threshold_select import PROFILE_KEY, THRESHOLDS_FROM_KEY

    profiles = load_profiles(options["thresholdProfile"], base, where)
    rules = category_rules(profiles, entry.key, options["testScale"], bool(options.get("enableMNNVL")))
    for gpu, metrics in rules.items():
        for metric, rule in metrics.items():
            if metric not in entry.metrics:
                raise InputError(f"{entry.key} does not produce metric {metric!r} (it produces: "
                                 f"{', '.join(entry.metrics)})", f"{rule['from'].split(':')[0]}: {gpu} {metric}")
        if options["testScale"] == "diagnose":
            _check_diagnose_thresholds({m: r["expression"] for m, r in metrics.items()}, where)
    options[PROFILE_KEY] = rules
    options[THRESHOLDS_FROM_KEY] = thresholds_at


def effective_test_scale(entry: CatalogEntry, requested: str) -> str:
    """Per-node entries always run one job per node; training runs full-scale groups; NCCL entries honour testScale."""
    if entry.scope == "per-node":
        return "intra-node"
    if requested not in entry.test_scales:
        return entry.test_scales[0] if entry.domain != "communication" else requested
    return requested


def resolve_categories(cert: Certification, source: str = "<certification>") -> list[ResolvedCategory]:
    if cert._resolved is not None:
        return list(cert._resolved)
    glob = global_options(cert, source)
    global_thresholds = glob.pop("thresholds", None) or {}
    resolved: list[ResolvedCategory] = []
    produced_metrics: set[str] = set()
    for index, cat in enumerate(cert.spec.categories):
        entry = _entry_for(cat, index, source)
        own = _set_fields(cat.options)
        where = f"{source}: spec.categories[{index}].options"
        if "testScale" in own and own["testScale"] not in entry.test_scales:
            raise InputError(f"{entry.key} does not support testScale {own['testScale']} (supported: "
                             f"{', '.join(entry.test_scales)})", f"{where}.testScale")
        if "thresholds" in own:
            check_thresholds(own["thresholds"], entry, f"{where}.thresholds")
            thresholds = own["thresholds"]
        else:  # a global threshold applies to every category that produces its metric
            thresholds = _for_entry(global_thresholds, entry)
        produced_metrics |= set(entry.metrics)
        options = {**OPTION_DEFAULTS, **entry.defaults.model_dump(by_alias=True, exclude_none=True),
                   **merge_options(glob, own)}
        options["thresholds"] = thresholds
        options["testScale"] = effective_test_scale(entry, options["testScale"])
        if options["testScale"] == "diagnose":
            _check_diagnose_thresholds(thresholds, f"{where}.thresholds" if "thresholds" in own else
                                       f"{source}: spec.options.thresholds" if "thresholds" in _set_fields(
                                           cert.spec.options) else f"{source}: spec.thresholds")
        if options.get("thresholdProfile"):
            thresholds_at = (f"{where}.thresholds" if "thresholds" in own else f"{_global_where(cert, source)}")
            profile_at = (f"{where}.thresholdProfile" if "thresholdProfile" in own else
                          _global_where(cert, source, "thresholdProfile"))
            _apply_profile(options, entry, profile_at, thresholds_at, _base_dir(source))
        if options["testScale"] == "diagnose" and "timeoutPerJob" not in {**glob, **own}:
            options["timeoutPerJob"] = DIAGNOSE_TIMEOUT
        if entry.domain == "training" and "resources" not in options:
            options["resources"] = TRAINING_RESOURCES
        resolved.append(ResolvedCategory(index=index, entry=entry, options=options))
    where = _global_where(cert, source)
    _check_gpu_keys(global_thresholds, where)
    for path, metric, expr in _flat(global_thresholds):
        # A category with its own thresholds replaces the global ones whole; that does not make the metric unknown.
        if metric not in produced_metrics:
            raise InputError(f"no category produces metric {metric!r}", f"{where}.{path}")
        problem = _threshold_problem(metric, expr)
        if problem:
            raise InputError(problem, f"{where}.{path}")
    return resolved


def _global_where(cert: Certification, source: str, field: str = "thresholds") -> str:
    """`cert.yaml: spec.thresholds` or `cert.yaml: spec.options.thresholds`, wherever the user wrote it."""
    return f"{source}: spec.options.{field}" if field in _set_fields(cert.spec.options) else f"{source}: spec.{field}"


def _base_dir(source: str) -> Path:
    """A profile file's path is relative to the Certification's folder (the working directory for stdin)."""
    path = Path(source)
    return path.parent if source and not source.startswith("<") else Path(".")


__all__ = [
    "OPTION_DEFAULTS",
    "ResolvedCategory",
    "check_thresholds",
    "effective_test_scale",
    "from_validation_error",
    "global_options",
    "load_certification",
    "merge_options",
    "parse_certification",
    "parse_yaml",
    "resolve_categories",
]
