"""`nvcre jobs`: the job objects a run would create, without running anything, so a user can
`kubectl apply --dry-run=server -f -` them against the real cluster's CRDs and admission before a real run.

The same code as a run: the discover step on a (simulated) cluster for platform, GPU, NIC resource and groups, then
`steps.run.objects_for_test` for each group, the function the run step creates its objects with. The workflow name and
uid are placeholders (`<certification>-preview`, a zero uid): the owner reference names no existing Workflow, which
a server-side dry run does not check.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from nvcre_hera.cluster.base import Cluster
from nvcre_hera.errors import InputError
from nvcre_hera.jobs.base import context_from_plan
from nvcre_hera.steps.discover import discover
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.run import objects_for_test

PREVIEW_UID = "00000000-0000-0000-0000-000000000000"


def _discovered(plan: dict, cluster: Cluster) -> dict[str, Any]:
    out = Outputs("preview", in_memory=True)
    notes: list[str] = []
    if discover(plan, cluster, out, notes.append) != 0:
        raise InputError("; ".join(n.removeprefix("discover: ") for n in notes) or "discovery failed", "discover")
    return {path.rsplit("/", 1)[-1]: text for path, text in out.files.items()}


def preview_objects(plan: dict, cluster: Cluster, namespace: str, group: int | None = None,
                    note: Callable[[str], None] = lambda _: None) -> list[dict]:
    """Every object the plan's tests would create on `cluster` (first repeat), category by category, group by group;
    `group`: only the group with that index (0-based) in each category."""
    found = _discovered(plan, cluster)
    ctx = context_from_plan(plan, workflow_name=f"{plan['name']}-preview", workflow_uid=PREVIEW_UID,
                            namespace=namespace, platform=found["platform"], gpu=found["gpu"],
                            nic=json.loads(found.get("nic") or "null"))
    objects: list[dict] = []
    shown = 0
    for cat in plan["categories"]:
        groups = json.loads(found.get(f"groups-{cat['index']}") or "[]")
        if cat["options"]["testScale"] == "diagnose":
            note(f"category {cat['index']} ({cat['domain']}/{cat['variant']}): diagnose, the planner chooses its "
                 f"groups while it runs; no job shown")
            continue
        chosen = groups if group is None else groups[group:group + 1]
        for g in chosen:
            objects += objects_for_test(plan, cat["index"], g, 0, ctx)[1]
            shown += 1
    if group is not None and not shown:
        sizes = ", ".join(str(len(json.loads(found.get(f"groups-{c['index']}") or "[]"))) for c in plan["categories"])
        raise InputError(f"no category has a group {group} (group counts: {sizes}; groups count from 0)", "--group")
    return objects


__all__ = ["PREVIEW_UID", "preview_objects"]
