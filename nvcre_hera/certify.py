"""`nvcre certify`: run a Certification on one engine (the local executor, or the real Argo controller of the
loopback control plane), print its progress and card, and write `--out`: report.json, report.txt, the CTRF report,
the results bundle and workflow.yaml. Exit code 0 PASSED, 1 FAILED or INCOMPLETE (2, bad input, is the CLI's).

Kept apart from both engines (local_run, argo_run) so that neither imports the other."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nvcre_hera.errors import InputError
from nvcre_hera.local_run import LocalRun, run_local


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


__all__ = ["certify", "write_certify_outputs"]
