"""Platform and GPU-architecture detection from Node objects (NVCRE `workflow_detect.go`, condensed).

Platform: the `spec.providerID` prefix (aws://, gce://, azure://, ocid1.), otherwise onprem; mixed platforms are an
error. Architecture: the majority `nvidia.com/gpu.product`; ties go to the earliest node name; unlabeled nodes do
not vote (`architecture: majority`); or every architecture apart (`split_by_architecture`, the default `all`).
Pure functions over Node dicts.
"""

from __future__ import annotations

from collections import Counter

from nvcre_hera.catalog import architecture_of, platforms

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def node_name(node: dict) -> str:
    return node["metadata"]["name"]


def node_labels(node: dict) -> dict[str, str]:
    return node.get("metadata", {}).get("labels") or {}


def platform_of(node: dict) -> str:
    provider = (node.get("spec") or {}).get("providerID") or ""
    for name, settings in platforms().items():
        prefix = settings.get("providerIDPrefix")
        if prefix and provider.startswith(prefix):
            return name
    return "onprem"


def detect_platform(nodes: list[dict]) -> str:
    """One platform for the whole target set; a mix (aws + gcp nodes) cannot be certified as one cluster."""
    found = sorted({platform_of(n) for n in nodes})
    if len(found) > 1:
        raise ValueError(f"target nodes span several platforms: {', '.join(found)}")
    return found[0] if found else "onprem"


def detect_gpu_product(nodes: list[dict]) -> str | None:
    """The majority gpu.product; ties go to the product of the earliest node name."""
    votes = Counter()
    first_seen: dict[str, str] = {}
    for node in sorted(nodes, key=node_name):
        product = node_labels(node).get(GPU_PRODUCT_LABEL)
        if product:
            votes[product] += 1
            first_seen.setdefault(product, node_name(node))
    if not votes:
        return None
    return min(votes, key=lambda p: (-votes[p], first_seen[p]))


def detect_architecture(nodes: list[dict]) -> tuple[str | None, str | None]:
    """(architecture key such as h100, the product label it came from)."""
    product = detect_gpu_product(nodes)
    return architecture_of(product), product


def architecture_key(node: dict) -> str | None:
    """The node's architecture (h100), else its product label when no architecture matches, else None (no label)."""
    product = node_labels(node).get(GPU_PRODUCT_LABEL)
    return architecture_of(product) or product


def split_by_architecture(nodes: list[dict]) -> list[tuple[str | None, list[dict]]]:
    """Nodes by architecture_key, the largest set first (ties: the earliest node name), unlabeled nodes last."""
    sets: dict[str | None, list[dict]] = {}
    for node in sorted(nodes, key=node_name):
        sets.setdefault(architecture_key(node), []).append(node)
    return sorted(sets.items(), key=lambda kv: (kv[0] is None, -len(kv[1]), node_name(kv[1][0])))


__all__ = [
    "GPU_PRODUCT_LABEL",
    "architecture_key",
    "detect_architecture",
    "detect_gpu_product",
    "detect_platform",
    "node_labels",
    "node_name",
    "platform_of",
    "split_by_architecture",
]
