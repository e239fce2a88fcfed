"""Job manifests for one test of one group: MPIJob (default) and JobSet backends behind one interface."""

from nvcre_hera.jobs.base import JobContext, JobPlan, backend_for, plan_job, render_job

__all__ = ["JobContext", "JobPlan", "backend_for", "plan_job", "render_job"]
