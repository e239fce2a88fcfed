"""Job manifests (MPIJob for mpi/torch entries, JobSet for exec entries): every catalog entry × platform × GPU
architecture renders a manifest that passes its strict CRD check, plain and with every option that changes the pod
(gang scheduler, priority class, resources, image pull secrets, hostPath RDMA, a NIC resource name). Node names
reach a manifest only as data (affinity values, the test-spec annotation), never a command line.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from nvcre_hera.catalog import load_catalog, platforms
from nvcre_hera.cluster.base import MANAGED_BY_LABEL, TEST_SPEC_ANNOTATION, WORKFLOW_LABEL
from nvcre_hera.jobs import JobContext, render_job
from nvcre_hera.spec_load import ResolvedCategory, parse_certification, resolve_categories
from nvcre_hera.validate.crd import crd_errors

ARCHS = ("h100", "gb300", "unknown")
PLATFORMS = tuple(sorted(platforms()))
KEYS = tuple(sorted(load_catalog()))
UID = "0b5e1a3c-0000-4000-8000-000000000001"
EVERYTHING = {
    "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "16", "memory": "128Gi"}},
    "imagePullSecrets": [{"name": "ngc-secret"}],
    "nicResourceName": "rdma/ib",
    "workloadMetadata": {"labels": {"team": "infra"}},
}


def _resolve(extra: dict[str, Any] | None = None, **spec: Any) -> dict[str, ResolvedCategory]:
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": {}, "categories": [
               {"domain": k.split("/")[0], "variant": k.split("/")[1], "options": dict(extra or {})} for k in KEYS],
               **spec}}
    cert = parse_certification(yaml.safe_dump(doc), "cert.yaml")
    return {c.key: c for c in resolve_categories(cert)}


@pytest.fixture(scope="module")
def plain() -> dict[str, ResolvedCategory]:
    return _resolve()


@pytest.fixture(scope="module")
def everything() -> dict[str, ResolvedCategory]:
    return _resolve(EVERYTHING)


@pytest.fixture(scope="module")
def host_path() -> dict[str, ResolvedCategory]:
    return _resolve({"rdmaDeviceAccess": "hostPath"})


def _ctx(platform: str = "onprem", gpu: str = "h100", gang: bool = False) -> JobContext:
    if gang:
        return JobContext("wf-abc12", UID, "nvcre", platform, gpu, "kai-scheduler", "gpu-cert",
                          "kai.scheduler/queue", "gpu-cert-high")
    return JobContext("wf-abc12", UID, "nvcre", platform, gpu)


def _render(cat: ResolvedCategory, ctx: JobContext, nodes: list[str] | None = None, repeat: int = 0) -> dict:
    if nodes is None:
        nodes = ["node-a"] if cat.entry.scope == "per-node" else ["node-a", "node-b"]
    return render_job(cat.entry, cat.index, cat.options, {"id": "g0", "nodes": nodes}, repeat, ctx)


def _pod_specs(manifest: dict) -> list[dict]:
    if manifest["kind"] == "MPIJob":
        return [r["template"]["spec"] for r in manifest["spec"]["mpiReplicaSpecs"].values()]
    return [rj["template"]["spec"]["template"]["spec"] for rj in manifest["spec"]["replicatedJobs"]]


def _containers(manifest: dict) -> list[dict]:
    return [c for spec in _pod_specs(manifest) for c in spec["containers"]]


@pytest.mark.parametrize("gpu", ARCHS)
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("key", KEYS)
def test_manifest_passes_crd(plain: dict, key: str, platform: str, gpu: str) -> None:
    """Entry × platform × architecture: valid MPIJob / JobSet, the kind the entry's framework asks for."""
    manifest = _render(plain[key], _ctx(platform, gpu))
    assert manifest["kind"] == ("JobSet" if plain[key].entry.framework == "exec" else "MPIJob")
    assert crd_errors(manifest) == []


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("key", KEYS)
def test_manifest_with_every_option_passes_crd(everything: dict, host_path: dict, key: str, platform: str) -> None:
    """Gang scheduler, priority class, resources, pull secrets, a NIC resource name, and hostPath RDMA: still valid."""
    for gpu in ARCHS:
        assert crd_errors(_render(everything[key], _ctx(platform, gpu, gang=True))) == []
        assert crd_errors(_render(host_path[key], _ctx(platform, gpu, gang=True))) == []


@pytest.mark.parametrize("key", KEYS)
def test_gang_scheduler_and_priority_reach_every_pod(everything: dict, key: str) -> None:
    """schedulerName, priorityClassName and pull secrets on every pod; the queue label on the job and its pods."""
    manifest = _render(everything[key], _ctx(gang=True))
    assert manifest["metadata"]["labels"]["kai.scheduler/queue"] == "gpu-cert"
    for spec in _pod_specs(manifest):
        assert spec["schedulerName"] == "kai-scheduler"
        assert spec["priorityClassName"] == "gpu-cert-high"
        assert spec["imagePullSecrets"] == [{"name": "ngc-secret"}]
    plain = _render(everything[key], _ctx())
    for spec in _pod_specs(plain):
        assert "schedulerName" not in spec and "priorityClassName" not in spec
    assert "kai.scheduler/queue" not in plain["metadata"]["labels"]


@pytest.mark.parametrize("key", KEYS)
def test_labels_owner_and_annotation(everything: dict, key: str) -> None:
    """The internals contract: managed-by and workflow labels, user labels, owner reference, test-spec JSON."""
    cat = everything[key]
    manifest = _render(cat, _ctx(), repeat=1)
    meta = manifest["metadata"]
    assert meta["labels"][MANAGED_BY_LABEL] == "nvcre-hera"
    assert meta["labels"][WORKFLOW_LABEL] == "wf-abc12"
    assert meta["labels"]["team"] == "infra"
    assert meta["ownerReferences"] == [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                                        "name": "wf-abc12", "uid": UID}]
    spec = json.loads(meta["annotations"][TEST_SPEC_ANNOTATION])
    assert spec["category"] == key and spec["test"] == cat.entry.test and spec["group"] == "g0"
    assert spec["repeat"] == 1 and spec["nodes"] == (["node-a"] if cat.entry.scope == "per-node"
                                                       else ["node-a", "node-b"])
    assert len(meta["name"]) <= 52 and meta["name"] == _render(cat, _ctx(), repeat=1)["metadata"]["name"]
    assert meta["name"] != _render(cat, _ctx(), repeat=0)["metadata"]["name"]


def test_workload_labels_cannot_override_tool_labels(plain: dict) -> None:
    """The tool's own labels win over user labels of the same key (the loader refuses such keys; this is the
    second line of defence when options arrive through the plan)."""
    cat = plain["communication/nccl-all-reduce"]
    options = {**cat.options, "workloadMetadata": {"labels": {MANAGED_BY_LABEL: "me", WORKFLOW_LABEL: "other",
                                                              "team": "infra"}}}
    manifest = render_job(cat.entry, cat.index, options, {"id": "g0", "nodes": ["a", "b"]}, 0, _ctx())
    labels = manifest["metadata"]["labels"]
    assert labels[MANAGED_BY_LABEL] == "nvcre-hera" and labels[WORKFLOW_LABEL] == "wf-abc12"
    assert labels["team"] == "infra"


def test_mpi_resources_nics_and_ranks(everything: dict, plain: dict, host_path: dict) -> None:
    """Worker GPUs and NICs per node, user resources merged in, ranks = nodes × GPUs; hostPath drops the NIC."""
    cat = everything["communication/nccl-all-reduce"]
    manifest = _render(cat, _ctx("azure", "h100"), nodes=["a", "b", "c"])
    worker = manifest["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3
    res = worker["template"]["spec"]["containers"][0]["resources"]
    assert res["limits"] == {"nvidia.com/gpu": "8", "rdma/ib": "8", "cpu": "16", "memory": "128Gi"}
    assert res["requests"] == {"cpu": "8", "memory": "64Gi"}
    launcher = manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert launcher[launcher.index("-np") + 1] == "24"
    aws = _render(plain["communication/nccl-all-reduce"], _ctx("aws", "h100"))
    limits = aws["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["vpc.amazonaws.com/efa"] == "32"
    hp = _render(host_path["communication/nccl-all-reduce"], _ctx("aws", "h100"))
    wspec = hp["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert "vpc.amazonaws.com/efa" not in wspec["containers"][0]["resources"]["limits"]
    assert {"name": "infiniband", "hostPath": {"path": "/dev/infiniband"}} in wspec["volumes"]


def test_gpu_architecture_sets_defaults(plain: dict) -> None:
    """gb300 defaults to 4 GPUs per node and 32G messages; h100 to 8 and 16G (nccl-tests `-e` in bytes)."""
    cat = plain["communication/nccl-all-reduce"]
    for gpu, gpus, max_bytes in (("h100", 8, 16 << 30), ("gb300", 4, 32 << 30), ("unknown", 4, 16 << 30)):
        manifest = _render(cat, _ctx("onprem", gpu))
        cmd = manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
        assert cmd[cmd.index("-e") + 1] == str(max_bytes)
        assert manifest["spec"]["slotsPerWorker"] == gpus


def test_torch_entries_run_one_rank_per_node(plain: dict) -> None:
    """Training: mpirun starts one torchrun per node; the rendezvous address is an env var, not shell text."""
    manifest = _render(plain["training/nemotron5-8b"], _ctx("gcp", "h100"), nodes=["a", "b"])
    launcher = manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    cmd = launcher["command"]
    assert cmd[cmd.index("-np") + 1] == "2" and "torchrun" in cmd
    assert any(e["name"] == "MASTER_ADDR" for e in launcher["env"])


def test_per_node_jobset(plain: dict) -> None:
    """DCGM runs as a JobSet, one replica per node, the launcher argv straight from the catalog."""
    manifest = _render(plain["diagnostics/dcgm-level4"], _ctx("oci", "gb300"), nodes=["n1"])
    rj = manifest["spec"]["replicatedJobs"][0]
    assert rj["name"] == "launcher" and rj["replicas"] == 1
    container = rj["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["dcgmi"] and container["args"][:3] == ["diag", "--run", "4"]


HOSTILE = ["n1; rm -rf /", "$(reboot)", "`id`", "a && b", "x\ny"]


def _strings_with_paths(value: Any, path: str = ""):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings_with_paths(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings_with_paths(v, f"{path}[{i}]")


@pytest.mark.parametrize("key", KEYS)
def test_node_names_are_data_only(plain: dict, key: str) -> None:
    """Hostile node names land only in affinity values and the test-spec annotation; commands are argv lists
    without them and without a shell."""
    cat = plain[key]
    nodes = HOSTILE[:1] if cat.entry.scope == "per-node" else HOSTILE
    manifest = _render(cat, _ctx("aws", "h100"), nodes=nodes)
    allowed = (".metadata.annotations." + TEST_SPEC_ANNOTATION, "nodeSelectorTerms[0].matchFields[0].values[")
    for path, text in _strings_with_paths(manifest):
        if any(n in text for n in nodes):
            assert any(a in path for a in allowed), path
    for container in _containers(manifest):
        argv = [*container.get("command", []), *container.get("args", [])]
        assert all(isinstance(a, str) for a in argv)
        assert argv[0].rsplit("/", 1)[-1] not in {"sh", "bash", "zsh", "dash"}, argv
        assert "-c" not in argv[:2], argv
        assert not any(n in a for n in nodes for a in argv)
    spec = json.loads(manifest["metadata"]["annotations"][TEST_SPEC_ANNOTATION])
    assert spec["nodes"] == nodes


def test_source_repo_is_cloned_by_workers_without_a_shell():
    """`sourceRepo` (training): an init container clones it with an argv list; the command points at the clone."""
    from nvcre_hera.catalog import get_entry
    from nvcre_hera.jobs import JobContext, render_job
    from nvcre_hera.validate.crd import crd_errors

    entry = get_entry("training", "nemotron5-8b")
    ctx = JobContext("wf", "uid", "nvcre", "aws", "h100")
    repo = {"url": "https://github.com/NVIDIA/Megatron-LM.git", "ref": "core_v0.15.2"}
    job = render_job(entry, 0, {"sourceRepo": repo}, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx)
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    (init,) = worker["initContainers"]
    assert init["command"] == ["git", "clone", "--depth", "1", "--branch", "core_v0.15.2", "--", repo["url"],
                               "/workspace/megatron-lm"]
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert "/workspace/megatron-lm/pretrain_gpt.py" in launcher and "/opt/megatron-lm/pretrain_gpt.py" not in launcher
    assert {"name": "workspace", "mountPath": "/workspace"} in worker["containers"][0]["volumeMounts"]
    assert crd_errors(job) == []
    plain = render_job(entry, 0, {}, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx)
    assert "initContainers" not in plain["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
