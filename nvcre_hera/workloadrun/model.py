"""The `WorkloadRun` spec, field for field as NVCRE spells it (`nvcre.nvidia.com/v1alpha1`, kind WorkloadRun).

Source: NVIDIA/cluster-readiness-engine `api/v1alpha1/workloadrun_types.go` (commit 00992e28) and, for the two
measurement configs, `api/v1alpha1/job_types.go`; docs/workloadrun.md lists each field with its line of origin
and what nvcre-hera does with it. Every upstream field loads, so NVIDIA's files load unchanged; the fields this
tool cannot honour yet are refused at conversion (nvcre_hera.workloadrun.convert) with a line naming them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from nvcre_hera.api import (
    CategoryOptions,
    GangScheduler,
    LocalObjectReference,
    ObjectMeta,
    ResourceRequirements,
    TargetSpec,
    WorkloadMetadata,
    _Model,
)

# The Certification's own checks, reused (one rule, one place): durations, image references, NIC names, thresholds.
_duration = CategoryOptions._duration.__func__  # type: ignore[attr-defined]


class TorchFramework(_Model):
    """torchrun <script> | torchrun -m <module>, with args."""

    script: str | None = Field(None, min_length=1)
    module: str | None = Field(None, min_length=1)
    args: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_entry_point(self) -> TorchFramework:
        if self.script is not None and self.module is not None:
            raise ValueError("script and module are mutually exclusive")
        if self.script is None and self.module is None:
            raise ValueError("either script or module must be set")
        return self


class MPIFramework(_Model):
    binary: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    mpi_args: list[str] = Field(default_factory=list, alias="mpiArgs")
    # upstream: a free string defaulting to OpenMPI; the launch here is Open MPI's (mpi-operator, Trainer's hostfile)
    mpi_implementation: Literal["OpenMPI"] = Field("OpenMPI", alias="mpiImplementation")
    mpirun_path: str = Field(alias="mpirunPath", min_length=1)


class ExecFramework(_Model):
    command: list[str] = Field(min_length=1)
    args: list[str] = Field(default_factory=list)


class FrameworkSpec(_Model):
    """Exactly one of torch, mpi, exec (MinProperties=1, MaxProperties=1 upstream)."""

    torch: TorchFramework | None = None
    mpi: MPIFramework | None = None
    exec: ExecFramework | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> FrameworkSpec:
        if sum(x is not None for x in (self.torch, self.mpi, self.exec)) != 1:
            raise ValueError("exactly one of torch, mpi or exec must be set")
        return self

    @property
    def name(self) -> str:
        return "torch" if self.torch else "mpi" if self.mpi else "exec"


class WorkloadConfig(_Model):
    inline: dict[str, str] | None = None
    config_map_ref: LocalObjectReference | None = Field(None, alias="configMapRef")


class WorkloadRunCheckpoint(_Model):
    storage_size: str = Field(alias="storageSize", pattern=r"^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei)?$")
    storage_class_name: str | None = Field(None, alias="storageClassName")
    max_restarts: int | None = Field(None, alias="maxRestarts", ge=0)


class WorkloadOrchestration(_Model):
    test_scale: Literal["intra-node", "intra-rack", "full-scale"] | None = Field(None, alias="testScale")
    repeat_count: int | None = Field(None, alias="repeatCount", ge=1)
    max_concurrent: int | None = Field(None, alias="maxConcurrent", ge=0)
    timeout_per_job: str | None = Field(None, alias="timeoutPerJob")
    # nvcre-hera extension, as on a Certification (NVCRE itself always runs a TrainJob)
    backend: Literal["mpijob", "trainjob"] | None = None

    _timeout = field_validator("timeout_per_job")(_duration)


class _Measurement(_Model):
    log_profile_ref: str = Field(alias="logProfileRef", min_length=1)
    sample_interval: str | None = Field(None, alias="sampleInterval")

    _interval = field_validator("sample_interval")(_duration)


class BandwidthMeasurementConfig(_Measurement):
    test_type: str | None = Field(None, alias="testType")


class GoodputMeasurementConfig(_Measurement):
    pass


class EnvVar(_Model):
    name: str = Field(min_length=1)
    value: str | None = None
    value_from: dict[str, Any] | None = Field(None, alias="valueFrom")


class WorkloadRunSpec(_Model):
    target: TargetSpec | None = None
    image: str = Field(min_length=1)
    framework: FrameworkSpec
    num_nodes: int = Field(alias="numNodes", ge=1)
    config: WorkloadConfig | None = None
    gpus_per_node: int | None = Field(None, alias="gpusPerNode", ge=1, le=64)
    mlnx_per_node: int | None = Field(None, alias="mlnxPerNode", ge=0, le=64)
    nic_resource_name: str | None = Field(None, alias="nicResourceName")
    image_pull_secrets: list[LocalObjectReference] | None = Field(None, alias="imagePullSecrets")
    env: list[EnvVar] | None = None
    volumes: list[dict[str, Any]] | None = None
    volume_mounts: list[dict[str, Any]] | None = Field(None, alias="volumeMounts")
    enable_mnnvl: bool | None = Field(None, alias="enableMNNVL")
    checkpoint: WorkloadRunCheckpoint | None = None
    resources: ResourceRequirements | None = None
    init_containers: list[dict[str, Any]] | None = Field(None, alias="initContainers")
    orchestration: WorkloadOrchestration | None = None
    thresholds: dict[str, str] | None = None
    goodput_measurement: GoodputMeasurementConfig | None = Field(None, alias="goodputMeasurement")
    bandwidth_measurement: BandwidthMeasurementConfig | None = Field(None, alias="bandwidthMeasurement")
    overrides: list[dict[str, Any]] | None = None
    gang_scheduler: GangScheduler | None = Field(None, alias="gangScheduler")
    workload_metadata: WorkloadMetadata | None = Field(None, alias="workloadMetadata")

    # Same rules as the Certification's options (one validator each, shared through CategoryOptions).
    _image = field_validator("image")(CategoryOptions._image_ref.__func__)  # type: ignore[attr-defined]
    _nic = field_validator("nic_resource_name")(CategoryOptions._extended_resource.__func__)  # type: ignore[attr-defined]
    _thresholds = field_validator("thresholds")(CategoryOptions._threshold_keys.__func__)  # type: ignore[attr-defined]


class WorkloadRun(_Model):
    api_version: Literal["nvcre.nvidia.com/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["WorkloadRun"]
    metadata: ObjectMeta
    spec: WorkloadRunSpec


__all__ = ["FrameworkSpec", "WorkloadRun", "WorkloadRunSpec"]
