"""Which backend renders a category's job, chosen by the entry's framework and `spec.orchestration.backend`.

The backends import `jobs.base` (plan, labels, placement); base imports no backend. This module sits above both,
so the choice of backend lives in one place and no import cycle remains.
"""

from __future__ import annotations

from typing import Any

from nvcre_hera.catalog import CatalogEntry
from nvcre_hera.jobs.base import JobBackend, JobContext, JobPlan, plan_job
from nvcre_hera.jobs.jobset import JobSetBackend
from nvcre_hera.jobs.mpijob import MPIJobBackend
from nvcre_hera.jobs.trainjob import TrainJobBackend

BACKENDS = ("mpijob", "trainjob")
DEFAULT_BACKEND = "mpijob"


def backend_for(entry: CatalogEntry, backend: str | None = None) -> JobBackend:
    """`mpijob` (default): MPIJob for mpi/torch entries, JobSet for exec entries. `trainjob`: a Kubeflow Trainer v2
    TrainJob for every entry, with the TrainingRuntime it references as a dependency."""
    name = backend or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise ValueError(f"unknown job backend {name!r} (one of {', '.join(BACKENDS)})")
    if name == "trainjob":
        return TrainJobBackend()
    return JobSetBackend() if entry.framework == "exec" else MPIJobBackend()


def job_objects(backend: JobBackend, plan: JobPlan) -> list[dict]:
    """Every object one test creates, in creation order: the job's dependencies first, the job object last."""
    dependencies = getattr(backend, "dependencies", None)
    return [*(dependencies(plan) if dependencies else []), backend.manifest(plan)]


def render_job(entry: CatalogEntry, category_index: int, options: dict[str, Any], group: dict, repeat: int,
               ctx: JobContext, backend: str | None = None) -> dict:
    """The job object alone (what `validate` and the tests check against the job's CRD)."""
    return backend_for(entry, backend).manifest(plan_job(entry, category_index, options, group, repeat, ctx))


def render_objects(entry: CatalogEntry, category_index: int, options: dict[str, Any], group: dict, repeat: int,
                   ctx: JobContext, backend: str | None = None) -> list[dict]:
    impl = backend_for(entry, backend)
    return job_objects(impl, plan_job(entry, category_index, options, group, repeat, ctx))


__all__ = ["BACKENDS", "DEFAULT_BACKEND", "backend_for", "job_objects", "render_job", "render_objects"]
