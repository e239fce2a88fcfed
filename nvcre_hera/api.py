"""The `Certification` spec, field for field as NVCRE spells it (`nvcre.nvidia.com/v1alpha1`).

camelCase in YAML, snake_case in Python (pydantic aliases). Strict: unknown fields and wrong types are errors that
name their path. Cross-field rules (catalog entries, thresholds, option conflicts) live in `nvcre_hera.spec_load`,
which also turns pydantic's errors into one-line messages.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from nvcre_hera.catalog import gpu_architectures
from nvcre_hera.units import parse_byte_size, parse_duration

API_VERSION = "nvcre.nvidia.com/v1alpha1"
TestScale = Literal["intra-node", "intra-rack", "full-scale", "diagnose"]

# Kubernetes label syntax (apimachinery validation.IsQualifiedName / IsValidLabelValue).
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
LABEL_KEY = re.compile(rf"^({_DNS_SUBDOMAIN}/)?{_NAME}$")
LABEL_VALUE = re.compile(rf"^({_NAME})?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
RESERVED_LABEL_PREFIXES = ("nvcre.nvidia.com/", "nvcre-hera.dev/")
RESERVED_LABEL_KEYS = ("app.kubernetes.io/managed-by",)


def check_label_key(key: str) -> str:
    prefix = key.split("/", 1)[0] if "/" in key else ""
    if not LABEL_KEY.fullmatch(key) or len(prefix) > 253:
        raise ValueError(f"{key!r} is not a valid label key")
    return key


def check_dns_subdomain(value: str, what: str) -> str:
    """Names the API server checks as DNS-1123 subdomains (schedulerName, priorityClassName): fail at load time,
    not when every test's job is rejected at run time."""
    if len(value) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, value):
        raise ValueError(f"{value!r} is not a valid {what} (lowercase DNS subdomain, e.g. kai-scheduler)")
    return value


def check_label_value(value: str) -> str:
    if not LABEL_VALUE.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid label value (≤ 63 characters: letters, digits, '-', '_', '.')")
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: object) -> object:
        """`field: null` (an empty `options:` line) means unset, as for the API server and NVCRE's Go types."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


class NodeSelectorRequirement(_Model):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_match_operator(self) -> NodeSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class TaintSelector(_Model):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class TargetSpec(_Model):
    """Which nodes to certify; all filters AND."""

    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list, alias="matchExpressions")
    node_names: list[str] = Field(default_factory=list, alias="nodeNames")
    taint_selectors: list[TaintSelector] = Field(default_factory=list, alias="taintSelectors")
    include_unschedulable: bool = Field(False, alias="includeUnschedulable")

    @field_validator("node_selector")
    @classmethod
    def _selector_is_labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            check_label_key(key)
            check_label_value(label)
        return value


class ResourceList(_Model):
    cpu: str | int | None = None
    memory: str | None = None


class ResourceRequirements(_Model):
    limits: ResourceList | None = None
    requests: ResourceList | None = None

    @model_validator(mode="after")
    def _requests_within_limits(self) -> ResourceRequirements:
        from kubernetes.utils.quantity import parse_quantity  # heavy import, only when resources are given

        parsed: dict[tuple[str, str], object] = {}
        for side in ("limits", "requests"):
            block = getattr(self, side)
            for res in ("cpu", "memory"):
                raw = getattr(block, res) if block else None
                if raw is None:
                    continue
                if len(str(raw)) > 32:  # NVCRE MaxLength (keeps its CEL comparison within the cost budget)
                    raise ValueError(f"{side}.{res}: {raw!r} is longer than 32 characters")
                try:
                    qty = parse_quantity(raw)
                except ValueError:
                    raise ValueError(f"{side}.{res}: {raw!r} is not a Kubernetes quantity (e.g. 64, 500m, 800Gi)")
                if qty < 0:
                    raise ValueError(f"{side}.{res}: {raw!r} must not be negative")
                parsed[(side, res)] = qty
        for res in ("cpu", "memory"):
            req, lim = parsed.get(("requests", res)), parsed.get(("limits", res))
            if req is not None and lim is not None and req > lim:  # type: ignore[operator]
                raise ValueError(f"requests.{res} ({getattr(self.requests, res)}) exceeds limits.{res} "
                                 f"({getattr(self.limits, res)})")
        return self


class LocalObjectReference(_Model):
    name: str


class WorkloadMetadata(_Model):
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("labels")
    @classmethod
    def _labels_valid(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > 32:
            raise ValueError(f"at most 32 labels, got {len(value)}")
        for key, label in value.items():
            check_label_key(key)
            check_label_value(label)
            if key in RESERVED_LABEL_KEYS or key.startswith(RESERVED_LABEL_PREFIXES):
                raise ValueError(f"label key {key!r} is reserved for the tool itself")
        return value


# NVCRE's sourceRepo pattern (certification_types.go): an authenticated remote scheme, no shell metacharacters.
_REPO_URL = re.compile(r"^(https|ssh)://[A-Za-z0-9._~:/@%+-]+$")


class SourceRepo(_Model):
    """Where training categories clone Megatron-LM from: a URL and a ref. NVCRE writes `sourceRepo` as the URL
    string alone; that form loads too (see CategoryOptions._repo_string)."""

    url: str
    ref: str | None = None

    @field_validator("url")
    @classmethod
    def _remote(cls, value: str) -> str:
        if len(value) > 2048 or not _REPO_URL.fullmatch(value):
            raise ValueError(f"{value!r} is not an https:// or ssh:// repository URL (at most 2048 characters, "
                             "no spaces or shell characters)")
        return value


# Extended resources must be domain-qualified (NVCRE's nicResourceName: a DNS-subdomain domain, '/', a name of at
# most 63 characters, 253 in all); the Kubernetes-owned domains are reserved for native resources.
_EXTENDED_RESOURCE = re.compile(rf"^{_DNS_SUBDOMAIN}/{_NAME}$")
# NVCRE's CRD patterns for quantities and Go durations (certification_types.go, see docs/nvcre-field-rules.md)
_STORAGE_SIZE = re.compile(r"^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei)?$")
_GO_DURATION = re.compile(r"^([0-9]+(h|m|s|ms))+$")


class CategoryOptions(_Model):
    """Options a category may set; the same fields inlined under `spec` (or under `spec.options`) are the defaults."""

    test_scale: TestScale | None = Field(None, alias="testScale")
    nodes_per_job: int | None = Field(None, alias="nodesPerJob", ge=1)
    gpus_per_node: int | None = Field(None, alias="gpusPerNode", ge=1, le=64)
    mlnx_per_node: int | None = Field(None, alias="mlnxPerNode", ge=0, le=64)
    enable_mnnvl: bool | None = Field(None, alias="enableMNNVL")
    max_bytes: str | None = Field(None, alias="maxBytes")
    num_iterations: int | None = Field(None, alias="numIterations", ge=1)
    num_cycles: int | None = Field(None, alias="numCycles", ge=1)
    # {metric: CEL}; a key naming a GPU architecture (h100, gb300, ...) holds {metric: CEL} for that GPU only
    thresholds: dict[str, str | dict[str, str]] | None = None
    # nvcre-hera: per-GPU floors from catalog/_lib/thresholds/<gpu>.yaml (`default`) or a profile file (a path)
    threshold_profile: str | None = Field(None, alias="thresholdProfile", min_length=1)
    max_concurrent: int | None = Field(None, alias="maxConcurrent", ge=0)
    min_group_size: int | None = Field(None, alias="minGroupSize", ge=1)
    timeout_per_job: str | None = Field(None, alias="timeoutPerJob")
    measurement_timeout: str | None = Field(None, alias="measurementTimeout")
    # nvcre-hera: how long a test's pods may stay unschedulable (WorkloadSchedulingBlocked) before the test fails;
    # that time does not count against timeoutPerJob
    scheduling_timeout: str | None = Field(None, alias="schedulingTimeout")
    repeat_count: int | None = Field(None, alias="repeatCount", ge=1, le=100)
    startup_stall_timeout_seconds: int | None = Field(None, alias="startupStallTimeoutSeconds", ge=1)
    image: str | None = None
    nic_resource_name: str | None = Field(None, alias="nicResourceName")
    rdma_device_access: Literal["hostPath", "devicePlugin"] | None = Field(None, alias="rdmaDeviceAccess")
    workload_metadata: WorkloadMetadata | None = Field(None, alias="workloadMetadata")
    max_steps: int | None = Field(None, alias="maxSteps", ge=1)
    exit_duration_mins: int | None = Field(None, alias="exitDurationMins", ge=1)
    resources: ResourceRequirements | None = None
    image_pull_secrets: list[LocalObjectReference] | None = Field(None, alias="imagePullSecrets")
    source_repo: SourceRepo | None = Field(None, alias="sourceRepo")
    # NVCRE checkpoint knobs: accepted so NVCRE files load; the training runs here use mock data and no checkpoint.
    enable_checkpoint: bool | None = Field(None, alias="enableCheckpoint")
    storage_class_name: str | None = Field(None, alias="storageClassName")
    save_interval: int | None = Field(None, alias="saveInterval", ge=1)
    save_retain_interval: int | None = Field(None, alias="saveRetainInterval", ge=1)
    save_top_k: int | None = Field(None, alias="saveTopK", ge=1)
    storage_size: str | None = Field(None, alias="storageSize")
    max_restarts: int | None = Field(None, alias="maxRestarts", ge=0)
    # nvcre-hera extensions
    diagnose_strategy: Literal["adaptive", "halving"] | None = Field(None, alias="diagnoseStrategy")
    # single-node screens the diagnose planner may run on every node (docs/diagnose-screens.md); [] turns them off
    diagnose_screens: list[Literal["loopback", "intra"]] | None = Field(None, alias="diagnoseScreens", max_length=2)
    transport_check: bool | None = Field(None, alias="transportCheck")
    # nvcre-hera extensions: image facts docs/workload-facts.md could not confirm, overridable (argv elements only)
    megatron_dir: str | None = Field(None, alias="megatronDir")
    sshd_path: str | None = Field(None, alias="sshdPath")
    dcgm_host: str | None = Field(None, alias="dcgmHost")

    @field_validator("diagnose_screens")
    @classmethod
    def _distinct_screens(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"{value!r} names a screen twice (each of loopback, intra at most once)")
        return value

    @field_validator("megatron_dir", "sshd_path")
    @classmethod
    def _absolute_path(cls, value: str | None) -> str | None:
        if value is not None and (not re.fullmatch(r"^(/[A-Za-z0-9._+-]+)+/?$", value) or "/../" in value + "/"):
            raise ValueError(f"{value!r} is not an absolute path (letters, digits, '.', '_', '+', '-' between '/')")
        return value

    @field_validator("dcgm_host")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        """`dcgmi diag --host` takes IP/FQDN[:port] (DCGM dcgmi/CommandLineParser.cpp)."""
        if value is not None:
            host, _, port = value.partition(":")
            if not re.fullmatch(_DNS_SUBDOMAIN, host.lower()) or (port and not (port.isdigit() and
                                                                              0 < int(port) < 65536)):
                raise ValueError(f"{value!r} is not HOST or HOST:PORT (e.g. nvidia-dcgm.gpu-operator.svc:5555)")
        return value

    @field_validator("source_repo", mode="before")
    @classmethod
    def _repo_string(cls, value: object) -> object:
        """NVCRE's `sourceRepo: https://…` (a string) is our `{url: …}` with the entry's default ref."""
        return {"url": value} if isinstance(value, str) else value

    @field_validator("max_bytes")
    @classmethod
    def _byte_size(cls, value: str | None) -> str | None:
        if value is not None:
            parse_byte_size(value)
        return value

    @field_validator("timeout_per_job", "measurement_timeout", "scheduling_timeout")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            if not _GO_DURATION.fullmatch(value):  # NVCRE: whole units only (no 1.5h, no 1d)
                raise ValueError(f"{value!r} is not a Go duration NVCRE accepts (whole h, m, s or ms: 1h, 15m, "
                                 "1h30m, 500ms)")
            parse_duration(value)
        return value

    @field_validator("storage_size")
    @classmethod
    def _storage_size(cls, value: str | None) -> str | None:
        if value is not None and not _STORAGE_SIZE.fullmatch(value):
            raise ValueError(f"{value!r} is not a storage size (digits with an optional Ki, Mi, Gi, Ti, Pi or Ei, "
                             "e.g. 10Ti)")
        return value

    @field_validator("image")
    @classmethod
    def _image_ref(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > 512
                                  or not re.fullmatch(r"^[a-z0-9][a-z0-9._:/@+-]*$", value, re.IGNORECASE)):
            raise ValueError(f"{value!r} is not an image reference (at most 512 characters)")
        return value

    @field_validator("nic_resource_name")
    @classmethod
    def _extended_resource(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if len(value) > 253 or not _EXTENDED_RESOURCE.fullmatch(value):
            raise ValueError(f"{value!r} is not an extended resource name (domain/name, a name of at most 63 "
                             "characters, 253 in all, e.g. rdma/ib or nvidia.com/mlnxnics)")
        # NVCRE's CEL rule, as written: contains('kubernetes.io/'), startsWith('k8s.io/'), contains('.k8s.io/')
        if "kubernetes.io/" in value or value.startswith("k8s.io/") or ".k8s.io/" in value:
            raise ValueError(f"{value!r}: the kubernetes.io and k8s.io domains are reserved for native resources")
        return value

    @field_validator("thresholds", mode="before")
    @classmethod
    def _per_gpu_shape(cls, value: Any) -> Any:
        """A per-GPU block's entries must be CEL strings (the type check alone would say "a valid string"); which
        keys may hold a block is checked by the loader (spec_load._check_gpu_keys), naming the key's path."""
        for key, expr in (value or {}).items() if isinstance(value, dict) else ():
            for metric, inner in expr.items() if isinstance(expr, dict) else ():
                if not isinstance(inner, str):
                    raise ValueError(f"threshold {key}.{metric} must be a CEL string such as \"value >= 150\" "
                                     f"(got {inner!r})")
        return value

    @field_validator("thresholds")
    @classmethod
    def _threshold_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for key, expr in (value or {}).items():
            for metric, inner in expr.items() if isinstance(expr, dict) else [(key, expr)]:
                if not inner.strip():
                    name = f"{key}.{metric}" if isinstance(expr, dict) else repr(key)
                    raise ValueError(f"threshold {name} has an empty expression")
        return value


class Category(_Model):
    domain: str
    variant: str
    options: CategoryOptions = Field(default_factory=CategoryOptions)


DEFAULT_QUEUE = "default-queue"
DEFAULT_QUEUE_LABEL_KEY = "kai.scheduler/queue"


class GangScheduler(_Model):
    """NVCRE's GangSchedulerSpec. `queue` and `queueLabelKey` accept the empty string (their CRD patterns start with
    `^$|`), which NVCRE resolves in code to its default; so do we, at load time (docs/nvcre-field-rules.md)."""

    scheduler_name: str = Field(alias="schedulerName", min_length=1)
    queue: str = DEFAULT_QUEUE
    queue_label_key: str = Field(DEFAULT_QUEUE_LABEL_KEY, alias="queueLabelKey")

    @field_validator("scheduler_name")
    @classmethod
    def _scheduler(cls, value: str) -> str:
        return check_dns_subdomain(value, "schedulerName")

    @field_validator("queue_label_key")
    @classmethod
    def _key(cls, value: str) -> str:
        if value == "":
            return DEFAULT_QUEUE_LABEL_KEY
        if len(value) > 317:  # NVCRE MaxLength: a 253-character prefix, '/', a 63-character name
            raise ValueError(f"{value!r} is longer than 317 characters")
        return check_label_key(value)

    @field_validator("queue")
    @classmethod
    def _queue(cls, value: str) -> str:
        return check_label_value(value) or DEFAULT_QUEUE


class Orchestration(_Model):
    placement: Literal["Pinned", "Unpinned"] = "Pinned"
    # nvcre-hera extension: which job object each test creates (docs/trainjob-backend.md).
    backend: Literal["mpijob", "trainjob"] = "mpijob"


class CertificationSpec(CategoryOptions):
    """`spec`: the target, the categories, and global options inlined (NVCRE) or under `options` (announcement)."""

    target: TargetSpec
    categories: list[Category] = Field(min_length=1, max_length=64)
    options: CategoryOptions | None = None
    gang_scheduler: GangScheduler | None = Field(None, alias="gangScheduler")
    priority_class_name: str | None = Field(None, alias="priorityClassName")
    orchestration: Orchestration | None = None
    # nvcre-hera extension: `all` certifies every GPU architecture among the target's nodes, each in its own
    # groups with its own thresholds; `majority` tests the most common one and excludes the rest (INCOMPLETE)
    architecture: Literal["all", "majority"] = "all"

    @field_validator("priority_class_name")
    @classmethod
    def _priority_class(cls, value: str | None) -> str | None:
        return value if value is None else check_dns_subdomain(value, "priorityClassName")


class ObjectMeta(_Model):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not DNS_LABEL.fullmatch(value) or len(value) > 50:
            raise ValueError(f"{value!r} must be a lowercase DNS label of at most 50 characters "
                             "(it names the Workflow and its jobs)")
        return value


class Certification(_Model):
    api_version: Literal["nvcre.nvidia.com/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Certification"]
    metadata: ObjectMeta
    spec: CertificationSpec
    # Set by the loader once the cross-field checks passed (resolve once, use everywhere).
    _resolved: list | None = PrivateAttr(default=None)


OPTION_FIELDS: tuple[str, ...] = tuple(CategoryOptions.model_fields)

__all__ = [
    "API_VERSION",
    "Category",
    "CategoryOptions",
    "Certification",
    "CertificationSpec",
    "DEFAULT_QUEUE",
    "DEFAULT_QUEUE_LABEL_KEY",
    "GangScheduler",
    "OPTION_FIELDS",
    "TargetSpec",
    "TestScale",
    "check_dns_subdomain",
    "check_label_key",
    "check_label_value",
]
