"""WorkloadRun → a one-category Certification whose catalog entry is built here (domain `workloadrun`), so
`compile`, `validate`, `certify` and `submit` run it through the same discover → run → judge workflow.

The entry travels inside the compiled plan (nvcre_hera.catalog.plan_entry), not by name. User strings become argv
elements with their braces escaped, so no `{placeholder}` in a user's argument is ever filled. What NVCRE does that
this tool does not (config, volumes, initContainers, checkpoint, overrides, env from a source, log profiles other
than the built-in parsers) is refused with one line naming the field: a run that silently dropped it would not be
the run the user asked for.
"""

from __future__ import annotations

from typing import Any

from nvcre_hera.api import Certification
from nvcre_hera.catalog import ADHOC_DOMAIN, CatalogEntry
from nvcre_hera.errors import InputError
from nvcre_hera.workloadrun.model import WorkloadRun, WorkloadRunSpec

DEFAULT_TARGET = {"nodeSelector": {"nvidia.com/gpu.present": "true"}}  # workloadrun_types.go: target omitted
BANDWIDTH_PROFILES = ("nccl-bandwidth",)  # NVCRE LogProfiles our parsers stand in for
GOODPUT_PROFILES = ("megatron-training",)
TEST_TYPES = ("all_reduce", "all_gather", "alltoall")
METRICS = {"nccl": ["busBandwidthGBps", "algBandwidthGBps"],
           "training": ["goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec"], "exit": []}
UNSUPPORTED = {
    "config": "mounting a ConfigMap at /config",
    "volumes": "extra pod volumes",
    "volumeMounts": "extra volume mounts",
    "initContainers": "init containers",
    "checkpoint": "checkpoint PVCs and restarts",
    "overrides": "platform override patches",
}


def _literal(text: str) -> str:
    """A user string as a literal through the catalog's `{placeholder}` filling (str.format)."""
    return text.replace("{", "{{").replace("}", "}}")


def _argv(spec: WorkloadRunSpec) -> tuple[list[str], list[str]]:
    fw = spec.framework
    if fw.mpi:
        return [fw.mpi.binary], list(fw.mpi.args)
    if fw.torch:
        # One torchrun per node with c10d rendezvous on rank 0 (MASTER_ADDR: set by either backend).
        target = [fw.torch.script] if fw.torch.script else ["-m", fw.torch.module or ""]
        return ["torchrun"], ["--nnodes", "{numNodes}", "--nproc-per-node", "{gpusPerNode}", "--rdzv-backend", "c10d",
                              "--rdzv-endpoint", "$(MASTER_ADDR):29500",
                              *[_literal(a) for a in target + fw.torch.args]]
    assert fw.exec is not None
    return [fw.exec.command[0]], [*fw.exec.command[1:], *fw.exec.args]


def _measurement(spec: WorkloadRunSpec, source: str) -> tuple[str, str]:
    """(parser, test kind): bandwidth → nccl, goodput → training, neither → the exit code alone. With both set
    (NVCRE's own reference example does), a torch workload is read for goodput, any other for bandwidth."""
    bw, gp = spec.bandwidth_measurement, spec.goodput_measurement
    if bw and bw.log_profile_ref not in BANDWIDTH_PROFILES:
        raise InputError(f"log profile {bw.log_profile_ref!r} is not supported (nvcre-hera parses: "
                         f"{', '.join(BANDWIDTH_PROFILES)})", f"{source}: spec.bandwidthMeasurement.logProfileRef")
    if gp and gp.log_profile_ref not in GOODPUT_PROFILES:
        raise InputError(f"log profile {gp.log_profile_ref!r} is not supported (nvcre-hera parses: "
                         f"{', '.join(GOODPUT_PROFILES)})", f"{source}: spec.goodputMeasurement.logProfileRef")
    if gp and (not bw or spec.framework.torch):
        return "training", "training"
    if bw:
        test = bw.test_type or "all_reduce"
        if test not in TEST_TYPES:
            raise InputError(f"testType {test!r} is not one of {', '.join(TEST_TYPES)}",
                             f"{source}: spec.bandwidthMeasurement.testType")
        return "nccl", test
    return "exit", "workload"


def _check_supported(spec: WorkloadRunSpec, source: str) -> None:
    for field_name, what in UNSUPPORTED.items():
        if field_name in spec.model_dump(by_alias=True, exclude_none=True):
            raise InputError(f"{what} is not supported by nvcre-hera yet; remove the field or run it with NVCRE",
                             f"{source}: spec.{field_name}")
    for i, var in enumerate(spec.env or []):
        if var.value_from is not None:
            raise InputError("valueFrom is not supported by nvcre-hera yet (give a value)",
                             f"{source}: spec.env[{i}].valueFrom")


def workload_entry(run: WorkloadRun, source: str = "<workloadrun>") -> CatalogEntry:
    spec = run.spec
    _check_supported(spec, source)
    parser, test = _measurement(spec, source)
    command, args = _argv(spec)
    env = {"NCCL_MNNVL_ENABLE": "{enableMNNVL}"} if spec.framework.name != "exec" else {}
    env.update({v.name: _literal(v.value or "") for v in spec.env or []})  # the user's value wins (upstream doc)
    mpi = spec.framework.mpi
    timeout = (spec.orchestration.timeout_per_job if spec.orchestration else None) or "1h"
    return CatalogEntry.model_validate({
        "domain": ADHOC_DOMAIN, "variant": run.metadata.name,
        "description": f"WorkloadRun {run.metadata.name}: {spec.framework.name} workload in {spec.image}",
        "framework": spec.framework.name, "test": test, "scope": "per-group", "parser": parser,
        "image": spec.image, "command": [_literal(c) for c in command], "args": [_literal(a) if not
                                                                               spec.framework.torch else a
                                                                               for a in args],
        "env": env, "metrics": METRICS[parser], "testScales": ["intra-node", "intra-rack", "full-scale"],
        "defaults": {"timeoutPerJob": timeout, "measurementTimeout": "5m"},
        **({"mpirun": mpi.mpirun_path, "mpiArgs": list(mpi.mpi_args)} if mpi else {}),
    })


def workload_options(spec: WorkloadRunSpec, entry: CatalogEntry) -> dict[str, Any]:
    """The category options the WorkloadRun sets (the loader adds the defaults and checks the thresholds)."""
    orch = spec.orchestration
    scale = (orch.test_scale if orch else None) or "full-scale"
    set_fields = {
        "testScale": scale, "nodesPerJob": 1 if scale == "intra-node" else spec.num_nodes,
        "repeatCount": orch.repeat_count if orch else None, "maxConcurrent": orch.max_concurrent if orch else None,
        "timeoutPerJob": entry.defaults.timeout_per_job, "measurementTimeout": entry.defaults.measurement_timeout,
        "gpusPerNode": spec.gpus_per_node, "mlnxPerNode": spec.mlnx_per_node,
        "nicResourceName": spec.nic_resource_name,
        "imagePullSecrets": [s.model_dump() for s in spec.image_pull_secrets or []] or None,
        "resources": spec.resources.model_dump(exclude_none=True, mode="json") if spec.resources else None,
        "workloadMetadata": spec.workload_metadata.model_dump(mode="json") if spec.workload_metadata else None,
    }
    return {**{k: v for k, v in set_fields.items() if v is not None},
            "enableMNNVL": spec.enable_mnnvl,  # None: decided per architecture at run time (jobs.base)
            "thresholds": dict(spec.thresholds or {})}


def workload_certification(run: WorkloadRun) -> Certification:
    """The WorkloadRun as a Certification of one category `workloadrun/<name>` (its entry built by
    `workload_entry`; the loader attaches the resolved category)."""
    spec = run.spec
    return Certification.model_validate({
        "apiVersion": run.api_version, "kind": "Certification",
        "metadata": run.metadata.model_dump(by_alias=True, exclude_defaults=True, mode="json"),
        "spec": {"target": spec.target.model_dump(by_alias=True, exclude_defaults=True, mode="json")
                 if spec.target else DEFAULT_TARGET,
                 "categories": [{"domain": ADHOC_DOMAIN, "variant": run.metadata.name}],
                 **({"gangScheduler": spec.gang_scheduler.model_dump(by_alias=True, mode="json")}
                    if spec.gang_scheduler else {}),
                 **({"orchestration": {"backend": spec.orchestration.backend}}
                    if spec.orchestration and spec.orchestration.backend else {})},
    })


__all__ = ["workload_certification", "workload_entry", "workload_options"]
