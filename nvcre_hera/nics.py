"""Which extended resource gives a pod the nodes' scale-out NICs (RDMA devices), read from `status.allocatable`.

Without it a worker gets no `/dev/infiniband` (or EFA device) and NCCL falls back to TCP sockets. The names device
plugins advertise (sources in docs/placement.md):
- `rdma/<resourceName>`: Mellanox k8s-rdma-shared-dev-plugin (prefix `rdma` by default, e.g.
  `rdma/rdma_shared_device_a` in the NVIDIA network operator's NicClusterPolicy examples, `rdma/hca_shared_devices_a`
  in the plugin's own README);
- `nvidia.com/<resourceName>`: SR-IOV / host-device resources of the NVIDIA network operator (`nvidia.com/hostdev`),
  and `nvidia.com/mlnxnics` as NVCRE's Azure and OCI catalog fragments name it;
- `vpc.amazonaws.com/efa`: the AWS EFA device plugin.

Pure: plain Node dicts in, a `NicDetection` out. The choice (`nicResourceName` > detected > none) is `choose_nic`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from nvcre_hera.platform import node_name

# Exact names, and prefixes whose every resource is a NIC resource. `nvidia.com/gpu` is never one.
NIC_RESOURCES = frozenset({"nvidia.com/hostdev", "nvidia.com/mlnxnics", "vpc.amazonaws.com/efa"})
NIC_PREFIXES = ("rdma/",)
RDMA_FABRICS = frozenset({"ib", "efa", "roce"})  # catalog/_lib/platforms.yaml `fabric` values that need RDMA devices


def is_nic_resource(name: str) -> bool:
    return name in NIC_RESOURCES or name.startswith(NIC_PREFIXES)


def _count(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0  # a quantity such as "1k" is no device count we can use: not offered


def node_nics(node: dict) -> dict[str, int]:
    """The NIC resources one node offers, with their allocatable counts (zero counts left out)."""
    allocatable = ((node.get("status") or {}).get("allocatable")) or {}
    return {k: n for k, v in allocatable.items() if is_nic_resource(k) and (n := _count(v)) > 0}


@dataclass(frozen=True)
class NicDetection:
    """What the nodes offer: the resource chosen (None: none, or no single one), its smallest allocatable count,
    the nodes that lack it, and why, in one line."""

    resource: str | None
    allocatable: int = 0
    missing: list[str] = field(default_factory=list)
    message: str = ""

    def to_param(self) -> dict:
        """What the run step needs (the workflow parameter `nic`)."""
        return {"resource": self.resource, "allocatable": self.allocatable}


def detect_nic(nodes: list[dict], preferred: str | None = None) -> NicDetection:
    """The NIC resource most nodes offer. A tie goes to `preferred` (the platform's usual name) when it is among
    the tied; otherwise nothing is chosen and the message says which to set in `nicResourceName`."""
    offers = {node_name(n): node_nics(n) for n in nodes}
    counts = Counter(r for have in offers.values() for r in have)
    if not counts:
        return NicDetection(None, message=f"no node offers a NIC resource ({', '.join(sorted(NIC_RESOURCES))} "
                                          f"or rdma/*) in status.allocatable")
    top = max(counts.values())
    tied = sorted(r for r, c in counts.items() if c == top)
    if len(tied) > 1 and preferred not in tied:
        return NicDetection(None, message=f"the nodes offer several NIC resources ({', '.join(tied)}): set "
                                          f"nicResourceName to the one NCCL should use")
    resource = preferred if len(tied) > 1 else tied[0]
    have = [offers[n][resource] for n in offers if resource in offers[n]]
    missing = sorted(n for n in offers if resource not in offers[n])
    note = f"; missing on {len(missing)} node(s)" if missing else ""
    return NicDetection(resource, min(have), missing,
                        f"{resource} detected in status.allocatable on {len(have)} of {len(offers)} node(s){note}")


def choose_nic(options: dict, detected: dict | None, platform_default: str | None) -> tuple[str | None, str]:
    """(resource, source) for one category: `nicResourceName` wins ("nicResourceName"), then what discovery found
    ("detected"), else "none". `detected` is None only when no discovery ran (manifests rendered without a cluster,
    e.g. `nvcre validate`): then the platform's usual name stands in ("platform")."""
    if options.get("nicResourceName"):
        return str(options["nicResourceName"]), "nicResourceName"
    if detected is None:
        return (platform_default, "platform") if platform_default else (None, "none")
    if detected.get("resource"):
        return str(detected["resource"]), "detected"
    return None, "none"


__all__ = ["NIC_PREFIXES", "NIC_RESOURCES", "RDMA_FABRICS", "NicDetection", "choose_nic", "detect_nic",
           "is_nic_resource", "node_nics"]
