"""Pod placement in the job manifests (docs/placement.md): tolerations only for the GPU taint and the target's
taintSelectors, the launcher kept off control-plane nodes, required anti-affinity between one job's workers, and
`placement: Unpinned` (the target as node affinity, no node names). Every backend, every manifest still valid
against its vendored CRD.
"""

from __future__ import annotations

import pytest
import yaml

from nvcre_hera.catalog import load_catalog
from nvcre_hera.jobs import JobContext, backend_for, job_objects, plan_job
from nvcre_hera.sim.placement import pod_specs
from nvcre_hera.spec_load import parse_certification, resolve_categories
from nvcre_hera.validate.crd import crd_errors

KEYS = tuple(sorted(load_catalog()))
BACKENDS = ("mpijob", "trainjob")
TARGET = {"nodeSelector": {"nvidia.com/gpu.present": "true", "pool": "training"},
          "matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r2"]},
                               {"key": "maintenance", "operator": "DoesNotExist"}],
          "taintSelectors": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, {"key": "pool"}]}
# Written out by hand from the target above: what the scheduler must let these pods tolerate, and nothing more.
EXPECTED_TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "pool", "operator": "Exists"},
]
NODES = ["node-b", "node-a", "node-c"]


def _categories():
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": {}, "categories": [{"domain": k.split("/")[0], "variant": k.split("/")[1]}
                                                 for k in KEYS]}}
    return {c.key: c for c in resolve_categories(parse_certification(yaml.safe_dump(doc), "cert.yaml"))}


CATS = _categories()


def _objects(key: str, backend: str, placement: str = "Pinned", target: dict | None = None) -> list[dict]:
    cat = CATS[key]
    ctx = JobContext("wf", "uid-1", "nvcre", "onprem", "h100", target=TARGET if target is None else target,
                     placement=placement)
    nodes = NODES[:1] if cat.entry.scope == "per-node" else NODES
    job = plan_job(cat.entry, cat.index, cat.options, {"id": "g0", "nodes": nodes}, 0, ctx)
    return job_objects(backend_for(cat.entry, backend), job)


def _templates(objects: list[dict]) -> list[dict]:
    """Pod templates ({metadata, spec}) of every object, found by their `containers` list."""
    out = []

    def walk(obj):
        if isinstance(obj, dict):
            spec = obj.get("spec")
            if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
                out.append(obj)
                return
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(objects)
    return out


def _is_gpu_pod(template: dict) -> bool:
    containers = template["spec"]["containers"]
    return any("nvidia.com/gpu" in ((c.get("resources") or {}).get("limits") or {}) for c in containers)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", KEYS)
def test_pods_tolerate_only_the_gpu_taint_and_the_selected_taints(key: str, backend: str) -> None:
    templates = _templates(_objects(key, backend))
    assert templates
    for t in templates:
        assert t["spec"]["tolerations"] == EXPECTED_TOLERATIONS


def test_no_target_tolerates_the_gpu_taint_only() -> None:
    for t in _templates(_objects("communication/nccl-all-reduce", "mpijob", target={})):
        assert t["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_include_unschedulable_also_tolerates_the_cordon_taint() -> None:
    for t in _templates(_objects("communication/nccl-all-reduce", "mpijob", target={"includeUnschedulable": True})):
        assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in \
            t["spec"]["tolerations"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", [k for k in KEYS if load_catalog()[k].framework == "mpi"])
def test_launcher_stays_off_control_plane_nodes(key: str, backend: str) -> None:
    launchers = [t for t in _templates(_objects(key, backend)) if not _is_gpu_pod(t)]
    assert launchers  # mpi categories have a GPU-less launcher
    for t in launchers:
        assert t["spec"]["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]}]}}}
        assert any(c["resources"]["requests"].get("cpu") for c in t["spec"]["containers"])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", [k for k in KEYS if load_catalog()[k].scope == "per-group"])
def test_workers_of_one_job_never_share_a_node(key: str, backend: str) -> None:
    objects = _objects(key, backend)
    job_name = objects[-1]["metadata"]["name"]
    templates = _templates(objects)
    workers = [t for t in templates if _is_gpu_pod(t)]
    assert workers
    for t in workers:
        (term,) = t["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        selector = term["labelSelector"]["matchLabels"]
        assert selector == {"nvcre-hera.dev/job-worker": job_name}
        # the workers carry what they select on, so the term matches the job's other workers ...
        assert all(t["metadata"]["labels"].get(k) == v for k, v in selector.items())
    for t in templates:
        if not _is_gpu_pod(t):  # ... and never its launcher, which would then be barred from every worker's node
            assert "nvcre-hera.dev/job-worker" not in t["metadata"]["labels"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", KEYS)
def test_pinned_workers_name_their_nodes(key: str, backend: str) -> None:
    for t in _templates(_objects(key, backend)):
        if _is_gpu_pod(t):
            terms = t["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"]
            want = ["node-b"] if CATS[key].entry.scope == "per-node" else ["node-a", "node-b", "node-c"]
            assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": want}]}]


@pytest.mark.parametrize("backend", BACKENDS)
def test_unpinned_unpins_multi_node_jobs_only(backend: str) -> None:
    """Per-group jobs take the target as affinity; a one-node job placed by the scheduler could land anywhere (twice
    on one node), so per-node tests keep naming their node."""
    for key in KEYS:
        for t in _templates(_objects(key, backend, placement="Unpinned")):
            if not _is_gpu_pod(t):
                continue
            terms = t["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"]
            pinned = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-b"]}]}]
            assert (terms == pinned) == (CATS[key].entry.scope == "per-node"), key


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", [k for k in KEYS if load_catalog()[k].scope == "per-group"])
def test_unpinned_workers_carry_the_target_not_node_names(key: str, backend: str) -> None:
    objects = _objects(key, backend, placement="Unpinned")
    workers = [t for t in _templates(objects) if _is_gpu_pod(t)]
    assert workers
    for t in workers:
        terms = t["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert terms == [{"matchExpressions": [
            {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
            {"key": "pool", "operator": "In", "values": ["training"]},
            {"key": "rack", "operator": "In", "values": ["r1", "r2"]},
            {"key": "maintenance", "operator": "DoesNotExist"}]}]
        assert "node-a" not in str(t["spec"]["affinity"])
    for obj in objects:
        if obj["kind"] != "TrainingRuntime":  # no vendored CRD; its pod templates are checked through the others
            assert crd_errors(obj) == []


def test_unpinned_with_node_names_pins_by_name_through_the_target() -> None:
    target = {"nodeNames": ["gpu-2", "gpu-1"]}
    (worker,) = [t for t in _templates(_objects("communication/nccl-all-reduce", "mpijob", "Unpinned", target))
                 if _is_gpu_pod(t)]
    terms = worker["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1", "gpu-2"]}]}]


@pytest.mark.parametrize("placement", ["Pinned", "Unpinned"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", KEYS)
def test_placed_manifests_pass_their_crds(key: str, backend: str, placement: str) -> None:
    """With taintSelectors, anti-affinity and Unpinned affinity: still valid for the MPIJob / JobSet / TrainJob
    CRDs (the TrainingRuntime has no vendored CRD here; its pod templates are the MPIJob's and JobSet's)."""
    objects = _objects(key, backend, placement)
    assert [t["spec"]["tolerations"] for t in _templates(objects)][0] == EXPECTED_TOLERATIONS
    for obj in objects:
        if obj["kind"] != "TrainingRuntime":
            assert crd_errors(obj) == []


def test_pod_specs_finds_every_template_the_scheduler_sees() -> None:
    """The simulator's stand-in scheduler reads the same pod specs these tests do."""
    objects = _objects("communication/nccl-all-reduce", "mpijob")
    assert [p for o in objects for p in pod_specs(o)] == [t["spec"] for t in _templates(objects)]
