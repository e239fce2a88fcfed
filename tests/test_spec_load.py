"""The spec as NVCRE files write it: both option placements, merging global → category, target filters,
gang scheduling and placement, and the defaults each category resolves to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import compile_certification
from nvcre_hera.errors import InputError
from nvcre_hera.spec_load import (
    DIAGNOSE_TIMEOUT,
    OPTION_DEFAULTS,
    TRAINING_RESOURCES,
    load_certification,
    merge_options,
    parse_certification,
    resolve_categories,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"
HEAD = """apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: c
spec:
"""


def _cert(body: str):
    return parse_certification(HEAD + body, "cert.yaml")


def _opts(body: str) -> list[dict]:
    return [c.options for c in resolve_categories(_cert(body))]


def _plan(cert) -> dict:
    doc = compile_certification(cert, CompileOptions(step_image="img:1"))
    return json.loads(doc["spec"]["arguments"]["parameters"][0]["value"])


def test_announcement_example_loads_unchanged_and_compiles() -> None:
    """NVIDIA's announcement example, byte for byte as published, is a valid Certification and compiles."""
    cert = load_certification(EXAMPLE)
    cats = resolve_categories(cert)
    assert [c.key for c in cats] == ["communication/nccl-all-reduce", "training/nemotron5-8b"]
    assert cats[0].thresholds == {"busBandwidthGBps": "value >= 300"}
    assert cats[1].thresholds == {}  # training does not produce busBandwidthGBps
    doc = compile_certification(cert, CompileOptions(step_image="img:1"))
    assert doc["kind"] == "Workflow" and doc["metadata"]["generateName"] == "gpu-cluster-cert-"


NVCRE_INLINE = """  target: {nodeSelector: {nvidia.com/gpu.present: "true"}}
  testScale: intra-rack
  maxBytes: 8G
  nodesPerJob: 4
  numIterations: 20
  timeoutPerJob: 45m
  thresholds:
    busBandwidthGBps: "value >= 350.0"
  categories:
    - {domain: communication, variant: nccl-all-reduce}
"""


def test_nvcre_inline_options() -> None:
    """NVCRE files put options directly under `spec` (`spec.maxBytes`, `spec.nodesPerJob`, `spec.thresholds`)."""
    (opts,) = _opts(NVCRE_INLINE)
    assert opts["maxBytes"] == "8G" and opts["nodesPerJob"] == 4 and opts["numIterations"] == 20
    assert opts["testScale"] == "intra-rack" and opts["timeoutPerJob"] == "45m"
    assert opts["thresholds"] == {"busBandwidthGBps": "value >= 350.0"}


def test_options_block_is_equivalent_to_inline() -> None:
    """The same options under `spec.options` resolve to exactly the same effective options."""
    nested = """  target: {nodeSelector: {nvidia.com/gpu.present: "true"}}
  options:
    testScale: intra-rack
    maxBytes: 8G
    nodesPerJob: 4
    numIterations: 20
    timeoutPerJob: 45m
    thresholds:
      busBandwidthGBps: "value >= 350.0"
  categories:
    - {domain: communication, variant: nccl-all-reduce}
"""
    assert _opts(nested) == _opts(NVCRE_INLINE)


def test_inline_and_nested_options_combine_when_disjoint() -> None:
    """Some options inline, others under `options`: both apply; only the same option twice is an error."""
    (opts,) = _opts("""  target: {}
  maxBytes: 1G
  options: {numCycles: 3}
  categories: [{domain: communication, variant: nccl-all-gather}]
""")
    assert opts["maxBytes"] == "1G" and opts["numCycles"] == 3
    with pytest.raises(InputError, match=r"^cert.yaml: spec.numCycles: given both"):
        _cert("""  target: {}
  numCycles: 1
  options: {numCycles: 3}
  categories: [{domain: communication, variant: nccl-all-gather}]
""")


def test_category_overrides_field_by_field() -> None:
    """A category's option replaces the global one; the global options it does not set still apply."""
    a, b = _opts("""  target: {}
  options: {maxBytes: 8G, numIterations: 20, numCycles: 4}
  categories:
    - {domain: communication, variant: nccl-all-reduce, options: {maxBytes: 2G}}
    - {domain: communication, variant: nccl-all-gather}
""")
    assert (a["maxBytes"], a["numIterations"], a["numCycles"]) == ("2G", 20, 4)
    assert (b["maxBytes"], b["numIterations"], b["numCycles"]) == ("8G", 20, 4)


def test_labels_merge_key_by_key_and_resources_replace_whole() -> None:
    """`workloadMetadata.labels` merge (category wins per key); `resources` is replaced as a whole."""
    a, b = _opts("""  target: {}
  workloadMetadata: {labels: {team: infra, cost-center: "42"}}
  resources: {requests: {cpu: "8", memory: 64Gi}, limits: {cpu: "16"}}
  categories:
    - domain: communication
      variant: nccl-all-reduce
      options:
        workloadMetadata: {labels: {team: ml, run: nightly}}
        resources: {limits: {memory: 128Gi}}
    - {domain: communication, variant: nccl-all-gather}
""")
    assert a["workloadMetadata"] == {"labels": {"team": "ml", "cost-center": "42", "run": "nightly"}}
    assert a["resources"] == {"limits": {"memory": "128Gi"}}
    assert b["workloadMetadata"] == {"labels": {"team": "infra", "cost-center": "42"}}
    assert b["resources"] == {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "16"}}


def test_merge_options_is_pure() -> None:
    """The merge function itself: field by field, labels by key, inputs untouched."""
    g = {"maxBytes": "8G", "workloadMetadata": {"labels": {"a": "1", "b": "2"}}, "resources": {"limits": {"cpu": "1"}}}
    c = {"workloadMetadata": {"labels": {"b": "3"}}, "resources": {"requests": {"cpu": "1"}}}
    merged = merge_options(g, c)
    assert merged == {"maxBytes": "8G", "workloadMetadata": {"labels": {"a": "1", "b": "3"}},
                      "resources": {"requests": {"cpu": "1"}}}
    assert g["workloadMetadata"] == {"labels": {"a": "1", "b": "2"}}
    assert merge_options({"numCycles": 1}, {}) == {"numCycles": 1}


def test_global_thresholds_apply_to_categories_producing_the_metric() -> None:
    """A global threshold lands on every category producing its metric, and only there."""
    ar, dcgm, train = _opts("""  target: {}
  thresholds: {busBandwidthGBps: "value >= 300.0", dcgmPassed: "value == 1.0"}
  categories:
    - {domain: communication, variant: nccl-all-reduce}
    - {domain: diagnostics, variant: dcgm-level4}
    - {domain: training, variant: nemotron5-8b}
""")
    assert ar["thresholds"] == {"busBandwidthGBps": "value >= 300.0"}
    assert dcgm["thresholds"] == {"dcgmPassed": "value == 1.0"}
    assert train["thresholds"] == {}


def test_category_thresholds_replace_global_ones() -> None:
    """A category's own thresholds replace the global map (field by field: `thresholds` is one field).

    The global threshold is still valid although the only category producing its metric overrides it.
    """
    (ar,) = _opts("""  target: {}
  thresholds: {busBandwidthGBps: "value >= 300.0"}
  categories:
    - {domain: communication, variant: nccl-all-reduce, options: {thresholds: {algBandwidthGBps: "value > 1.0"}}}
""")
    assert ar["thresholds"] == {"algBandwidthGBps": "value > 1.0"}


def test_defaults_and_catalog_defaults() -> None:
    """Unset options take NVCRE's documented defaults, then the catalog entry's (loopback: 30m per job)."""
    ar, lb = _opts("""  target: {}
  categories:
    - {domain: communication, variant: nccl-all-reduce}
    - {domain: communication, variant: nccl-loopback}
""")
    for key, value in OPTION_DEFAULTS.items():
        if key != "testScale":
            assert ar[key] == value, key
    assert ar["testScale"] == "full-scale" and ar["timeoutPerJob"] == "1h"
    assert lb["testScale"] == "intra-node" and lb["timeoutPerJob"] == "30m"
    assert "maxBytes" not in ar and "gpusPerNode" not in ar  # resolved at run time from the detected GPU


def test_effective_test_scale() -> None:
    """Per-node entries always run intra-node; training runs full-scale whatever the global testScale says."""
    ar, lb, dcgm, train = _opts("""  target: {}
  testScale: intra-rack
  categories:
    - {domain: communication, variant: nccl-all-reduce}
    - {domain: communication, variant: nccl-loopback-nvswitch}
    - {domain: diagnostics, variant: dcgm-level4}
    - {domain: training, variant: nemotron5-56b}
""")
    assert [o["testScale"] for o in (ar, lb, dcgm, train)] == ["intra-rack", "intra-node", "intra-node",
                                                               "full-scale"]


def test_diagnose_default_timeout_and_training_resources() -> None:
    """testScale diagnose shortens the default per-job timeout; training gets default pod resources."""
    ar, train = _opts("""  target: {}
  categories:
    - {domain: communication, variant: nccl-all-reduce, options: {testScale: diagnose}}
    - {domain: training, variant: nemotron5-8b}
""")
    assert ar["testScale"] == "diagnose" and ar["timeoutPerJob"] == DIAGNOSE_TIMEOUT
    assert train["resources"] == TRAINING_RESOURCES
    (explicit,) = _opts("""  target: {}
  timeoutPerJob: 2h
  categories: [{domain: communication, variant: nccl-all-reduce, options: {testScale: diagnose}}]
""")
    assert explicit["timeoutPerJob"] == "2h"


def test_target_filters_reach_the_plan() -> None:
    """Every target filter is accepted and carried, as written, in the compiled workflow's plan."""
    cert = _cert("""  target:
    nodeSelector: {nvidia.com/gpu.present: "true", pool: a}
    matchExpressions:
      - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}
      - {key: pool, operator: NotIn, values: [b, c]}
      - {key: node-role.kubernetes.io/gpu, operator: Exists}
      - {key: maintenance, operator: DoesNotExist}
    nodeNames: [gpu-node-01, gpu-node-02]
    taintSelectors:
      - {key: nvidia.com/gpu, effect: NoSchedule}
      - {key: dedicated, value: ml}
    includeUnschedulable: true
  categories: [{domain: communication, variant: nccl-all-reduce}]
""")
    target = _plan(cert)["target"]
    assert target["nodeSelector"] == {"nvidia.com/gpu.present": "true", "pool": "a"}
    assert [e["operator"] for e in target["matchExpressions"]] == ["In", "NotIn", "Exists", "DoesNotExist"]
    assert target["matchExpressions"][1]["values"] == ["b", "c"]
    assert target["nodeNames"] == ["gpu-node-01", "gpu-node-02"]
    assert target["taintSelectors"][0] == {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    assert target["taintSelectors"][1] == {"key": "dedicated", "value": "ml"}
    assert target["includeUnschedulable"] is True


def test_empty_target_selects_everything() -> None:
    """`target: {}` is valid (all nodes); the plan carries no filter."""
    assert _plan(_cert("  target: {}\n  categories: [{domain: communication, variant: nccl-all-reduce}]\n"))[
        "target"] == {}


def test_gang_scheduler_defaults() -> None:
    """schedulerName is required; queue defaults to default-queue, queueLabelKey to kai.scheduler/queue."""
    plan = _plan(_cert("""  target: {}
  gangScheduler: {schedulerName: kai-scheduler}
  priorityClassName: gpu-cert-high
  categories: [{domain: communication, variant: nccl-all-reduce}]
"""))
    assert plan["gangScheduler"] == {"schedulerName": "kai-scheduler", "queue": "default-queue",
                                     "queueLabelKey": "kai.scheduler/queue"}
    assert plan["priorityClassName"] == "gpu-cert-high"


def test_gang_scheduler_explicit_queue() -> None:
    """A given queue and label key are kept."""
    plan = _plan(_cert("""  target: {}
  gangScheduler: {schedulerName: volcano, queue: team-a, queueLabelKey: scheduling.x-k8s.io/queue-name}
  categories: [{domain: communication, variant: nccl-all-reduce}]
"""))
    assert plan["gangScheduler"]["queue"] == "team-a"
    assert plan["gangScheduler"]["queueLabelKey"] == "scheduling.x-k8s.io/queue-name"


@pytest.mark.parametrize(("block", "placement"), [("", "Pinned"), ("  orchestration: {placement: Unpinned}\n",
                                                                      "Unpinned"),
                                                  ("  orchestration: {}\n", "Pinned")])
def test_orchestration_placement(block: str, placement: str) -> None:
    """orchestration.placement is Pinned (default) or Unpinned, carried to the plan."""
    cert = _cert("  target: {}\n" + block + "  categories: [{domain: communication, variant: nccl-all-reduce}]\n")
    assert _plan(cert)["placement"] == placement


def test_nvcre_only_fields_are_accepted() -> None:
    """NVCRE checkpoint knobs and the rest of its options load (they are accepted, even where unused)."""
    (train,) = _opts("""  target: {}
  categories:
    - domain: training
      variant: nemotron5-56b
      options:
        enableCheckpoint: true
        storageClassName: fast
        saveInterval: 10
        saveRetainInterval: 20
        saveTopK: 2
        storageSize: 100Gi
        maxRestarts: 1
        maxSteps: 20
        exitDurationMins: 10
        sourceRepo: {url: "https://github.com/NVIDIA/Megatron-LM.git", ref: core_r0.12.0}
        imagePullSecrets: [{name: ngc}]
        rdmaDeviceAccess: hostPath
        nicResourceName: rdma/ib
        gpusPerNode: 8
        mlnxPerNode: 8
        enableMNNVL: true
        repeatCount: 2
        startupStallTimeoutSeconds: 600
        image: nvcr.io/nvidia/pytorch:25.08-py3
""")
    assert train["maxSteps"] == 20 and train["imagePullSecrets"] == [{"name": "ngc"}]
    assert train["rdmaDeviceAccess"] == "hostPath" and train["nicResourceName"] == "rdma/ib"


def test_load_resolves_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader runs the cross-field checks and keeps the result: resolving again reads it back (the catalog is
    not consulted a second time) and equals resolving the same spec from scratch."""
    import nvcre_hera.spec_load as spec_load

    cert = load_certification(EXAMPLE)
    kept = resolve_categories(cert)
    assert [c.key for c in kept] == ["communication/nccl-all-reduce", "training/nemotron5-8b"]
    fresh = parse_certification(EXAMPLE.read_text())
    fresh._resolved = None
    assert resolve_categories(fresh) == kept

    def no_catalog(*args: object) -> None:
        raise AssertionError("resolved a second time")

    monkeypatch.setattr(spec_load, "_entry_for", no_catalog)
    assert resolve_categories(cert) == kept


def test_null_means_unset() -> None:
    """`options:` or `nodeNames:` left empty (YAML null) is unset, as the API server and NVCRE's Go types read it;
    a required field given as null is reported as missing."""
    (opts,) = _opts("""  target:
    nodeNames:
  options:
  maxBytes:
  categories:
    - domain: communication
      variant: nccl-all-reduce
      options:
""")
    assert opts["testScale"] == "full-scale" and "maxBytes" not in opts
    with pytest.raises(InputError, match=r"^cert.yaml: spec.target: required field is missing$"):
        _cert("  target:\n  categories: [{domain: communication, variant: nccl-all-reduce}]\n")
