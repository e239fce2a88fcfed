"""The run-time plan the compiled workflow carries as its one parameter, and the compile options.

The plan is everything the steps need (target filters, each category's resolved options, gang scheduling) and
nothing that depends on the cluster: it is the same for 16 nodes or 4096.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from nvcre_hera import __version__
from nvcre_hera.api import Certification
from nvcre_hera.catalog import ADHOC_DOMAIN
from nvcre_hera.spec_load import ResolvedCategory

DEFAULT_STEP_IMAGE = f"ghcr.io/nvcre-hera/nvcre-step:{__version__}"
PLAN_VERSION = 1


@dataclass(frozen=True)
class CompileOptions:
    kind: str = "workflow"  # workflow | template | cron
    schedule: str = "0 3 * * *"
    timezone: str = "UTC"
    namespace: str = "nvcre"
    service_account: str = "nvcre-hera"
    step_image: str = ""
    max_nodes: int = 1024  # the largest target the workflow deadline allows for (spec.activeDeadlineSeconds)
    # the judge also writes NVSentinel's node-list ConfigMaps (RBAC: manifests/components/nvsentinel)
    nvsentinel_configmaps: bool = False
    # the judge's results bundle as an output artifact (needs an artifact repository: docs/outputs.md)
    bundle_artifact: bool = False

    def __post_init__(self) -> None:
        if not self.step_image:
            object.__setattr__(self, "step_image", os.environ.get("NVCRE_STEP_IMAGE") or DEFAULT_STEP_IMAGE)
        if self.kind not in ("workflow", "template", "cron"):
            raise ValueError(f"--as must be workflow, template or cron, not {self.kind!r}")
        if self.kind == "cron" and len(self.schedule.split()) not in (5, 6) and not self.schedule.startswith("@"):
            raise ValueError(f"--schedule {self.schedule!r} is not a cron expression (e.g. \"0 3 * * *\")")


def category_task_name(cat: ResolvedCategory) -> str:
    """`c0-nccl-all-reduce`: legal for Argo (`[a-zA-Z0-9][-a-zA-Z0-9]*`, starts with a letter for depends)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", cat.entry.variant.lower()).strip("-")
    return f"c{cat.index}-{slug}"[:60]


def workflow_plan(cert: Certification, categories: list[ResolvedCategory], opts: CompileOptions) -> dict[str, Any]:
    spec = cert.spec
    gang = spec.gang_scheduler
    return {
        "version": PLAN_VERSION,
        "name": cert.metadata.name,
        "target": spec.target.model_dump(by_alias=True, exclude_defaults=True, mode="json"),
        "categories": [
            {"index": c.index, "domain": c.entry.domain, "variant": c.entry.variant, "options": c.options,
             # an entry from outside the catalog (a WorkloadRun's) travels whole; catalog ones by name
             **({"entry": c.entry.model_dump(by_alias=True, mode="json")} if c.entry.domain == ADHOC_DOMAIN else {})}
            for c in categories
        ],
        "gangScheduler": gang.model_dump(by_alias=True, mode="json") if gang else None,
        "priorityClassName": spec.priority_class_name,
        "placement": spec.orchestration.placement if spec.orchestration else "Pinned",
        # only when not the default (all), so plans (and golden files) stay as they were
        **({"architecture": spec.architecture} if spec.architecture != "all" else {}),
        # only when not the default, so plans (and golden files) of MPIJob certifications stay as they were
        **({"backend": spec.orchestration.backend} if spec.orchestration and spec.orchestration.backend != "mpijob"
           else {}),
    }


__all__ = ["CompileOptions", "DEFAULT_STEP_IMAGE", "category_task_name", "workflow_plan"]
