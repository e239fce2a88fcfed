"""The catalog: what each category runs, read from `catalog/<domain>/<variant>.yaml` (data, not code).

Shared fragments in `catalog/_lib/`: per-GPU defaults and per-platform NCCL environment. Adding a category means
adding a file. The directory is found through `NVCRE_CATALOG_DIR` (the step image sets it) or next to the package.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from nvcre_hera.errors import InputError

Framework = Literal["mpi", "torch", "exec"]
Scope = Literal["per-node", "per-group"]
# "workload": a WorkloadRun without a measurement; its parser "exit" judges by the exit code alone.
TestKind = Literal["all_reduce", "all_gather", "alltoall", "loopback", "loopback_nvswitch", "dcgm_diag", "training",
                   "workload"]

ADHOC_DOMAIN = "workloadrun"  # entries built from a WorkloadRun, not read from catalog/ (no such folder there)
# Placeholders an entry's args and env may use; everything else in braces is an error at load time.
PLACEHOLDERS = frozenset(
    {"minBytes", "maxBytes", "numIterations", "numCycles", "gpusPerNode", "numNodes", "maxSteps", "exitDurationMins",
     "enableMNNVL", "tensorParallel", "globalBatchSize", "megatronDir"}
)
CLONED_CODE_DIR = "/workspace/megatron-lm"  # where workers clone `sourceRepo`; {megatronDir} then points here
DEFAULT_SSHD = "/usr/sbin/sshd"  # mpi-operator v0.8 sets this itself on an empty worker (mpi_job_controller.go L1504)


class EntryDefaults(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    timeout_per_job: str = Field("1h", alias="timeoutPerJob")
    measurement_timeout: str = Field("5m", alias="measurementTimeout")
    max_steps: int | None = Field(None, alias="maxSteps")
    exit_duration_mins: int | None = Field(None, alias="exitDurationMins")


class CatalogEntry(BaseModel):
    """One catalog file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    domain: str
    variant: str
    description: str
    framework: Framework
    test: TestKind
    scope: Scope
    parser: Literal["nccl", "dcgm", "training", "exit"]
    image: str
    command: list[str]
    args: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    metrics: list[str]
    test_scales: list[str] = Field(alias="testScales")
    min_gpus: int | None = Field(None, alias="minGPUs")
    defaults: EntryDefaults = Field(default_factory=EntryDefaults)
    # mpi framework: the launcher's mpirun and extra mpirun arguments after the platform's (WorkloadRun mpirunPath,
    # mpiArgs); argv elements, never a shell line
    mpirun: str = "mpirun"
    mpi_args: list[str] = Field(default_factory=list, alias="mpiArgs")
    # Facts about the image (docs/workload-facts.md) that a Certification may override where they are unverified:
    # the workers' sshd (mpi/torch, option sshdPath) and where the image holds Megatron-LM (option megatronDir).
    sshd: str = DEFAULT_SSHD
    megatron_dir: str | None = Field(None, alias="megatronDir")

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"


def _load_yaml(text: str) -> dict:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def catalog_dir() -> Path:
    env = os.environ.get("NVCRE_CATALOG_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "catalog"


@functools.lru_cache(maxsize=1)
def load_catalog() -> dict[str, CatalogEntry]:
    """All entries keyed `domain/variant`."""
    root = catalog_dir()
    entries: dict[str, CatalogEntry] = {}
    for path in sorted(root.glob("*/*.yaml")):
        if path.parent.name.startswith("_"):
            continue
        data = _load_yaml(path.read_text())
        entry = CatalogEntry.model_validate(data)
        if (entry.domain, entry.variant) != (path.parent.name, path.stem):
            raise InputError(f"entry says {entry.key}, file is {path.parent.name}/{path.stem}", str(path))
        _check_placeholders(entry, path)
        entries[entry.key] = entry
    if not entries:
        raise InputError("no catalog entries found (set NVCRE_CATALOG_DIR)", str(root))
    return entries


def _check_placeholders(entry: CatalogEntry, path: Path) -> None:
    import string

    for text in [*entry.command, *entry.args, *entry.env.values()]:
        for _, field, _, _ in string.Formatter().parse(text):
            if field is not None and field not in PLACEHOLDERS:
                raise InputError(f"unknown placeholder {{{field}}} in {text!r}", str(path))
    if any("{megatronDir}" in a for a in entry.args) and not entry.megatron_dir:
        raise InputError("args use {megatronDir} but the entry sets no megatronDir", str(path))


def apply_workload_options(entry: CatalogEntry, options: dict) -> CatalogEntry:
    """The entry with the Certification's overrides of its image facts applied (camelCase option keys):
    `{megatronDir}` filled (the `sourceRepo` clone wins over the image's copy), `sshdPath` as the workers' sshd, and
    `dcgmHost` as `dcgmi diag --host HOST[:PORT]` instead of the host engine dcgmi starts in-process.
    Values only ever become argv elements."""
    update: dict = {}
    megatron = CLONED_CODE_DIR if options.get("sourceRepo") else options.get("megatronDir") or entry.megatron_dir
    if any("{megatronDir}" in a for a in entry.args):
        if not megatron:
            raise InputError("args use {megatronDir} but the entry sets no megatronDir", entry.key)
        update["args"] = [a.replace("{megatronDir}", megatron) for a in entry.args]
        update["megatron_dir"] = megatron
    if options.get("sshdPath"):
        update["sshd"] = options["sshdPath"]
    if options.get("dcgmHost") and entry.test == "dcgm_diag":
        args = update.get("args", entry.args)
        # after the `diag` subcommand: `dcgmi diag --host H` (dcgmi/CommandLineParser.cpp, diag's --host)
        update["args"] = [*args[:1], "--host", options["dcgmHost"], *args[1:]]
    return entry.model_copy(update=update) if update else entry


def get_entry(domain: str, variant: str) -> CatalogEntry:
    entries = load_catalog()
    key = f"{domain}/{variant}"
    if key not in entries:
        known = ", ".join(sorted(entries))
        raise KeyError(f"unknown category {key} (known: {known})")
    return entries[key]


def plan_entry(category: dict) -> CatalogEntry:
    """The entry a compiled plan's category runs: a catalog entry by name, or an ad-hoc one (a WorkloadRun's,
    domain `workloadrun`) that travels in the plan itself."""
    if category.get("entry"):
        return CatalogEntry.model_validate(category["entry"])
    return get_entry(category["domain"], category["variant"])


@functools.lru_cache(maxsize=1)
def _gpu_table() -> dict:
    return _load_yaml((catalog_dir() / "_lib" / "gpu-defaults.yaml").read_text())


@functools.lru_cache(maxsize=1)
def _platform_table() -> dict:
    return _load_yaml((catalog_dir() / "_lib" / "platforms.yaml").read_text())


def gpu_architectures() -> list[str]:
    return list(_gpu_table()["architectures"])


def gpu_defaults(arch: str | None) -> dict:
    """`{gpusPerNode, nicsPerNode, maxBytes, nvlinkDomain}` for an architecture key (h100, gb300, …)."""
    table = _gpu_table()
    return dict(table["architectures"].get(arch or "", table["unknown"]))


def architecture_of(product: str | None) -> str | None:
    """Map a `nvidia.com/gpu.product` label (NVIDIA-H100-80GB-HBM3) to an architecture key (h100)."""
    if not product:
        return None
    lowered = product.lower()
    for arch in sorted(_gpu_table()["architectures"], key=len, reverse=True):
        if arch in lowered:
            return arch
    return None


def platforms() -> dict[str, dict]:
    return dict(_platform_table()["platforms"])


def platform_settings(platform: str) -> dict:
    """`{providerIDPrefix, fabric, nicResource, env, mpiArgs, nicsPerNode?}` for a platform name."""
    table = platforms()
    return dict(table.get(platform, table["onprem"]))


__all__ = [
    "ADHOC_DOMAIN",
    "CLONED_CODE_DIR",
    "CatalogEntry",
    "DEFAULT_SSHD",
    "PLACEHOLDERS",
    "apply_workload_options",
    "architecture_of",
    "catalog_dir",
    "get_entry",
    "gpu_architectures",
    "gpu_defaults",
    "load_catalog",
    "platform_settings",
    "plan_entry",
    "platforms",
]
