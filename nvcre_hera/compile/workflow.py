"""Certification → Argo Workflow / WorkflowTemplate / CronWorkflow, built with Hera (the only module that imports it).

Shape (DESIGN.md "The Workflow shape"): `discover` → one task per category, in order, each fanning out over its groups
(`withParam`, capped by the category's `maxConcurrent` as DAG `parallelism`) → `judge`, which exits non-zero when the
certification fails (Argo marks a DAG Succeeded when a failed test is followed by a successful step, so the verdict
must come from a step) → `onExit: cleanup`, which deletes any job object the workflow created that still exists.

Nothing here depends on the number of nodes: discovery happens at run time and passes groups as parameters.
Every template, task and parameter name is checked by `nvcre_hera.validate.lint`.
"""

from __future__ import annotations

import json
from typing import Any

from hera.workflows import DAG, Container, CronWorkflow, Parameter, RetryStrategy, Task, Workflow, WorkflowTemplate
from hera.workflows import models as m

from nvcre_hera.api import Certification
from nvcre_hera.compile.diagnose import CONTINUE, compiled_store_name, diagnose_template, plan_template
from nvcre_hera.compile.metrics import has_busbw, judge_metrics, run_metrics
from nvcre_hera.compile.outputs import judge_artifacts, judge_output_args
from nvcre_hera.steps.metric_outputs import NO_MEASUREMENT
from nvcre_hera.steps.screen import loopback_entry, screens_for
from nvcre_hera.cluster.base import DEFAULT_SCHEDULING_TIMEOUT
from nvcre_hera.compile.plan import CompileOptions, category_task_name, workflow_plan
from nvcre_hera.jobs import backend_for
from nvcre_hera.spec_load import ResolvedCategory, resolve_categories
from nvcre_hera.units import parse_duration

OUT_DIR = "/tmp/nvcre"
DIAGNOSE_ROUNDS = 16  # the planner's rounds stay far below this (README "Diagnose")
STEP_RESOURCES = m.ResourceRequirements(requests={"cpu": "100m", "memory": "128Mi"},
                                        limits={"cpu": "1", "memory": "512Mi"})


def _step(name: str, image: str, args: list[str], *, inputs: list[Parameter] | None = None,
          outputs: list[Parameter] | None = None, **kwargs: Any) -> Container:
    """A container of our step image running `nvcre-step <args>` (argv only: no shell ever parses a value)."""
    return Container(
        name=name, image=image, command=["nvcre-step"], args=args, inputs=inputs or [], outputs=outputs or [],
        resources=STEP_RESOURCES, env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1")], **kwargs,
    )


def _output(name: str, default: str) -> Parameter:
    # Every output that may be skipped declares a default (Argo v4.0.7+ fails a reference to it otherwise).
    return Parameter(name=name, value_from=m.ValueFrom(path=f"{OUT_DIR}/{name}", default=default))


def _test_deadline_s(cat: ResolvedCategory) -> int:
    """Backstop for the test pod: every repeat's job timeout, its measurement wait and the time its pods may wait
    unschedulable (schedulingTimeout, off the job's clock), plus pod slack."""
    per_job = parse_duration(cat.options["timeoutPerJob"]) + parse_duration(cat.options["measurementTimeout"]) + \
        parse_duration(str(cat.options.get("schedulingTimeout") or DEFAULT_SCHEDULING_TIMEOUT))
    return int(per_job * int(cat.options["repeatCount"]) + 300)


def _diagnose(cat: ResolvedCategory) -> bool:
    return cat.options["testScale"] == "diagnose"


def job_kinds(categories: list[ResolvedCategory], backend: str | None) -> list[str]:
    """The kinds of object the tests can create (jobs and what they depend on): cleanup lists only these, because
    the Role grants `list` on these alone (the TrainJob RBAC is an optional component)."""
    kinds = {backend_for(c.entry, backend).kind for c in categories}
    # a diagnose loopback screen runs the catalog's loopback entry (an MPIJob) whatever the category's own kind
    kinds |= {backend_for(loopback_entry(), backend).kind for c in categories
              if _diagnose(c) and "loopback" in screens_for(c.options, c.entry.parser)}
    return sorted(kinds | ({"TrainingRuntime"} if "TrainJob" in kinds else set()))


def workflow_deadline_s(categories: list[ResolvedCategory], max_nodes: int) -> int:
    """`spec.activeDeadlineSeconds`: every category's worst case on a cluster of up to `max_nodes` nodes, run one
    after another, plus discovery, judge and slack. A test pod's deadline times the waves its fan-out needs under
    `maxConcurrent` (all at once when 0); diagnose: DIAGNOSE_ROUNDS rounds. Argo stops the workflow there and still
    runs the exit handler, so no job keeps its GPUs past it, even if a test hangs."""
    total = 600
    for cat in categories:
        per_test = _test_deadline_s(cat)
        if _diagnose(cat):
            total += per_test * DIAGNOSE_ROUNDS
            continue
        size = int(cat.options.get("nodesPerJob") or 0) or (1 if cat.options["testScale"] == "intra-node" else 0)
        groups = max_nodes // size if size else 1
        cap = int(cat.options["maxConcurrent"])
        total += per_test * (-(-groups // cap) if cap > 0 else 1)
    return total


def _category_templates(cat: ResolvedCategory, image: str, certification: str) -> tuple[Container, DAG]:
    i = cat.index
    diagnose = cat.options["testScale"] == "diagnose"
    # a diagnose test reads its item and the node index from the store (compile/diagnose.py)
    store_args = ["--store", compiled_store_name(cat)] if diagnose else []
    test = _step(
        f"test-{i}", image,
        ["run", "--plan", "{{workflow.parameters.plan}}", "--category", str(i),
         "--group", "{{inputs.parameters.group}}", "--platform", "{{inputs.parameters.platform}}",
         "--gpu", "{{inputs.parameters.gpu}}", "--nic", "{{inputs.parameters.nic}}",
         "--workflow-name", "{{workflow.name}}",
         "--workflow-uid", "{{workflow.uid}}", "--namespace", "{{workflow.namespace}}", *store_args,
         "--out", OUT_DIR],
        inputs=[Parameter(name="group"), Parameter(name="platform"), Parameter(name="gpu"), Parameter(name="nic")],
        outputs=[_output("metrics", "[]"),
                 *([_output("busbw", NO_MEASUREMENT), _output("group-id", ""), _output("nodes", "")]
                   if has_busbw(cat) and not diagnose else [])],
        # diagnose's tests are probes of groups its planner picks, not a node's measurement: no busbw series
        # (their names would also cost ~90 bytes a pod in etcd at 4096 nodes, past the 256 KiB budget)
        metrics=None if diagnose else run_metrics(cat, certification),
        active_deadline_seconds=_test_deadline_s(cat),
        # Only pod errors (eviction, API hiccups) are retried: a failed test is data, reported by the judge.
        retry_strategy=RetryStrategy(limit=2, retry_policy="OnError",
                                     backoff=m.Backoff(duration="10s", factor=2)),
    )
    if diagnose:
        return test, diagnose_template(cat, plan_template(cat, image, _step, _output), test)
    cap = int(cat.options["maxConcurrent"])
    with DAG(
        name=f"category-{i}",
        inputs=[Parameter(name="groups"), Parameter(name="platform"), Parameter(name="gpu"), Parameter(name="nic")],
        outputs=[Parameter(name="results", value_from=m.ValueFrom(
            parameter="{{tasks.test.outputs.parameters.metrics}}", default="[]"))],
        parallelism=cap if cap > 0 else None,
    ) as dag:
        # A failed test pod (crash, deadline, eviction) must not fail this DAG: a failed DAG gets no outputs
        # (argo-workflows workflow/controller/dag.go, executeDAG returns before setting them) and the judge's
        # reference to them would then wait for ever. The judge finds the groups that sent no result.
        Task(name="test", template=test, with_param="{{inputs.parameters.groups}}", continue_on=CONTINUE,
             arguments={"group": "{{item}}", "platform": "{{inputs.parameters.platform}}",
                        "gpu": "{{inputs.parameters.gpu}}", "nic": "{{inputs.parameters.nic}}"})
    return test, dag


def build(cert: Certification, opts: CompileOptions) -> Workflow:
    """The Hera object for `opts.kind` (workflow | template | cron)."""
    categories = resolve_categories(cert)
    plan = workflow_plan(cert, categories, opts)
    name = cert.metadata.name
    meta: dict[str, Any] = dict(
        namespace=opts.namespace,
        labels={"nvcre-hera.dev/certification": name, "app.kubernetes.io/managed-by": "nvcre-hera"},
        annotations={
            "workflows.argoproj.io/title": f"GPU certification: {name}",
            "workflows.argoproj.io/description": "Categories: " + ", ".join(f"`{c.key}` ({c.options['testScale']})"
                                                                            for c in categories),
        },
    )
    spec: dict[str, Any] = dict(
        entrypoint="certify",
        service_account_name=opts.service_account,
        on_exit="cleanup",
        arguments=[Parameter(name="plan", value=json.dumps(plan, separators=(",", ":"), sort_keys=True))],
        pod_gc=m.PodGC(strategy="OnWorkflowSuccess"),
        active_deadline_seconds=workflow_deadline_s(categories, opts.max_nodes),
        # One run per certification at a time: a cron run and a manual one would compete for the same GPUs.
        synchronization=m.Synchronization(mutexes=[m.Mutex(name=f"nvcre-{name}")]),
        ttl_strategy=m.TTLStrategy(seconds_after_completion=7 * 24 * 3600),
    )
    if opts.kind == "cron":
        holder: Workflow = CronWorkflow(name=name, schedules=[opts.schedule], timezone=opts.timezone,
                                        concurrency_policy="Forbid", starting_deadline_seconds=600, **meta, **spec)
    elif opts.kind == "template":
        holder = WorkflowTemplate(name=name, **meta, **spec)
    else:
        holder = Workflow(generate_name=f"{name}-", **meta, **spec)

    backend = cert.spec.orchestration.backend if cert.spec.orchestration else None
    with holder:
        image = opts.step_image
        discover = _step(
            "discover", image,
            ["discover", "--plan", "{{workflow.parameters.plan}}", "--out", OUT_DIR],
            outputs=[_output("summary", "{}"), _output("platform", "onprem"), _output("gpu", "unknown"),
                     _output("nic", "null"),
                     *[_output(f"groups-{c.index}", "[]") for c in categories],
                     *[_output(f"setup-{c.index}", "{}") for c in categories if _diagnose(c)]],
            retry_strategy=RetryStrategy(limit=3, retry_policy="OnError"),
        )
        cat_templates = [_category_templates(c, image, name) for c in categories]
        judge = _step(
            "judge", image,
            ["judge", "--plan", "{{workflow.parameters.plan}}", "--summary", "{{inputs.parameters.summary}}",
             *[a for c in categories for a in ("--results", f"{c.index}={{{{inputs.parameters.results-{c.index}}}}}")],
             *[a for c in categories if not _diagnose(c)
               for a in ("--groups", f"{c.index}={{{{inputs.parameters.groups-{c.index}}}}}")],
             *judge_output_args(opts), "--out", OUT_DIR],
            inputs=[Parameter(name="summary"), *[Parameter(name=f"results-{c.index}") for c in categories],
                    *[Parameter(name=f"groups-{c.index}") for c in categories if not _diagnose(c)]],
            outputs=[_output("report", "{}"), _output("result", "UNKNOWN"), _output("status", "incomplete"),
                     *[_output(f"status-{c.index}", "incomplete") for c in categories],
                     *judge_artifacts(opts, OUT_DIR)],
            metrics=judge_metrics(categories, name),
        )
        _step("cleanup", image,
              ["cleanup", "--workflow-name", "{{workflow.name}}", "--namespace", "{{workflow.namespace}}",
               "--status", "{{workflow.status}}", "--kinds", ",".join(job_kinds(categories, backend)),
               *(["--configmaps", ",".join(compiled_store_name(c) for c in categories if _diagnose(c))]
                 if any(_diagnose(c) for c in categories) else [])],
              retry_strategy=RetryStrategy(limit=3, retry_policy="OnError"))

        with DAG(name="certify"):
            Task(name="discover", template=discover)
            previous: str | None = None
            cat_tasks = []
            for cat, (_, dag) in zip(categories, cat_templates):
                task_name = category_task_name(cat)
                # Categories run one after another on the same nodes, whatever the previous one's outcome.
                depends = "discover" if previous is None else \
                    f"{previous}.Succeeded || {previous}.Failed || {previous}.Errored"
                common = {"platform": "{{tasks.discover.outputs.parameters.platform}}",
                          "gpu": "{{tasks.discover.outputs.parameters.gpu}}",
                          "nic": "{{tasks.discover.outputs.parameters.nic}}"}
                if cat.options["testScale"] == "diagnose":
                    args = {"setup": f"{{{{tasks.discover.outputs.parameters.setup-{cat.index}}}}}",
                            "state": "null", **common}
                else:
                    args = {"groups": f"{{{{tasks.discover.outputs.parameters.groups-{cat.index}}}}}", **common}
                Task(name=task_name, template=dag, depends=depends, arguments=args)
                cat_tasks.append(task_name)
                previous = task_name
            judge_depends = " && ".join(f"({t}.Succeeded || {t}.Failed || {t}.Errored)" for t in cat_tasks)
            Task(name="judge", template=judge, depends=judge_depends, arguments={
                "summary": "{{tasks.discover.outputs.parameters.summary}}",
                **{f"results-{c.index}": f"{{{{tasks.{category_task_name(c)}.outputs.parameters.results}}}}"
                   for c in categories},
                **{f"groups-{c.index}": f"{{{{tasks.discover.outputs.parameters.groups-{c.index}}}}}"
                   for c in categories if not _diagnose(c)},
            })
    return holder


def compile_certification(cert: Certification, opts: CompileOptions | None = None) -> dict:
    """The compiled document as a plain dict (what `nvcre compile` prints and the local executor runs)."""
    return build(cert, opts or CompileOptions()).to_dict()


__all__ = ["OUT_DIR", "build", "compile_certification"]
