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
    # Unschedulable | NotReady | MinorityArchitecture | ArchitectureTie | UnknownArchitecture | InsufficientGPUs |
    # UntoleratedTaint | NoNICResource | NotFound | NotTargeted
    reason: str
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


def _filters(target: dict) -> list[tuple[str, object]]:
    """The target's filters one by one, each with a label a user recognises in the spec."""
    out: list[tuple[str, object]] = []
    for key, value in (target.get("nodeSelector") or {}).items():
        out.append((f"nodeSelector {key}={value}", lambda n, k=key, v=value: node_labels(n).get(k) == v))
    for i, e in enumerate(target.get("matchExpressions") or []):
        values = f" {e.get('values')}" if e.get("values") else ""
        out.append((f"matchExpressions[{i}] ({e['key']} {e['operator']}{values})",
                    lambda n, e=e: _matches_expression(node_labels(n), e)))
    if target.get("nodeNames"):
        out.append(("nodeNames", lambda n: node_name(n) in target["nodeNames"]))
    for i, t in enumerate(target.get("taintSelectors") or []):
        out.append((f"taintSelectors[{i}] ({t['key']})", lambda n, t=t: _has_taint(n, t)))
    return out


def unmatched_target(nodes: list[dict], target: dict) -> str:
    """Why a target matched no node: `target matched 0 of N nodes: <filter> removed K`, filter by filter, so the
    user sees which one emptied the selection."""
    left, steps = list(nodes), []
    for label, keep in _filters(target):
        before = len(left)
        left = [n for n in left if keep(n)]  # type: ignore[operator]
        steps.append(f"{label} removed {before - len(left)}")
        if not left:
            break
    why = ", then ".join(steps) if steps else "no node in the cluster"
    return f"target matched 0 of {len(nodes)} nodes: {why}"


def requested_exclusions(nodes: list[dict], target: dict) -> list[Exclusion]:
    """Each name in `target.nodeNames` that is not targeted: no such node (NotFound), or another filter of the
    target removed it (NotTargeted, naming the filter). A name the user asked for never silently disappears."""
    by_name = {node_name(n): n for n in nodes}
    out = []
    for name in dict.fromkeys(target.get("nodeNames") or []):
        node = by_name.get(name)
        if node is None:
            out.append(Exclusion(name, "NotFound", "requested in target.nodeNames, but no such node exists"))
            continue
        for label, keep in _filters(target):
            if not keep(node):  # type: ignore[operator]
                out.append(Exclusion(name, "NotTargeted", f"requested in target.nodeNames, but {label} excludes it"))
                break
    return out


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
    "requested_exclusions",
    "select_nodes",
    "unmatched_target",
    "topology_domains",
]
