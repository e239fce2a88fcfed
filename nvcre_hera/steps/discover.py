"""`nvcre-step discover`: list nodes, apply the target filters, detect platform and GPU, exclude (and record)
nodes that cannot take part, and build each category's groups for its testScale.

Excluded nodes make the verdict INCOMPLETE (never a silent PASS): unschedulable or NotReady nodes, nodes of a
minority GPU architecture, nodes with fewer allocatable GPUs than the categories need.
"""

from __future__ import annotations

from typing import Any, Callable

from nvcre_hera.catalog import CatalogEntry, gpu_defaults, plan_entry, platform_settings
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
from nvcre_hera.platform import GPU_PRODUCT_LABEL, detect_architecture, detect_platform, node_labels, node_name
from nvcre_hera.steps.io import Outputs
from nvcre_hera.threshold_bounds import floor_of
from nvcre_hera.threshold_select import select_thresholds


def _architecture_filter(nodes: list[dict], product: str | None) -> tuple[list[dict], list[Exclusion]]:
    keep, excluded = [], []
    for node in nodes:
        own = node_labels(node).get(GPU_PRODUCT_LABEL)
        if product is None or own == product:
            keep.append(node)
        else:
            excluded.append(Exclusion(node_name(node), "MinorityArchitecture",
                                      f"GPU {own or 'unknown (no ' + GPU_PRODUCT_LABEL + ' label)'} differs from "
                                      f"the majority {product}"))
    return keep, excluded


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
                   gpu: str = "unknown") -> dict:
    thresholds, _ = select_thresholds(opts, gpu)  # the profile's floors for the GPU found, explicit ones win
    has_cliques = any(CLIQUE_LABEL in node_labels(n) for n in eligible)
    cliques = topology_domains(eligible) if has_cliques else None  # racks are no NVLink domain: √N chunks then
    config = {"strategy": opts.get("diagnoseStrategy", "adaptive"), "maxConcurrent": int(opts["maxConcurrent"]),
              "minGroupSize": int(opts["minGroupSize"]), "baselineGBps": None, "seed": 0,
              # the planner's pass line, from the CEL tree (the loader refused any threshold it cannot read)
              "threshold": floor_of(thresholds.get("busBandwidthGBps")),
              "thresholds": thresholds}
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
    arch, product = detect_architecture(selection.selected)
    nodes, minority = _architecture_filter(selection.selected, product)
    defaults = gpu_defaults(arch)
    needed = max([int(c["options"].get("gpusPerNode") or defaults["gpusPerNode"]) for c in plan["categories"]],
                 default=defaults["gpusPerNode"])
    nodes, short = _gpu_filter(nodes, needed)
    nodes, tainted = _taint_filter(nodes, target)
    detection = detect_nic(nodes, platform_settings(platform).get("nicResource") if nodes else None)
    nodes, no_nic = _nic_filter(nodes, plan["categories"], detection)
    excluded = selection.excluded + minority + short + tainted + no_nic
    summary_categories = []
    for cat in plan["categories"]:
        opts = cat["options"]
        gpn = int(opts.get("gpusPerNode") or defaults["gpusPerNode"])
        size = opts.get("nodesPerJob")
        scale = "full-scale" if opts["testScale"] == "diagnose" else opts["testScale"]
        groups = build_groups(nodes, scale, min(size, len(nodes)) if size else None) if nodes else []
        if opts["testScale"] == "diagnose":  # the planner chooses the groups; names would only weigh on etcd
            out.write(f"groups-{cat['index']}", [])
            out.write(f"setup-{cat['index']}", diagnose_setup(all_nodes, plan.get("target") or {}, nodes, opts,
                                                                    arch or "unknown"))
        else:
            out.write(f"groups-{cat['index']}", groups)
        nic, fabric_gap = nic_summary(cat, detection, platform) if nodes else ({}, None)
        gaps = [g for g in (scale_gap(cat, groups, len(nodes), gpn), fabric_gap) if g]
        summary_categories.append({"index": cat["index"], "testScale": opts["testScale"], "groups": len(groups),
                                   "nodesPerJob": max((len(g["nodes"]) for g in groups), default=0),
                                   "incomplete": "; ".join(gaps) or None, "nic": nic})
    summary = {
        "platform": platform, "gpu": arch or "unknown", "gpuProduct": product,
        "totalNodes": len(selection.selected) + len(selection.excluded),
        "selectedNodes": len(nodes),
        "excludedNodes": [e.to_dict() for e in sorted(excluded, key=lambda e: e.name)],
        "categories": summary_categories,
        "incomplete": incomplete,  # why the run cannot be complete whatever the tests show
    }
    out.write("summary", summary)
    out.write("platform", platform)
    out.write("gpu", arch or "unknown")
    out.write("nic", detection.to_param())
    log(f"discover: {len(nodes)} of {summary['totalNodes']} target nodes ({len(all_nodes)} in the cluster), "
        f"platform {platform}, GPU {product or 'unknown'}")
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
