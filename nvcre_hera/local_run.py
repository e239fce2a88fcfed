"""`nvcre certify`: compile the Workflow and execute *that dict* locally, in simulated time, on a simulated cluster.

Containers of our step image run the `nvcre-step` functions in process against the simulated cluster, whose clock
is set to each pod's simulated start; any other container is an explicit error. Exit codes: 0 PASSED, 1 FAILED or
INCOMPLETE, 2 bad input.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from nvcre_hera.errors import InputError, UnsupportedConstruct

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


def certify(cert_path: str, *, cluster: str | None = None, out_dir: str = "out", quiet: bool = False,
            step_image: str | None = None, engine: str = "local", state_dir: str = ".e2e/run",
            nvsentinel_configmaps: bool = False, progress: str = "text", baseline: str | None = None) -> int:
    """`progress`: text (a line per finished test, one per category, then the card), json (one JSON object a
    line and no card: it is in report.txt), or none (`quiet`: only the card)."""
    import yaml

    from nvcre_hera.progress import Printer
    from nvcre_hera.report import render

    if progress not in ("text", "json"):
        raise InputError(f"{progress!r} is not a progress format (use text or json)", "--progress")
    printer = None if quiet else Printer(progress)

    if cluster is not None and not Path(cluster).is_file():
        raise InputError("no such file", cluster)
    stored = _load_baseline(baseline) if baseline is not None else None  # a bad file fails before the run
    out = Path(out_dir)
    if out.exists() and not out.is_dir():  # checked before the run, not after it: the report needs a folder
        raise InputError("exists and is not a folder (--out names the folder for report.json, report.txt and "
                         "workflow.yaml)", f"--out {out_dir}")
    try:  # before the run: a folder that cannot be made should not cost a certification
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder: {exc.strerror or exc}", f"--out {out_dir}") from None
    if engine == "argo":
        if nvsentinel_configmaps:
            raise InputError("only the local engine models the judge's ConfigMap writes and reads them back: use "
                             "--engine local", "--nvsentinel-configmaps")
        from nvcre_hera.argo_run import run_argo

        local = run_argo(cert_path, cluster, step_image=step_image, state_dir=state_dir,
                         on_node=None if printer is None else printer.argo_node, on_workflow=None if printer
                         is None else printer.start)
    else:
        local = run_local(cert_path, cluster, step_image=step_image, nvsentinel_configmaps=nvsentinel_configmaps,
                          watch=None if printer is None else printer.local_watch)
    if printer is not None:
        printer.end(local.run.name, local.run.phase, local.run.message, local.run.wall_time_s)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    (out / "workflow.yaml").write_text(yaml.dump(local.workflow, Dumper=dumper, sort_keys=False, width=120))
    if local.report is None:
        print(f"nvcre: the workflow ended {local.run.phase} before the judge wrote a report: "
              f"{local.run.message}", file=sys.stderr)
        return 1
    comparison_text: list[str] = []
    if stored is not None:
        from nvcre_hera.baseline import compare, comparison_lines

        local.report["baselineComparison"] = compare(local.report, stored, str(baseline))
        comparison_text = comparison_lines(local.report["baselineComparison"])
    (out / "report.json").write_text(render(local.report, "json"))
    card = render(local.report, "text")
    if comparison_text:
        card = card.rstrip("\n") + "\n\n" + "\n".join(comparison_text) + "\n"
    (out / "report.txt").write_text(card)
    written = write_certify_outputs(out, local, cert_path)
    ex = local.report["execution"]
    if progress == "json" and printer is not None:
        printer.result(local.report["result"], str(out / "report.json"))
        return 0 if local.result == "PASSED" else 1
    print()
    print(card.rstrip("\n"))
    print(f"{'Argo' if engine == 'argo' else 'Local'} run: workflow {ex['workflowPhase']}, "
          f"{ex['simulatedWallTimeSec'] or 0:.0f}s simulated, "
          f"{ex['podsStarted']} pods, {ex['jobObjectsCreated']} job objects created, "
          f"{ex['jobObjectsLeftBehind']} left behind, {ex['storedParameterBytes']} bytes of stored parameters")
    print(f"Wrote {', '.join(str(p) for p in [out / 'report.json', out / 'report.txt', *written])} and "
          f"{out / 'workflow.yaml'}")
    return 0 if local.result == "PASSED" else 1


def _load_baseline(path: str) -> list[dict]:
    from nvcre_hera.baseline import measured_of
    from nvcre_hera.spec_load import parse_yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the baseline: {getattr(exc, 'strerror', None) or exc}",
                         f"--baseline {path}") from None
    return measured_of(parse_yaml(text, path), f"--baseline {path}")


def write_certify_outputs(out: Path, local: LocalRun, cert_path: str) -> list[Path]:
    """`report.ctrf.json`, and `bundle/` rebuilt from the final report (with `execution`), the judge's component
    rows and the spec file's sha256. A run whose judge left no bundle (the argo engine: the judge pod's files stay
    in the pod) gets one without component rows, and says so."""
    from nvcre_hera.report import render
    from nvcre_hera.report.bundle import bundle_files, read_ndjson, write_bundle

    (out / "report.ctrf.json").write_text(render(local.report, "ctrf"))
    rows_text = local.bundle.get("components.ndjson")
    if rows_text is None:
        print("nvcre: the judge's bundle is not available to this engine: bundle/components.ndjson is empty",
              file=sys.stderr)
    params = {p.get("name"): p.get("value") for p in
              ((local.workflow.get("spec") or {}).get("arguments") or {}).get("parameters") or []}
    plan = json.loads(params["plan"]) if params.get("plan") else None
    files = bundle_files(local.report, read_ndjson(rows_text or ""), plan=plan,
                         spec_bytes=Path(cert_path).read_bytes(), spec_name=Path(cert_path).name)
    write_bundle(out / "bundle", files)
    written = [out / "report.ctrf.json", out / "bundle"]
    configmaps = getattr(local.cluster, "configmaps", None)
    if configmaps:  # what the judge wrote to the (simulated) API, as `kubectl get -o yaml` would show them
        import yaml

        path = out / "nvsentinel-configmaps.yaml"
        path.write_text(yaml.safe_dump_all(list(configmaps.values()), sort_keys=False, width=120))
        written.append(path)
    return written


__all__ = ["DEFAULT_CLUSTER", "LocalRun", "certify", "run_local", "step_pod_runner", "write_certify_outputs"]
