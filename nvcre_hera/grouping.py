"""Which nodes are tested, and in which groups (NVCRE's target filters and testScale grouping).

Pure functions over Node dicts. Topology (NVLink cliques, racks) is a networkx graph: nodes sharing a clique or rack
label are connected, and each connected component is one domain.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from nvcre_hera.platform import node_labels, node_name

CLIQUE_LABEL = "nvidia.com/gpu.clique"
# Rack labels seen in the field, tried in order when nodes carry no NVLink clique label.
RACK_LABELS = ("nvcre-hera.dev/rack", "topology.kubernetes.io/rack", "nvidia.com/gpu.rack")
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass
class Exclusion:
    name: str
    reason: str  # Unschedulable | NotReady | MinorityArchitecture | InsufficientGPUs
    message: str

    def to_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason, "message": self.message}


@dataclass
class Selection:
    selected: list[dict] = field(default_factory=list)
    excluded: list[Exclusion] = field(default_factory=list)


def _matches_expression(labels: dict[str, str], expr: dict) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ValueError(f"unknown operator {op}")


def _has_taint(node: dict, selector: dict) -> bool:
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("key") != selector["key"]:
            continue
        if selector.get("value") is not None and taint.get("value") != selector["value"]:
            continue
        if selector.get("effect") is not None and taint.get("effect") != selector["effect"]:
            continue
        return True
    return False


def matches_target(node: dict, target: dict) -> bool:
    """nodeSelector AND matchExpressions AND nodeNames AND taintSelectors (target as the spec's camelCase dict)."""
    labels = node_labels(node)
    if any(labels.get(k) != v for k, v in (target.get("nodeSelector") or {}).items()):
        return False
    if not all(_matches_expression(labels, e) for e in target.get("matchExpressions") or []):
        return False
    names = target.get("nodeNames") or []
    if names and node_name(node) not in names:
        return False
    return all(_has_taint(node, t) for t in target.get("taintSelectors") or [])


def is_ready(node: dict) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def allocatable_gpus(node: dict) -> int:
    raw = ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, "0")
    try:
        return int(str(raw))
    except ValueError:
        return 0


def select_nodes(nodes: list[dict], target: dict) -> Selection:
    """Target filters, then health: unschedulable (unless includeUnschedulable) and NotReady nodes are excluded."""
    out = Selection()
    for node in sorted(nodes, key=node_name):
        if not matches_target(node, target):
            continue
        name = node_name(node)
        if (node.get("spec") or {}).get("unschedulable") and not target.get("includeUnschedulable"):
            out.excluded.append(Exclusion(name, "Unschedulable", "node is cordoned (spec.unschedulable)"))
        elif not is_ready(node):
            out.excluded.append(Exclusion(name, "NotReady", "node is not Ready"))
        else:
            out.selected.append(node)
    return out


def topology_domains(nodes: list[dict]) -> list[list[str]]:
    """NVLink cliques (or racks when no clique labels), as sorted lists of node names; unlabeled nodes alone."""
    graph = nx.Graph()
    graph.add_nodes_from(node_name(n) for n in nodes)
    for label in (CLIQUE_LABEL, *RACK_LABELS):
        by_value: dict[str, list[str]] = {}
        for node in nodes:
            value = node_labels(node).get(label)
            if value:
                by_value.setdefault(value, []).append(node_name(node))
        if by_value:
            for members in by_value.values():
                nx.add_path(graph, members)
            break
    return sorted((sorted(c) for c in nx.connected_components(graph)), key=lambda c: c[0])


def chunk_groups(names: list[str], size: int) -> list[list[str]]:
    """Groups of `size`; leftover nodes form an overflow group topped up with nodes of the first group (NVCRE)."""
    if size >= len(names):
        return [list(names)] if names else []
    groups = [names[i:i + size] for i in range(0, len(names) - len(names) % size, size)]
    rest = names[len(groups) * size:]
    if rest:
        groups.append(rest + groups[0][: size - len(rest)])
    return groups


def build_groups(nodes: list[dict], test_scale: str, nodes_per_job: int | None = None) -> list[dict]:
    """Groups for one category: [{"id": "g0", "nodes": [...]}]."""
    names = sorted(node_name(n) for n in nodes)
    if test_scale == "intra-node":
        raw = [[n] for n in names]
    elif test_scale == "intra-rack":
        raw = topology_domains(nodes)
    elif test_scale in ("full-scale", "diagnose"):
        raw = chunk_groups(names, nodes_per_job or len(names))
    else:
        raise ValueError(f"unknown testScale {test_scale}")
    return [{"id": f"g{i}", "nodes": group} for i, group in enumerate(raw) if group]


__all__ = [
    "CLIQUE_LABEL",
    "Exclusion",
    "RACK_LABELS",
    "Selection",
    "allocatable_gpus",
    "build_groups",
    "chunk_groups",
    "is_ready",
    "matches_target",
    "select_nodes",
    "topology_domains",
]
