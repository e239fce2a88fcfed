"""Node objects (Kubernetes JSON shape, as plain dicts) for a SimulatedCluster spec.

They carry what the GPU operator's feature discovery and the cloud providers put on real nodes
(see shared/data/real/nodes/): `nvidia.com/gpu.*` labels, the platform's providerID, allocatable GPUs and NICs, a
Ready condition; plus the simulator's topology labels: `nvidia.com/gpu.clique` ("<uuid>.<id>", as GB200/GB300
nodes have) when `perClique` > 0 and `RACK_LABEL` when `perRack` > 0.
"""

from __future__ import annotations

import hashlib
import uuid

from nvcre_hera.catalog import gpu_defaults, platform_settings
from nvcre_hera.sim.spec import ClusterBody, SimulatedClusterSpec

# The rack label the simulator sets from `perRack`. Kubernetes defines no well-known rack key; this one follows the
# `topology.kubernetes.io/` spelling that Kueue topology-aware scheduling and most on-prem labellers use.
RACK_LABEL = "topology.kubernetes.io/rack"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_RESOURCE = "nvidia.com/gpu"
# NIC resource for on-prem nodes (the platform table leaves it to auto-detection of a single rdma/* resource).
ONPREM_NIC_RESOURCE = "rdma/ib"

# Device names as nvidia-smi / nccl-tests print them; the product label is the same with '-' for ' '.
DEVICE_NAMES = {
    "h100": "NVIDIA H100 80GB HBM3",
    "h200": "NVIDIA H200",
    "b200": "NVIDIA B200",
    "a100": "NVIDIA A100-SXM4-80GB",
    "gb200": "NVIDIA GB200",
    "gb300": "NVIDIA GB300",
}
GPU_FAMILY = {"h100": "hopper", "h200": "hopper", "b200": "blackwell", "a100": "ampere", "gb200": "blackwell",
              "gb300": "blackwell"}
GPU_MEMORY_MIB = {"h100": 81559, "h200": 143771, "b200": 183359, "a100": 81920, "gb200": 189471, "gb300": 284208}
PCI_DEVICE_IDS = {"h100": "2330", "h200": "2335", "b200": "2901", "a100": "20b2", "gb200": "2941", "gb300": "31c2"}
ARM_GPUS = frozenset({"gb200", "gb300"})
# Instance types per platform, for the node.kubernetes.io/instance-type label (cosmetic; detection never reads it).
INSTANCE_TYPES = {
    "aws": {"h100": "p5.48xlarge", "h200": "p5e.48xlarge", "b200": "p6-b200.48xlarge", "a100": "p4de.24xlarge",
            "gb200": "p6e-gb200.36xlarge", "gb300": "p6e-gb300.36xlarge"},
    "gcp": {"h100": "a3-megagpu-8g", "h200": "a3-ultragpu-8g", "b200": "a4-highgpu-8g", "a100": "a2-ultragpu-8g",
            "gb200": "a4x-highgpu-4g", "gb300": "a4x-max-highgpu-4g"},
    "azure": {"h100": "Standard_ND96isr_H100_v5", "h200": "Standard_ND96isr_H200_v5", "b200": "Standard_ND128isr_B200_v6",
              "a100": "Standard_ND96amsr_A100_v4", "gb200": "Standard_ND128isr_NDR_GB200_v6",
              "gb300": "Standard_ND128isr_GB300_v6"},
    "oci": {"h100": "BM.GPU.H100.8", "h200": "BM.GPU.H200.8", "b200": "BM.GPU.B200.8", "a100": "BM.GPU.A100-v2.8",
            "gb200": "BM.GPU.GB200.4", "gb300": "BM.GPU.GB300.4"},
}
ZONES = {"aws": "us-east-1a", "gcp": "us-central1-a", "azure": "eastus-1", "oci": "US-ASHBURN-AD-1"}


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def product_label(gpu: str) -> str:
    """`nvidia.com/gpu.product` value for an architecture key (NVIDIA-H100-80GB-HBM3)."""
    return DEVICE_NAMES[gpu].replace(" ", "-")


def provider_id(platform: str, name: str, index: int, seed: int) -> str | None:
    """The providerID a cloud's node controller would set; None on-prem (kubeadm nodes have none)."""
    h = _digest(seed, name)
    if platform == "aws":
        return f"aws:///{ZONES['aws']}/i-0{h[:16]}"
    if platform == "gcp":
        return f"gce://nvcre-sim/{ZONES['gcp']}/{name}"
    if platform == "azure":
        sub = uuid.UUID(_digest(seed, "subscription")[:32])
        return (f"azure:///subscriptions/{sub}/resourceGroups/mc_nvcre-sim_gpu_eastus/providers/Microsoft.Compute/"
                f"virtualMachineScaleSets/aks-gpu-{h[:8]}-vmss/virtualMachines/{index - 1}")
    if platform == "oci":
        return f"ocid1.instance.oc1.iad.an{h[:58]}"
    return None


def clique_id(seed: int, clique: int) -> str:
    """"<uuid>.<n>": the NVLink domain's cluster UUID and the clique number, as the GPU operator labels GB200/GB300."""
    return f"{uuid.UUID(_digest(seed, 'nvl-domain', clique)[:32])}.{2000 + int(_digest(seed, 'clique', clique)[:4], 16) % 8000}"


def node_gpus(body: ClusterBody) -> dict[str, tuple[str, int]]:
    """Node name -> (architecture, GPUs), overrides applied."""
    names = body.nodes.names()
    base = (body.gpu, int(gpu_defaults(body.gpu)["gpusPerNode"]))
    out = {name: base for name in names}
    for override in body.nodes.overrides:
        arch = override.gpu or out[override.node][0]
        gpus = override.gpus or int(gpu_defaults(arch)["gpusPerNode"])
        out[override.node] = (arch, gpus)
    return out


def nic_resource(platform: str, arch: str) -> tuple[str | None, int]:
    """(resource name, count) of the scale-out NICs a node advertises on this platform."""
    settings = platform_settings(platform)
    resource = settings.get("nicResource") or (ONPREM_NIC_RESOURCE if platform == "onprem" else None)
    count = (settings.get("nicsPerNode") or {}).get(arch) or int(gpu_defaults(arch)["nicsPerNode"])
    return resource, count


def build_node(body: ClusterBody, name: str, index: int, arch: str, gpus: int) -> dict:
    """One healthy Node dict."""
    per_clique, per_rack = body.nodes.per_clique, body.nodes.per_rack
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64" if arch in ARM_GPUS else "amd64",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product_label(arch),
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.family": GPU_FAMILY[arch],
        "nvidia.com/gpu.memory": str(GPU_MEMORY_MIB[arch]),
        "nvidia.com/gpu.mode": "compute",
    }
    if body.platform in INSTANCE_TYPES:
        labels["node.kubernetes.io/instance-type"] = INSTANCE_TYPES[body.platform][arch]
        labels[ZONE_LABEL] = ZONES[body.platform]
    if per_clique > 0:
        labels[CLIQUE_LABEL] = clique_id(body.seed, (index - 1) // per_clique)
    if per_rack > 0:
        labels[RACK_LABEL] = f"rack-{(index - 1) // per_rack + 1:02d}"
    resources = {"cpu": "192" if arch not in ARM_GPUS else "144", "memory": "2097112716Ki", "pods": "110",
                 "ephemeral-storage": "101569200Ki", GPU_RESOURCE: str(gpus)}
    nic, nics = nic_resource(body.platform, arch)
    if body.nics is not None:
        nic, nics = body.nics.resource, body.nics.count or nics
    if nic:
        resources[nic] = str(nics)
    spec: dict = {}
    taints = [{"key": t.key, **({"value": t.value} if t.value is not None else {}), "effect": t.effect}
              for t in body.taints if t.nodes is None or name in t.nodes]
    if taints:
        spec["taints"] = taints
    pid = provider_id(body.platform, name, index, body.seed)
    if pid:
        spec["providerID"] = pid
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {}},
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [ready_condition(True)],
            "nodeInfo": {"architecture": labels["kubernetes.io/arch"], "operatingSystem": "linux",
                         "kubeletVersion": "v1.33.2", "containerRuntimeVersion": "containerd://2.0.5"},
        },
    }


def ready_condition(ready: bool) -> dict:
    if ready:
        return {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    return {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
            "message": "container runtime network not ready: NetworkReady=false"}


def build_nodes(spec: SimulatedClusterSpec | ClusterBody) -> list[dict]:
    """All nodes, healthy (the cluster applies `unschedulable`/`not-ready` faults on its clock)."""
    body = spec.spec if isinstance(spec, SimulatedClusterSpec) else spec
    gpus = node_gpus(body)
    return [build_node(body, name, i, *gpus[name]) for i, name in enumerate(body.nodes.names(), start=1)]


def with_health(node: dict, state: str | None) -> dict:
    """A copy of `node` turned "Unschedulable" (cordoned) or "NotReady"; unchanged for None."""
    if state is None:
        return node
    node = {**node, "spec": dict(node["spec"]), "status": dict(node["status"])}
    taints = list(node["spec"].get("taints", []))
    if state == "Unschedulable":
        node["spec"]["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    else:
        node["status"]["conditions"] = [ready_condition(False)]
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    node["spec"]["taints"] = taints
    return node


__all__ = [
    "CLIQUE_LABEL",
    "DEVICE_NAMES",
    "GPU_RESOURCE",
    "HOSTNAME_LABEL",
    "ONPREM_NIC_RESOURCE",
    "PCI_DEVICE_IDS",
    "RACK_LABEL",
    "ZONE_LABEL",
    "build_node",
    "build_nodes",
    "clique_id",
    "nic_resource",
    "node_gpus",
    "product_label",
    "provider_id",
    "with_health",
]
