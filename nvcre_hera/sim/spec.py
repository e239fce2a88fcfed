"""The `SimulatedCluster` file: a pydantic model and a loader whose errors are one line naming the field path.

Shape (see docs/simulated-cluster.md and examples/clusters/):

    apiVersion: nvcre-hera.dev/v1alpha1
    kind: SimulatedCluster
    metadata: {name: h100-16}
    spec:
      platform: aws          # aws | gcp | azure | oci | onprem
      gpu: h100              # h100 | h200 | b200 | a100 | gb200 | gb300
      nodes: {count: 16, namePattern: "gpu-node-{index:02d}", perClique: 0, perRack: 8,
              overrides: [{node: gpu-node-03, gpu: a100}, {node: gpu-node-04, gpus: 4}]}
      seed: 7
      noise: {sigma: 0.02, dipProbability: 0.01}
      faults: [{node: gpu-node-07, kind: slow-nic, factor: 0.6}]
      nics: {resource: rdma/rdma_shared_device_a, count: 8}   # optional; resource: null = no NIC device plugin
      taints: [{key: dedicated, value: gpu, effect: NoSchedule, nodes: [gpu-node-01]}]   # optional; no nodes = all
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from nvcre_hera.errors import InputError

API_VERSION = "nvcre-hera.dev/v1alpha1"
KIND = "SimulatedCluster"

Platform = Literal["aws", "gcp", "azure", "oci", "onprem"]
Gpu = Literal["h100", "h200", "b200", "a100", "gb200", "gb300"]
FaultKind = Literal[
    "slow-nic", "slow-gpu", "nvlink-degraded", "crash", "hang", "nccl-error", "data-corruption", "socket-fallback",
    "unschedulable", "not-ready", "flapping", "link", "dcgm-fail", "nan-loss", "step-crash", "step-stall",
    "scheduling-blocked",
]
FAULT_KINDS: tuple[str, ...] = FaultKind.__args__  # type: ignore[attr-defined]
# Kinds whose `factor` scales a capacity; the others ignore it.
FACTOR_KINDS = frozenset({"slow-nic", "slow-gpu", "nvlink-degraded", "flapping", "link"})
# Kinds that hit the test pod (our own step), not the workload: the step dies (`step-crash`: OOM kill, eviction)
# or blocks for a day (`step-stall`: a hung API call) when it creates a job on the node, so its pod fails or its
# activeDeadlineSeconds ends it. They exist to drive the workflow's failure paths on both engines.
STEP_KINDS = frozenset({"step-crash", "step-stall"})
# Kinds that change a Node object on the sim clock from `atSecond` on.
HEALTH_KINDS = frozenset({"unschedulable", "not-ready"})
# `scheduling-blocked`: every job pod on the node stays Pending, PodScheduled=False reason Unschedulable (no free
# GPUs: another tenant holds them), for `pendingSeconds` after the job is created (absent: for ever), then runs.
SCHEDULING_KINDS = frozenset({"scheduling-blocked"})
# The `dcgmi diag --run 4` tests a `dcgm-fail` fault may name (DCGM 4.x plugin names).
DCGM_TESTS = ("software", "memory", "diagnostic", "pcie", "nvbandwidth", "memory_bandwidth", "targeted_stress",
              "targeted_power", "memtest", "pulse_test")
DEFAULT_FACTOR = 0.5
DEFAULT_FLAP_PROBABILITY = 0.5

_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class NodeOverride(_Strict):
    """A node that differs from the rest: a minority architecture or fewer GPUs (to test discovery's exclusions)."""

    node: str
    gpu: Gpu | None = None
    gpus: int | None = Field(None, ge=1, le=16)


class NodesSpec(_Strict):
    count: int = Field(ge=1, le=4096)
    name_pattern: str = Field("gpu-node-{index:02d}", alias="namePattern")
    per_clique: int = Field(0, ge=0, alias="perClique")
    per_rack: int = Field(0, ge=0, alias="perRack")
    overrides: list[NodeOverride] = Field(default_factory=list)

    @field_validator("name_pattern")
    @classmethod
    def _check_pattern(cls, value: str) -> str:
        try:
            fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(value) if name is not None]
        except ValueError as err:
            raise ValueError(f"{value!r} is not a valid pattern ({err})") from None
        if not fields or any(name != "index" or conv for name, _, conv in fields):
            raise ValueError(f"{value!r} must use only {{index}}, with an optional format spec such as {{index:02d}}")
        try:
            sample = value.format(index=1)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{value!r}: bad format spec for an integer index ({err})") from None
        if not _DNS_NAME.match(sample) or len(sample) > 63:
            raise ValueError(f"{value!r} gives {sample!r}, not a valid node name (lower-case letters, digits, '-', '.')")
        return value

    def names(self) -> list[str]:
        """Node names, index starting at 1."""
        return [self.name_pattern.format(index=i) for i in range(1, self.count + 1)]


class NoiseSpec(_Strict):
    sigma: float = Field(0.0, ge=0.0, le=0.5)
    dip_probability: float = Field(0.0, ge=0.0, le=1.0, alias="dipProbability")


class FaultSpec(_Strict):
    """One injected fault. `node` for node faults, `nodes: [a, b]` for a link fault."""

    kind: FaultKind
    node: str | None = None
    nodes: list[str] | None = None
    factor: float | None = Field(None, gt=0.0, le=1.0)
    at_second: float | None = Field(None, ge=0.0, alias="atSecond")
    probability: float | None = Field(None, gt=0.0, le=1.0)
    gpus: list[int] | None = None
    test: str | None = None
    wrong: int | None = Field(None, ge=1)
    pending_seconds: float | None = Field(None, gt=0.0, alias="pendingSeconds")

    @model_validator(mode="after")
    def _check_kind(self) -> FaultSpec:
        if self.pending_seconds is not None and self.kind not in SCHEDULING_KINDS:
            raise ValueError("pendingSeconds applies only to scheduling-blocked")
        if self.kind == "link":
            if self.node is not None or not self.nodes or len(self.nodes) != 2 or self.nodes[0] == self.nodes[1]:
                raise ValueError("a link fault names two different nodes: nodes: [a, b]")
        elif self.node is None or self.nodes is not None:
            raise ValueError(f"a {self.kind} fault names one node: node: <name>")
        if self.factor is not None and self.kind not in FACTOR_KINDS:
            raise ValueError(f"factor does not apply to {self.kind} (only {', '.join(sorted(FACTOR_KINDS))})")
        if self.at_second is not None and self.kind not in HEALTH_KINDS:
            raise ValueError(f"atSecond applies only to {' and '.join(sorted(HEALTH_KINDS))}")
        if (self.gpus is not None or self.test is not None) and self.kind not in ("dcgm-fail", "slow-gpu"):
            raise ValueError("gpus and test apply only to dcgm-fail (and gpus to slow-gpu)")
        if self.test is not None and (self.kind != "dcgm-fail" or self.test.lower() not in DCGM_TESTS):
            raise ValueError(f"test {self.test!r} is not a DCGM level-4 test (one of {', '.join(DCGM_TESTS)})")
        if self.wrong is not None and self.kind != "data-corruption":
            raise ValueError("wrong applies only to data-corruption")
        return self

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(self.nodes) if self.nodes else (self.node or "",)

    @property
    def effective_factor(self) -> float:
        return self.factor if self.factor is not None else DEFAULT_FACTOR

    @property
    def effective_probability(self) -> float:
        if self.probability is not None:
            return self.probability
        return DEFAULT_FLAP_PROBABILITY if self.kind == "flapping" else 1.0


class NicsSpec(_Strict):
    """The NIC resource every node advertises in status.allocatable; `resource: null`: none (no device plugin)."""

    resource: str | None
    count: int | None = Field(None, ge=1, le=1000)

    @field_validator("resource")
    @classmethod
    def _extended(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[a-z0-9.-]+/[A-Za-z0-9._-]+$", value):
            raise ValueError(f"{value!r} is not an extended resource name (domain/name, e.g. rdma/ib)")
        return value


class TaintSpec(_Strict):
    """A taint on the named nodes (every node when `nodes` is absent), as an admin or a GPU operator sets it."""

    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    nodes: list[str] | None = None


class ClusterBody(_Strict):
    platform: Platform
    gpu: Gpu
    nodes: NodesSpec
    seed: int = 0
    noise: NoiseSpec = Field(default_factory=NoiseSpec)
    faults: list[FaultSpec] = Field(default_factory=list)
    nics: NicsSpec | None = None  # absent: the platform's usual NIC resource (sim.nodes.nic_resource)
    taints: list[TaintSpec] = Field(default_factory=list)


class Metadata(_Strict):
    name: str = Field(min_length=1)


class SimulatedClusterSpec(_Strict):
    api_version: Literal["nvcre-hera.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["SimulatedCluster"]
    metadata: Metadata
    spec: ClusterBody


def _loc_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in FAULT_KINDS or part.startswith(("function-", "literal[")):
            continue  # pydantic's union/branch tags, not fields
        else:
            out += f".{part}" if out else str(part)
    return out


def _check_names(body: ClusterBody) -> tuple[str, str] | None:
    """Cross-field checks pydantic cannot place: every named node exists, once. Returns (path, message)."""
    names = body.nodes.names()
    known = set(names)
    if len(known) != len(names):
        return "spec.nodes.namePattern", f"{body.nodes.name_pattern!r} gives duplicate names for {len(names)} nodes"
    for i, override in enumerate(body.nodes.overrides):
        if override.node not in known:
            return f"spec.nodes.overrides[{i}].node", f"unknown node {override.node!r} (nodes are {names[0]} … {names[-1]})"
    for i, fault in enumerate(body.faults):
        for member in fault.members:
            if member not in known:
                field = "nodes" if fault.nodes else "node"
                return f"spec.faults[{i}].{field}", f"unknown node {member!r} (nodes are {names[0]} … {names[-1]})"
    for i, taint in enumerate(body.taints):
        for member in taint.nodes or []:
            if member not in known:
                return f"spec.taints[{i}].nodes", f"unknown node {member!r} (nodes are {names[0]} … {names[-1]})"
    return None


def parse_spec(data: object, source: str = "cluster") -> SimulatedClusterSpec:
    """Validate a loaded YAML document; raise `InputError` naming `source: path.to.field`."""
    if not isinstance(data, dict):
        raise InputError("expected a SimulatedCluster mapping (apiVersion, kind, metadata, spec)", source)
    try:
        spec = SimulatedClusterSpec.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        path = _loc_path(tuple(first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown field"
        elif first["type"] == "literal_error":
            message = f"{first.get('input')!r} is not allowed: {message}"
        raise InputError(message, f"{source}: {path}" if path else source) from None
    problem = _check_names(spec.spec)
    if problem:
        raise InputError(problem[1], f"{source}: {problem[0]}")
    return spec


def load_spec(path: str | Path) -> SimulatedClusterSpec:
    """Read and validate a SimulatedCluster YAML file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise InputError(f"not valid YAML: {getattr(err, 'problem', None) or err}", where) from None
    return parse_spec(data, path.name)


__all__ = [
    "API_VERSION",
    "ClusterBody",
    "DCGM_TESTS",
    "DEFAULT_FACTOR",
    "DEFAULT_FLAP_PROBABILITY",
    "FACTOR_KINDS",
    "STEP_KINDS",
    "FAULT_KINDS",
    "FaultKind",
    "FaultSpec",
    "Gpu",
    "HEALTH_KINDS",
    "KIND",
    "NodeOverride",
    "NodesSpec",
    "NicsSpec",
    "NoiseSpec",
    "Platform",
    "SimulatedClusterSpec",
    "TaintSpec",
    "load_spec",
    "parse_spec",
]
