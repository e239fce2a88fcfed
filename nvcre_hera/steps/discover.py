"""`nvcre-step discover`: list nodes, apply the target filters, detect platform and GPU, exclude (and record)
nodes that cannot take part, and build each category's groups for its testScale.

Excluded nodes make the verdict INCOMPLETE (never a silent PASS): unschedulable or NotReady nodes, nodes of a
minority GPU architecture (only with `architecture: majority`; by default every architecture is grouped apart and
certified), nodes with fewer allocatable GPUs than the categories need.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from nvcre_hera.catalog import CatalogEntry, architecture_of, gpu_defaults, plan_entry, platform_settings
from nvcre_hera.cluster.base import Cluster
from nvcre_hera.grouping import (
    CLIQUE_LABEL,
    Exclusion,
    allocatable_gpus,
    build_groups,
    requested_exclusions,
    select_nodes,
    topology_domains,
    unmatched_target,
)
from nvcre_hera.jobs.base import tolerated, tolerations
from nvcre_hera.nics import RDMA_FABRICS, NicDetection, choose_nic, detect_nic
from nvcre_hera.nodeindex import make_setup, target_order
from nvcre_hera.platform import (
    GPU_PRODUCT_LABEL,
    detect_architecture,
    detect_gpu_product,
    detect_platform,
    node_labels,
    node_name,
    split_by_architecture,
)
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.screen import screens_for
from nvcre_hera.threshold_bounds import floor_of
from nvcre_hera.threshold_select import select_thresholds


@dataclass
class _Arch:
    """One GPU architecture's share of the target: its nodes are grouped, run and judged apart from the others."""

    gpu: str | None  # architecture key (h100), None when unknown
    product: str | None  # the nvidia.com/gpu.product most of its nodes carry
    nodes: list[dict]


def _architecture_filter(nodes: list[dict], product: str | None) -> tuple[list[dict], list[Exclusion]]:
    """`architecture: majority`: the nodes of the majority product; the rest excluded. A tie is said as one: no half
    of a 50/50 cluster is a minority."""
    keep, excluded = [], []
    counts = Counter(node_labels(n).get(GPU_PRODUCT_LABEL) for n in nodes)
    for node in nodes:
        own = node_labels(node).get(GPU_PRODUCT_LABEL)
        if product is None or own == product:
            keep.append(node)
        elif own and counts[own] == counts[product]:
            excluded.append(Exclusion(node_name(node), "ArchitectureTie",
                                      f"GPU {own} ties with {product} ({counts[own]} nodes each); architecture: "
                                      f"majority tests one, the first by node name (architecture: all certifies "
                                      f"both)"))
        else:
            excluded.append(Exclusion(node_name(node), "MinorityArchitecture",
                                      f"GPU {own or 'unknown (no ' + GPU_PRODUCT_LABEL + ' label)'} differs from "
                                      f"the majority {product} (architecture: all certifies every architecture)"))
    return keep, excluded


def _architecture_sets(nodes: list[dict], mode: str) -> tuple[list[_Arch], list[Exclusion]]:
    """`all` (the default): one set per architecture, largest first; a node without a gpu.product label, beside
    labeled ones, belongs to none and is excluded. `majority`: the majority product only."""
    if mode == "majority":
        arch, product = detect_architecture(nodes)
        keep, excluded = _architecture_filter(nodes, product)
        return [_Arch(arch, product, keep)], excluded
    sets = split_by_architecture(nodes)
    if not sets or (len(sets) == 1 and sets[0][0] is None):  # no node, or none labeled: one set, as before
        return [_Arch(None, None, sets[0][1] if sets else [])], []
    out, excluded = [], []
    for key, members in sets:
        if key is None:
            excluded += [Exclusion(node_name(n), "UnknownArchitecture",
                                   f"no {GPU_PRODUCT_LABEL} label: its architecture (and so its groups and "
                                   f"thresholds) is unknown") for n in members]
        else:
            out.append(_Arch(architecture_of(key), detect_gpu_product(members), members))
    return out, excluded


def _gpu_filter(nodes: list[dict], needed: int) -> tuple[list[dict], list[Exclusion]]:
    keep, excluded = [], []
    for node in nodes:
        have = allocatable_gpus(node)
        if have >= needed:
            keep.append(node)
        else:
            excluded.append(Exclusion(node_name(node), "InsufficientGPUs",
                                      f"{have} allocatable nvidia.com/gpu, the categories need {needed}"))
    return keep, excluded


def _taint_filter(nodes: list[dict], target: dict) -> tuple[list[dict], list[Exclusion]]:
    """Nodes with a NoSchedule/NoExecute taint the test pods do not tolerate (jobs.base.tolerations: the GPU taint
    and the target's taintSelectors) could never run them: excluded and recorded, not left to time out."""
    tols = tolerations(target)
    keep, excluded = [], []
    for node in nodes:
        bad = [t for t in (node.get("spec") or {}).get("taints") or []
               if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(t, tols)]
        if bad:
            shown = ", ".join(f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                              for t in bad)
            excluded.append(Exclusion(node_name(node), "UntoleratedTaint",
                                      f"taint {shown} is not among the target's taintSelectors (select it "
                                      f"there to test this node)"))
        else:
            keep.append(node)
    return keep, excluded


def _requests_nic(entry: CatalogEntry, opts: dict) -> bool:
    """Whether this category's workers ask for a NIC resource (the MPIJob worker's rule: mpi/torch, device
    plugin access, at least one NIC a node)."""
    nics = opts.get("mlnxPerNode")
    return (entry.framework in ("mpi", "torch") and (opts.get("rdmaDeviceAccess") or "devicePlugin") == "devicePlugin"
            and (nics is None or int(nics) > 0))


def _crosses_nics(entry: CatalogEntry, scale: str) -> bool:
    """Whether the test's traffic leaves the node through its NICs (loopback does by design; per-group tests do
    unless they run inside one node)."""
    if entry.parser not in ("nccl", "training") or entry.test == "loopback_nvswitch":
        return False
    return entry.test == "loopback" or (entry.scope == "per-group" and scale != "intra-node")


def _nic_filter(nodes: list[dict], cats: list[dict], detection: NicDetection) -> tuple[list[dict], list[Exclusion]]:
    """Nodes without the detected NIC resource, when a category will request it: its pods could not schedule."""
    uses = any(_requests_nic(plan_entry(c), c["options"]) and not c["options"].get("nicResourceName") for c in cats)
    if not (uses and detection.resource and detection.missing):
        return nodes, []
    missing = set(detection.missing)
    offering = len(nodes) - len(missing)
    return ([n for n in nodes if node_name(n) not in missing],
            [Exclusion(name, "NoNICResource", f"offers no {detection.resource} in status.allocatable ({offering} of "
                                              f"{len(nodes)} nodes do, and the tests request it)")
             for name in sorted(missing)])


def nic_summary(cat: dict, detection: NicDetection, platform: str) -> tuple[dict, str | None]:
    """The category's NIC resource and where it came from, for the report; and why the category cannot certify
    the fabric when the platform's NCCL should run over RDMA and no resource gives the pods its devices."""
    entry, opts = plan_entry(cat), cat["options"]
    settings = platform_settings(platform)
    resource, source = choose_nic(opts, detection.to_param(), settings.get("nicResource"))
    access = opts.get("rdmaDeviceAccess") or "devicePlugin"
    info: dict = {"resource": resource if _requests_nic(entry, opts) else None, "source": source}
    if access == "hostPath":
        info.update(resource=None, source="hostPath")
    elif not _requests_nic(entry, opts):
        info["source"] = "not requested"
    if source == "none" and detection.message:
        info["message"] = detection.message
    fabric = settings.get("fabric")
    if (info["source"] == "none" and fabric in RDMA_FABRICS and _crosses_nics(entry, opts["testScale"])
            and opts.get("transportCheck", True)):
        return info, (f"platform {platform} runs NCCL over {fabric}, but no RDMA device resource was found "
                      f"({detection.message}): the workers would fall back to TCP sockets, so this test cannot "
                      f"certify the fabric; set nicResourceName or rdmaDeviceAccess: hostPath")
    return info, None


def diagnose_setup(all_nodes: list[dict], target: dict, eligible: list[dict], opts: dict,
                   gpu: str | None = None, parser: str = "") -> dict:
    has_cliques = any(CLIQUE_LABEL in node_labels(n) for n in eligible)
    cliques = topology_domains(eligible) if has_cliques else None  # racks are no NVLink domain: √N chunks then
    thresholds, _ = select_thresholds(opts, gpu or "")
    repeats = int(opts.get("repeatCount") or 1)
    config = {"strategy": opts.get("diagnoseStrategy", "adaptive"), "maxConcurrent": int(opts["maxConcurrent"]),
              "minGroupSize": int(opts["minGroupSize"]), "baselineGBps": None, "seed": 0,
              # the planner's pass line, from the CEL tree (the loader refused any threshold it cannot read)
              "threshold": floor_of(thresholds.get("busBandwidthGBps")),
              "thresholds": thresholds,
              # single-node screens the planner may run first (steps/screen.py): only an nccl bandwidth compares
              "screens": screens_for(opts, parser),
              # each test runs repeatCount times and its worst run counts: its value dips more often than one run's
              **({"repeats": repeats} if repeats > 1 else {})}
    return make_setup(target_order(all_nodes, target), sorted(node_name(n) for n in eligible), cliques, config,
                      target)


def scale_gap(cat: dict, groups: list[dict], node_count: int, gpus_per_node: int) -> str | None:
    """Why this category's scale cannot exercise what it names, or None. A per-group test at full-scale, intra-rack
    or diagnose is meant to cross the network between nodes: a group of one node never does (it measures NVLink
    only), and a group with fewer GPUs than the workload needs cannot run it as meant. Such a run is INCOMPLETE."""
    entry = plan_entry(cat)
    scale = cat["options"]["testScale"]
    if entry.scope != "per-group" or scale == "intra-node":
        return None
    if scale == "diagnose":
        return None if node_count >= 2 else (f"diagnose needs at least 2 nodes to compare, the target has "
                                             f"{node_count}")
    if not groups:
        return None
    small = [g for g in groups if len(g["nodes"]) < 2]
    if small:
        names = ", ".join(f"{g['id']} ({g['nodes'][0]})" for g in small[:4]) + (" …" if len(small) > 4 else "")
        return (f"{scale}: {len(small)} of {len(groups)} group(s) have a single node ({names}): no job crossed the "
                f"network between nodes, so the {scale} test did not run as named (it needs at least 2 nodes a group)")
    if entry.min_gpus:
        short = [g for g in groups if len(g["nodes"]) * gpus_per_node < entry.min_gpus]
        if short:
            return (f"{scale}: group {short[0]['id']} has {len(short[0]['nodes']) * gpus_per_node} GPUs, "
                    f"{entry.key} needs at least {entry.min_gpus}")
    return None


def _category_groups(cat: dict, sets: list[_Arch]) -> tuple[list[dict], dict[str, dict]]:
    """A category's groups, built architecture by architecture (a job across H100 and A100 nodes would measure
    the slower one); with several architectures each group is tagged with its `gpu` and named `<gpu>-g<i>`, and
    each architecture's share is summarized apart."""
    opts = cat["options"]
    size = opts.get("nodesPerJob")
    scale = "full-scale" if opts["testScale"] == "diagnose" else opts["testScale"]
    multi = len(sets) > 1
    groups: list[dict] = []
    per_gpu: dict[str, dict] = {}
    for part in sets:
        gpu = part.gpu or "unknown"
        gpn = int(opts.get("gpusPerNode") or gpu_defaults(part.gpu)["gpusPerNode"])
        own = build_groups(part.nodes, scale, min(size, len(part.nodes)) if size else None) if part.nodes else []
        if multi:
            own = [{**g, "id": f"{gpu}-{g['id']}", "gpu": gpu} for g in own]
        if opts["testScale"] == "diagnose" and multi and part is not sets[0]:
            gap: str | None = (f"diagnose localizes within one architecture: it ran on the {sets[0].gpu} nodes; "
                               f"these {len(part.nodes)} {gpu} nodes were not diagnosed (give them their own "
                               f"Certification, target nodeSelector {GPU_PRODUCT_LABEL})")
            own = []
        else:
            gap = scale_gap(cat, own, len(part.nodes), gpn)
        groups += own
        per_gpu[gpu] = {"groups": len(own), "nodesPerJob": max((len(g["nodes"]) for g in own), default=0),
                        "incomplete": gap}
    return groups, per_gpu


def discover(plan: dict[str, Any], cluster: Cluster, out: Outputs, log: Callable[[str], None]) -> int:
    all_nodes = cluster.list_nodes()
    target = plan.get("target") or {}
    selection = select_nodes(all_nodes, target)
    selection.excluded += requested_exclusions(all_nodes, target)
    incomplete = [] if selection.selected or selection.excluded else [unmatched_target(all_nodes, target)]
    try:
        platform = detect_platform(selection.selected) if selection.selected else "unknown"
    except ValueError as exc:
        log(f"discover: {exc}")
        return 1
    sets, other_arch = _architecture_sets(selection.selected, plan.get("architecture") or "all")
    short, tainted = [], []
    for part in sets:  # each architecture needs what its own defaults ask for
        defaults = gpu_defaults(part.gpu)
        needed = max([int(c["options"].get("gpusPerNode") or defaults["gpusPerNode"]) for c in plan["categories"]],
                     default=defaults["gpusPerNode"])
        part.nodes, gone = _gpu_filter(part.nodes, needed)
        short += gone
        part.nodes, gone = _taint_filter(part.nodes, target)
        tainted += gone
    nodes = sorted((n for part in sets for n in part.nodes), key=node_name)
    detection = detect_nic(nodes, platform_settings(platform).get("nicResource") if nodes else None)
    nodes, no_nic = _nic_filter(nodes, plan["categories"], detection)
    kept = {node_name(n) for n in nodes}
    for part in sets:
        part.nodes = [n for n in part.nodes if node_name(n) in kept]
    excluded = selection.excluded + other_arch + short + tainted + no_nic
    multi = len(sets) > 1
    summary_categories = []
    for cat in plan["categories"]:
        opts = cat["options"]
        groups, per_gpu = _category_groups(cat, sets)
        if opts["testScale"] == "diagnose":  # the planner chooses the groups; names would only weigh on etcd
            out.write(f"groups-{cat['index']}", [])
            setup = diagnose_setup(all_nodes, plan.get("target") or {}, sets[0].nodes, opts, sets[0].gpu,
                                   plan_entry(cat).parser)
            out.write(f"setup-{cat['index']}", setup)
        else:
            out.write(f"groups-{cat['index']}", groups)
        nic, fabric_gap = nic_summary(cat, detection, platform) if nodes else ({}, None)
        gaps = [f"{gpu}: {p['incomplete']}" if multi else p["incomplete"]
                for gpu, p in per_gpu.items() if p["incomplete"]] + ([fabric_gap] if fabric_gap else [])
        if multi:
            for p in per_gpu.values():
                p["incomplete"] = "; ".join(g for g in (p["incomplete"], fabric_gap) if g) or None
        summary_categories.append({"index": cat["index"], "testScale": opts["testScale"], "groups": len(groups),
                                   "nodesPerJob": max((len(g["nodes"]) for g in groups), default=0),
                                   "incomplete": "; ".join(gaps) or None, "nic": nic,
                                   **({"perGpu": per_gpu} if multi else {})})
    first = sets[0] if sets else _Arch(None, None, [])
    summary = {
        "platform": platform,
        "gpu": "+".join(p.gpu or "unknown" for p in sets) if multi else first.gpu or "unknown",
        "gpuProduct": "+".join(p.product or "unknown" for p in sets) if multi else first.product,
        "totalNodes": len(selection.selected) + len(selection.excluded),
        "selectedNodes": len(nodes),
        "excludedNodes": [e.to_dict() for e in sorted(excluded, key=lambda e: e.name)],
        "categories": summary_categories,
        "incomplete": incomplete,  # why the run cannot be complete whatever the tests show
        # one entry per architecture, each certified apart (only when there are several)
        **({"architectures": [{"gpu": p.gpu or "unknown", "gpuProduct": p.product, "selectedNodes": len(p.nodes),
                               "nodes": sorted(node_name(n) for n in p.nodes)} for p in sets]} if multi else {}),
    }
    out.write("summary", summary)
    out.write("platform", platform)
    out.write("gpu", first.gpu or "unknown")  # the run step's default; a tagged group names its own
    out.write("nic", detection.to_param())
    log(f"discover: {len(nodes)} of {summary['totalNodes']} target nodes ({len(all_nodes)} in the cluster), "
        f"platform {platform}, GPU {summary['gpuProduct'] or 'unknown'}")
    if multi:
        log("discover: architectures, each grouped and judged apart: " + ", ".join(
            f"{p.gpu or 'unknown'} ({len(p.nodes)} nodes)" for p in sets))
    log(f"discover: NIC resource: {detection.message}")
    for e in excluded:
        log(f"discover: excluded {e.name}: {e.reason} ({e.message})")
    for message in incomplete + [c["incomplete"] for c in summary_categories if c["incomplete"]]:
        log(f"discover: INCOMPLETE: {message}")
    for c in summary_categories:
        log(f"discover: category {c['index']}: {c['groups']} group(s) of up to {c['nodesPerJob']} node(s), "
            f"{c['testScale']}")
    return 0


__all__ = ["discover"]
