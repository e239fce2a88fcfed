"""Job manifests for one test of one group: MPIJob (default), JobSet and TrainJob backends behind one interface."""

from nvcre_hera.jobs.base import JobContext, JobPlan, plan_job
from nvcre_hera.jobs.registry import BACKENDS, backend_for, job_objects, render_job, render_objects

__all__ = ["BACKENDS", "JobContext", "JobPlan", "backend_for", "job_objects", "plan_job", "render_job",
           "render_objects"]
