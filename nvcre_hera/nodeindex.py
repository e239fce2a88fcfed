"""Node indices instead of names, for diagnose: the Workflow stores every parameter it passes, so a 4096-node
diagnose passes `[[0, 4096]]`, not 4096 names, down its recursion.

Index i means the i-th node (by name) among those matching `spec.target`, whatever their health, so the order does
not shift when a node is cordoned mid-run. Discovery records a fingerprint of that list; a step that resolves
indices checks it, and refuses to guess if nodes were added or removed since.
"""

from __future__ import annotations

import hashlib

from nvcre_hera.diagnose.nodesets import from_nodes, to_nodes
from nvcre_hera.grouping import matches_target
from nvcre_hera.platform import node_name


def target_order(nodes: list[dict], target: dict) -> list[str]:
    return sorted(node_name(n) for n in nodes if matches_target(n, target))


def fingerprint(names: list[str]) -> str:
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def make_setup(order: list[str], eligible: list[str], cliques: list[list[str]] | None, config: dict,
               target: dict) -> dict:
    """What every diagnose step needs, compactly: eligible nodes and cliques as index ranges of `order`."""
    position = {name: i for i, name in enumerate(order)}
    elig = [position[n] for n in eligible]
    local = {g: i for i, g in enumerate(sorted(elig))}  # planner index -> position in `order`
    groups = None
    if cliques:  # the planner takes cliques as lists of its own indices
        groups = [sorted(local[position[n]] for n in c if position.get(n) in local) for c in cliques]
        groups = [g for g in groups if g]
    return {"fingerprint": fingerprint(order), "eligible": from_nodes(elig), "target": target,
            "config": {**config, "nodeCount": len(elig), "cliques": groups}}


def resolve(indices: list[int], setup: dict, nodes: list[dict]) -> list[str]:
    """Planner indices -> node names, checking that the node list is still the one discovery saw."""
    order = target_order(nodes, setup["target"])
    if fingerprint(order) != setup["fingerprint"]:
        raise ValueError("the target's node list changed since discovery (nodes added or removed): "
                         "cannot map diagnose indices to nodes")
    eligible = to_nodes(setup["eligible"])
    return [order[eligible[i]] for i in indices]


__all__ = ["fingerprint", "make_setup", "resolve", "target_order"]
