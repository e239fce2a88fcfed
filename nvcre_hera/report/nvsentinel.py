"""The failed and succeeded node lists as the ConfigMaps NVSentinel's `nvcre-certification-monitor` reads.

What the monitor decodes (NVIDIA/NVSentinel `health-monitors/nvcre-certification-monitor/pkg/nvcre/nvcre.go`,
DecodeFailedNodes / DecodeSucceededNodes, see docs/outputs.md for lines):
- `binaryData["failed-nodes.json.gz"]`: gzip of a JSON array of `{name, reason, message}` (message optional);
- `binaryData["succeeded-nodes.csv.gz"]`: gzip of comma-separated node names (split on ",", spaces trimmed).
It raises `NVCRECertFailed` per (node, variant, reason) with error code `<variant>/<reason>`
(`pkg/controller/helpers.go`, TupleKey.ErrorCode), so each row's `reason` is NVCRE's node reason
(`judge.NVCRE_NODE_REASON`: HardwareFailureDetected, ThresholdViolation, WorkloadFailed), never our finer ones.

What NVCRE writes, mirrored here: a failed-nodes ConfigMap for a failed category, and a succeeded-nodes ConfigMap
only for a category that passed ("a failed Workflow records nothing": cluster-readiness-engine
docs/designs/068-group-nodes-compressed-configmap.md); rows sorted by name (pkg/noderesults/helper.go). Nodes of a
failed group that no evidence blames are in neither list. A category with no evidence gets neither ConfigMap.

The ConfigMaps are labelled with the certification and the workflow and owned by the Workflow (garbage-collected
with it). Pure: a report in, ConfigMap dicts (binaryData base64, as the API takes it) out.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any

from nvcre_hera.cluster.base import MANAGED_BY_LABEL, MANAGED_BY_VALUE, WORKFLOW_LABEL
from nvcre_hera.judge import NVCRE_NODE_REASON

FAILED_NODES_KEY = "failed-nodes.json.gz"
SUCCEEDED_NODES_KEY = "succeeded-nodes.csv.gz"
CERTIFICATION_LABEL = "nvcre-hera.dev/certification"
CATEGORY_ANNOTATION = "nvcre-hera.dev/category"
INDEX_ANNOTATION = "nvcre-hera.dev/category-index"
GPU_ANNOTATION = "nvcre-hera.dev/gpu"  # only in a run over several GPU architectures (one map per category and GPU)
KIND_LABEL = "nvcre-hera.dev/node-results"  # failed | succeeded
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]")


def _label_value(text: str) -> str:
    """A label value (<= 63 chars of [A-Za-z0-9_.-], alphanumeric at both ends); the full text is an annotation."""
    value = _LABEL_VALUE.sub("-", str(text))[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def _gzip(data: bytes) -> str:
    """Deterministic (mtime 0) gzip, base64 for `binaryData`."""
    return base64.b64encode(gzip.compress(data, mtime=0)).decode()


def failed_rows(category: dict) -> list[dict]:
    """The category's blamed nodes as NVCRE FailedNode rows, one per (name, NVCRE reason), sorted by name."""
    rows: dict[tuple[str, str], list[str]] = {}
    groups = {g.get("name"): g for g in category.get("groups") or []}
    for failed in category.get("failedGroups") or []:
        blamed = [str(n) for n in failed.get("blamedNodes") or []]
        if not blamed:
            continue  # an infrastructure fault or an unresolved group blames no node
        reasons = (groups.get(failed.get("name")) or {}).get("reasons") or \
            [{"node": None, "reason": failed.get("reason"), "message": failed.get("message")}]
        for r in reasons:
            for node in [str(r["node"])] if r.get("node") else blamed:
                reason = NVCRE_NODE_REASON.get(str(r.get("reason")), "WorkloadFailed")
                msgs = rows.setdefault((node, reason), [])
                if r.get("message") and r["message"] not in msgs:
                    msgs.append(str(r["message"]))
    return [{"name": name, "reason": reason, **({"message": "; ".join(msgs)} if msgs else {})}
            for (name, reason), msgs in sorted(rows.items())]


def succeeded_nodes(category: dict) -> list[str]:
    """Every named node of a category that passed, sorted and deduplicated; none for any other status."""
    if category.get("status") != "Passed":
        return []
    return sorted({str(n) for g in category.get("groups") or [] for n in g.get("nodes") or []})


def configmap_name(workflow: str, index: int, variant: str, kind: str) -> str:
    """`<workflow>-c<index>-<variant>-<failed|succeeded>-nodes`, cut to a DNS subdomain's 253 characters."""
    slug = re.sub(r"[^a-z0-9-]+", "-", str(variant).lower()).strip("-")
    suffix = f"-c{index}-{slug}-{kind}-nodes"
    return (workflow[: 253 - len(suffix)] + suffix).lower()


def result_configmaps(report: dict, *, workflow_name: str, namespace: str,
                      workflow_uid: str | None = None) -> list[dict]:
    """The ConfigMaps for every category with evidence: failed-nodes for a failed one (when it blames a node),
    succeeded-nodes for a passed one."""
    out = []
    for position, cat in enumerate(report.get("categories") or []):
        # a run over several GPU architectures repeats a category per GPU: its plan index and GPU name the map
        index = int(cat.get("index", position))
        variant = f"{cat.get('variant')}-{cat['gpu']}" if cat.get("gpu") else str(cat.get("variant"))
        key = f"{cat.get('domain')}/{cat.get('variant')}"
        rows = failed_rows(cat) if cat.get("status") == "Failed" else []
        passed = succeeded_nodes(cat)
        for kind, data_key, payload in (("failed", FAILED_NODES_KEY, rows), ("succeeded", SUCCEEDED_NODES_KEY, passed)):
            if not payload:
                continue
            raw = (json.dumps(payload, separators=(",", ":"), ensure_ascii=False) if kind == "failed"
                   else ",".join(payload)).encode()
            meta: dict[str, Any] = {
                "name": configmap_name(workflow_name, index, variant, kind),
                "namespace": namespace,
                "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE, WORKFLOW_LABEL: _label_value(workflow_name),
                           CERTIFICATION_LABEL: _label_value(str(report.get("name"))), KIND_LABEL: kind},
                "annotations": {CATEGORY_ANNOTATION: key, INDEX_ANNOTATION: str(index),"nvcre-hera.dev/result": str(report.get("result")),
                                CERTIFICATION_LABEL: str(report.get("name")), WORKFLOW_LABEL: workflow_name,
                                **({GPU_ANNOTATION: str(cat["gpu"])} if cat.get("gpu") else {})},
            }
            if workflow_uid:
                meta["ownerReferences"] = [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                                            "name": workflow_name, "uid": workflow_uid}]
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                        "binaryData": {data_key: _gzip(raw)}})
    return out


def category_statuses(report: dict, configmaps: list[dict], workflow_name: str) -> list[dict]:
    """`status.categoryStatuses[]` of an NVCRE Certification pointing at these ConfigMaps (the fields the monitor
    reads: domain, variant, status Succeeded|Failed, failedNodesRef, succeededNodesRef), for whoever keeps a
    Certification object for NVSentinel to list; nvcre-hera itself creates none (docs/outputs.md). An Incomplete
    category is left out: NVCRE has no such category status, and the monitor acts only on Succeeded and Failed."""
    by_index: dict[tuple[int, str | None], dict[str, str]] = {}
    for cm in configmaps:
        meta = cm["metadata"]
        key = (int(meta["annotations"][INDEX_ANNOTATION]), meta["annotations"].get(GPU_ANNOTATION))
        by_index.setdefault(key, {})[meta["labels"][KIND_LABEL]] = meta["name"]
    out = []
    for position, cat in enumerate(report.get("categories") or []):
        refs = by_index.get((int(cat.get("index", position)), cat.get("gpu")), {})
        status = {"Passed": "Succeeded", "Failed": "Failed"}.get(str(cat.get("status")))
        if status is None:
            continue
        out.append({"domain": cat.get("domain"), "variant": cat.get("variant"), "status": status,
                    "workflowRef": {"name": workflow_name},
                    **({"failedNodesRef": {"kind": "ConfigMap", "name": refs["failed"]}} if "failed" in refs else {}),
                    **({"succeededNodesRef": {"kind": "ConfigMap", "name": refs["succeeded"]}}
                       if "succeeded" in refs else {})})
    return out


__all__ = ["FAILED_NODES_KEY", "SUCCEEDED_NODES_KEY", "category_statuses", "configmap_name", "failed_rows",
           "result_configmaps", "succeeded_nodes"]
