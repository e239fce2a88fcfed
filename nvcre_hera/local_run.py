"""`nvcre certify`: compile the Workflow and execute *that dict* locally, in simulated time, on a simulated cluster.

Containers of our step image run the `nvcre-step` functions in process against the simulated cluster, whose clock
is set to each pod's simulated start; any other container is an explicit error. Exit codes: 0 PASSED, 1 FAILED or
INCOMPLETE, 2 bad input.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from nvcre_hera.errors import UnsupportedConstruct

DEFAULT_CLUSTER = Path(__file__).resolve().parent.parent / "examples" / "clusters" / "healthy-h100-16.yaml"


@dataclass
class LocalRun:
    """What a local certification produced: the workflow, its run, the report and the simulated cluster."""

    workflow: dict
    run: object
    report: dict | None
    cluster: object
    # the last judge pod's bundle files ({name: text}; nvcre_hera/steps/verdict_outputs.py), empty if none ran
    bundle: dict = field(default_factory=dict)

    @property
    def result(self) -> str:
        return (self.report or {}).get("result", "FAILED")


def step_pod_runner(cluster, step_image: str, bundle: dict | None = None) -> Callable:
    """Map a container of our step image to `nvcre-step` in process; the pod's run time is the clock's advance.
    `bundle`, when given, receives the files a judge pod writes under its `--out`/bundle/ (what a real pod would
    leave for Argo's output artifact)."""
    from nvcre_hera.executor import PodResult
    from nvcre_hera.steps.inprocess import run_step
    from nvcre_hera.steps.io import Outputs

    def run(req) -> PodResult:
        if req.image != step_image or req.command != ["nvcre-step"]:
            raise UnsupportedConstruct(f"template {req.template}: the local run only executes containers of the "
                                       f"step image {step_image}, not {req.image} {shlex.join(req.command)}")
        cluster.set_clock(req.start_time)
        cluster.set_pod_deadline(req.kill_time)
        outputs = Outputs(_out_dir(req.args), in_memory=True)
        code, stdout = run_step(req.args, cluster=cluster, outputs=outputs)
        if bundle is not None and req.args[:1] == ["judge"]:
            prefix = _out_dir(req.args).rstrip("/") + "/bundle/"
            bundle.clear()
            bundle.update({p[len(prefix):]: t for p, t in outputs.files.items() if p.startswith(prefix)})
        return PodResult(exit_code=code, stdout=stdout, files=outputs.files,
                         duration_s=max(0.0, cluster.now() - req.start_time) + 1.0)

    return run


def _out_dir(args: list[str]) -> str:
    return args[args.index("--out") + 1] if "--out" in args else "/tmp/nvcre"


def run_local(cert_path: str, cluster_path: str | None = None, *, step_image: str | None = None,
              on_event: Callable[[str], None] | None = None,
              mutate: Callable[[dict], dict] | None = None, nvsentinel_configmaps: bool = False,
              watch: Callable[[dict], Callable] | None = None) -> LocalRun:
    """`mutate` edits the compiled workflow before it runs (the end-to-end tests drive failure paths with it);
    `watch(workflow)` returns a callback that sees each node as it is fulfilled (live progress)."""
    from nvcre_hera.compile.plan import CompileOptions
    from nvcre_hera.compile.workflow import compile_certification
    from nvcre_hera.executor import run_workflow
    from nvcre_hera.sim.cluster import load_sim_cluster
    from nvcre_hera.spec_load import load_certification

    cert = load_certification(cert_path)
    cluster = load_sim_cluster(cluster_path or DEFAULT_CLUSTER)
    opts = CompileOptions(namespace=cert.metadata.namespace or "nvcre", step_image=step_image or "",
                          nvsentinel_configmaps=nvsentinel_configmaps)
    workflow = compile_certification(cert, opts)
    runnable = json.loads(json.dumps(workflow))
    runnable["metadata"]["name"] = f"{cert.metadata.name}-local"
    if mutate is not None:
        runnable = mutate(runnable)
    bundle: dict = {}
    run = run_workflow(runnable, step_pod_runner(cluster, opts.step_image, bundle), on_event=on_event,
                       on_node=watch(runnable) if watch is not None else None)
    # The judge exits non-zero on a failed certification; its outputs are still collected (as Argo does).
    judged = sorted(run.nodes_of("judge"), key=lambda n: n.started)
    reports = [n.outputs.get("parameters", {}).get("report") for n in judged]
    reports = [r for r in reports if r and r != "{}"]
    report = json.loads(reports[-1]) if reports else None
    if report is not None:
        from nvcre_hera.report.timing import spans_from_local, with_wall_runtimes

        report = with_wall_runtimes(report, spans_from_local(run.name, run.nodes.values()))
        report["execution"] = {
            "engine": "nvcre-hera local executor (simulated time)",
            "workflowPhase": run.phase,
            "simulatedWallTimeSec": round(run.wall_time_s, 1),
            "podsStarted": run.pods_started,
            "jobObjectsCreated": cluster.jobs_created,
            "jobObjectsLeftBehind": cluster.jobs_alive(),
            "storedParameterBytes": run.parameter_bytes,
        }
    return LocalRun(workflow=workflow, run=run, report=report, cluster=cluster, bundle=bundle)


__all__ = ["DEFAULT_CLUSTER", "LocalRun", "run_local", "step_pod_runner"]
