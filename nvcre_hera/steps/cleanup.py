"""`nvcre-step cleanup` (the Workflow's onExit): delete every job object this workflow created that still exists,
and its diagnose stores, and say so. Runs whatever the workflow's outcome; nothing is left behind on the cluster.
"""

from __future__ import annotations

from typing import Callable

from nvcre_hera.cluster.base import MANAGED_BY_LABEL, MANAGED_BY_VALUE, WORKFLOW_LABEL, Cluster
from nvcre_hera.steps.io import Outputs


def cleanup(workflow_name: str, status: str, cluster: Cluster, out: Outputs, log: Callable[[str], None],
            kinds: list[str] | None = None, configmaps: list[str] | None = None) -> int:
    """`kinds`: the job kinds this workflow can create. Only these are listed, because the Role grants `list` on
    only these, and the API server answers 403 before it looks for a resource (so even an absent CRD fails).
    `configmaps`: the diagnose stores (steps/diagnose_store.py), by name (no `list` on ConfigMaps is granted);
    one that does not exist was never created (the diagnose did not start) or is already gone."""
    labels = {MANAGED_BY_LABEL: MANAGED_BY_VALUE, WORKFLOW_LABEL: workflow_name}
    leftover = cluster.list_jobs(labels, kinds)
    deleted = [name for name in leftover if cluster.delete_job(name)]
    remaining = cluster.list_jobs(labels, kinds)
    stores = [name for name in configmaps or [] if cluster.delete_configmap(name)]
    log(f"cleanup: workflow {workflow_name} {status}: {len(leftover)} job object(s) left by the tests, "
        f"{len(deleted)} deleted, {len(remaining)} remaining"
        + (f"; {len(stores)} diagnose store ConfigMap(s) deleted" if configmaps else ""))
    out.write("cleanup", {"found": leftover, "deleted": deleted, "remaining": remaining,
                          **({"configMapsDeleted": stores} if configmaps else {})})
    return 0 if not remaining else 1


__all__ = ["cleanup"]
