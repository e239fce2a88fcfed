"""`nvcre`: the user CLI. Heavy imports (hera, kubernetes, jsonschema) live inside the subcommand that needs them,
so `nvcre --help` stays fast. Bad input prints one line and exits 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nvcre_hera import __version__
from nvcre_hera.errors import InputError

EXIT_BAD_INPUT = 2


def _compile_options(args: argparse.Namespace):
    from nvcre_hera.compile.plan import CompileOptions

    kind = getattr(args, "as_kind", "workflow")
    if getattr(args, "schedule", None) is not None and kind != "cron":
        raise InputError(f"only a CronWorkflow has a schedule: add --as cron (or drop --schedule; --as is {kind})",
                         "--schedule")
    try:
        return CompileOptions(kind=kind, schedule=getattr(args, "schedule", None)
                              or "0 3 * * *", namespace=args.namespace, service_account=args.service_account,
                              step_image=args.step_image or "",
                              nvsentinel_configmaps=bool(getattr(args, "nvsentinel_configmaps", False)),
                              bundle_artifact=bool(getattr(args, "bundle_artifact", False)))
    except ValueError as exc:
        raise InputError(str(exc)) from None


@contextmanager
def in_file(path: str) -> Iterator[None]:
    """Errors raised after loading (while compiling) name the spec path only; put the file name in front."""
    try:
        yield
    except InputError as exc:
        if exc.where.startswith(("spec", "metadata")):
            raise InputError(exc.message, f"{path}: {exc.where}") from None
        raise


def _namespace_for(args: argparse.Namespace, cert) -> str:
    return args.namespace or cert.metadata.namespace or os.environ.get("ARGO_NAMESPACE") or "nvcre"


def cmd_compile(args: argparse.Namespace) -> int:
    import yaml

    from nvcre_hera.compile.workflow import compile_certification
    from nvcre_hera.spec_load import load_certification

    cert = load_certification(args.cert)
    args.namespace = _namespace_for(args, cert)
    with in_file(args.cert):
        doc = compile_certification(cert, _compile_options(args))
    text = yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, width=120)
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {doc['kind']} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from nvcre_hera.spec_load import load_certification
    from nvcre_hera.validate.check import check_certification

    cert = load_certification(args.cert)
    args.namespace = _namespace_for(args, cert)
    with in_file(args.cert):
        report = check_certification(cert, _compile_options(args))
    for line in report.lines:
        print(line)
    if report.problems:
        for problem in report.problems:
            print(f"{args.cert}: {problem}", file=sys.stderr)
        return 1
    print(f"{args.cert}: valid ({report.documents} documents checked against the Argo v4.1.2, MPIJob, JobSet and "
          f"TrainJob CRDs (schemas and CEL rules), plus the Argo lint)")
    return 0


def cmd_certify(args: argparse.Namespace) -> int:
    from nvcre_hera.certify import certify

    return certify(args.cert, cluster=args.cluster, out_dir=args.out, quiet=args.quiet,
                   step_image=args.step_image, engine=args.engine, state_dir=args.state_dir,
                   nvsentinel_configmaps=args.nvsentinel_configmaps, progress=args.progress,
                   baseline=args.baseline)


def _read_json_or_yaml(path: str, what: str):
    from nvcre_hera.spec_load import parse_yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}", path) from None
    return parse_yaml(text, path)  # YAML is a superset of JSON: a report.json reads too


def cmd_baseline(args: argparse.Namespace) -> int:
    from nvcre_hera.baseline import baseline_fragment, check_fraction

    check_fraction(args.fraction)
    report = _read_json_or_yaml(args.report, "the report")
    text, count = baseline_fragment(report, args.fraction, args.report)
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", f"-o {args.output}") from None
        print(f"wrote {count} threshold(s) at {args.fraction:g} x the worst group to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    import yaml

    from nvcre_hera.compile.plan import workflow_plan
    from nvcre_hera.job_preview import preview_objects
    from nvcre_hera.local_run import DEFAULT_CLUSTER
    from nvcre_hera.sim.cluster import load_sim_cluster
    from nvcre_hera.spec_load import load_certification, resolve_categories

    if args.group is not None and args.group < 0:
        raise InputError(f"{args.group} is not a group index (0, 1, ...)", "--group")
    cert = load_certification(args.cert)
    cluster = load_sim_cluster(args.cluster or DEFAULT_CLUSTER)
    args.namespace = _namespace_for(args, cert)
    with in_file(args.cert):
        opts = _compile_options(args)
        plan = workflow_plan(cert, resolve_categories(cert), opts)
    objects = preview_objects(plan, cluster, opts.namespace, args.group,
                              note=lambda line: print(f"nvcre jobs: {line}", file=sys.stderr))
    # each object spelled out in full (no &anchors for lists the pods share), as `kubectl get -o yaml` prints it
    dumper = type("NoAliases", (yaml.SafeDumper,), {"ignore_aliases": lambda self, data: True})
    sys.stdout.write(yaml.dump_all(objects, Dumper=dumper, sort_keys=False, width=120, explicit_start=True))
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from nvcre_hera.submit import submit

    return submit(args, _compile_options, in_file)


def cmd_parse(args: argparse.Namespace) -> int:
    from nvcre_hera.parsers.cli import parse_file

    text, code = parse_file(args.kind, args.file, args.json)
    if code == EXIT_BAD_INPUT:
        raise InputError(text)
    sys.stdout.write(text.rstrip("\n") + "\n")
    return code


def cmd_report(args: argparse.Namespace) -> int:
    from nvcre_hera.report import render

    if args.workflow:
        from nvcre_hera.workflow_report import fetch_report

        sys.stdout.write(render(fetch_report(args.workflow, args.namespace), args.format))
        return 0
    if not args.report:
        raise InputError("give a REPORT.json or --workflow NAME", "nvcre report")
    try:
        report = json.loads(Path(args.report).read_text())
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", args.report) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON (line {exc.lineno}: {exc.msg})", args.report) from None
    if not isinstance(report, dict) or report.get("kind") != "CertificationReport":
        raise InputError("not a CertificationReport (kind must be CertificationReport)", args.report)
    sys.stdout.write(render(report, args.format))
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    from nvcre_hera.catalog import load_catalog

    entries = load_catalog()
    width = max(len(k) for k in entries)
    print(f"{'CATEGORY':<{width}}  {'FRAMEWORK':<9}  {'SCOPE':<9}  METRICS")
    for key, entry in sorted(entries.items()):
        print(f"{key:<{width}}  {entry.framework:<9}  {entry.scope:<9}  {', '.join(entry.metrics)}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from nvcre_hera.diagnose.bench import main as bench_main

    return bench_main(args.rest)


def cmd_completion(args: argparse.Namespace) -> int:
    from nvcre_hera.completion import script

    sys.stdout.write(script(build_parser(), args.shell))
    return 0


def _add_compile_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--namespace", default=None, help="namespace of the Workflow (default: metadata.namespace, "
                   "ARGO_NAMESPACE, or nvcre)")
    p.add_argument("--service-account", default="nvcre-hera", help="service account the steps run as")
    p.add_argument("--step-image", default=None, help="image of the workflow's own steps (default: "
                   "NVCRE_STEP_IMAGE or the release image)")
    _add_output_flags(p)
    p.add_argument("--bundle-artifact", action="store_true", help="declare the judge's results bundle as an Argo "
                   "output artifact (needs an artifact repository, else the judge errors: docs/outputs.md)")


def _add_output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nvsentinel-configmaps", action="store_true", help="the judge also writes the failed and "
                   "succeeded node lists as the ConfigMaps NVSentinel's nvcre-certification-monitor reads "
                   "(RBAC: manifests/components/nvsentinel; docs/outputs.md)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nvcre", description="Certify GPU clusters with real workloads: "
                                     "NVCRE-compatible Certifications compiled with Hera into Argo Workflows.")
    parser.add_argument("--version", action="version", version=f"nvcre-hera {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("certify", help="run a certification locally on a simulated cluster (or a real one)")
    p.add_argument("cert")
    p.add_argument("--cluster", default=None, help="SimulatedCluster file (default: the embedded healthy "
                   "16-node H100 cluster)")
    p.add_argument("--out", default="out", help="folder for report.json, report.txt and workflow.yaml")
    p.add_argument("--quiet", action="store_true", help="print only the report card")
    p.add_argument("--progress", choices=["text", "json"], default="text", help="text: a line per finished test "
                   "and per category, then the card; json: one JSON object a line (no card: see report.txt)")
    p.add_argument("--step-image", default=None)
    p.add_argument("--engine", choices=["local", "argo"], default="local",
                   help="local: the in-process executor (default); argo: the real Argo controller on the loopback "
                        "control plane (make e2e-up; started if not up)")
    p.add_argument("--state-dir", default=".e2e/run", help="the loopback control plane's state (--engine argo)")
    p.add_argument("--baseline", default=None, metavar="FILE", help="compare the run with a stored baseline "
                   "(the file `nvcre baseline` wrote, or a report.json): the change per metric, in the card and "
                   "report.json (baselineComparison); the verdict is unchanged")
    _add_output_flags(p)
    p.set_defaults(func=cmd_certify)

    p = sub.add_parser("baseline", help="thresholds from a passing run's report.json, at a fraction of what it "
                       "measured (a Certification fragment, also a thresholdProfile file)")
    p.add_argument("report")
    p.add_argument("--fraction", type=float, default=0.9, help="thresholds at this fraction of the worst group "
                   "(default 0.9; lower-is-better metrics: the worst group / fraction)")
    p.add_argument("-o", "--output", default=None, help="write the fragment here (default: stdout)")
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser("compile", help="print the Argo Workflow (or WorkflowTemplate / CronWorkflow)")
    p.add_argument("cert")
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--as", dest="as_kind", choices=["workflow", "template", "cron"], default="workflow")
    p.add_argument("--schedule", default=None, help='cron schedule for --as cron (default "0 3 * * *")')
    _add_compile_flags(p)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("validate", help="check a certification and everything it compiles to")
    p.add_argument("cert")
    _add_compile_flags(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("jobs", help="print the job objects a run would create (for kubectl apply --dry-run=server)")
    p.add_argument("cert")
    p.add_argument("--cluster", default=None, help="SimulatedCluster file discovery runs on (default: the embedded "
                   "healthy 16-node H100 cluster)")
    p.add_argument("--group", type=int, default=None, help="only the group with this index (from 0) of each category")
    _add_compile_flags(p)
    p.set_defaults(func=cmd_jobs)

    p = sub.add_parser("submit", help="submit to Argo (ARGO_SERVER, ARGO_TOKEN, ARGO_NAMESPACE)")
    p.add_argument("cert")
    p.add_argument("--as", dest="as_kind", choices=["workflow", "template", "cron"], default="workflow")
    p.add_argument("--schedule", default=None)
    p.add_argument("--insecure", action="store_true", help="skip TLS verification (like argo --insecure-skip-verify)")
    p.add_argument("--kube", action="store_true", help="create it through the Kubernetes API from the current "
                   "kubeconfig (as kubectl create would) instead of the Argo Server")
    p.add_argument("--wait", action="store_true", help="wait for the workflow to end, print its report card; exit 0 "
                   "PASSED, 1 otherwise (a CI gate)")
    p.add_argument("--watch", action="store_true", help="--wait, printing live progress from the workflow's nodes")
    p.add_argument("--wait-timeout", type=float, default=None, metavar="SECONDS",
                   help="with --wait/--watch: give up (exit 1) if the workflow has not ended by then")
    p.add_argument("--poll-interval", type=float, default=2.0, metavar="SECONDS",
                   help="with --wait/--watch: seconds between reads of the workflow (default 2)")
    _add_compile_flags(p)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("parse", help="parse a nccl-tests, dcgmi diag or Megatron/NeMo log")
    p.add_argument("kind", choices=["nccl", "dcgm", "training"])
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("report", help="render a report.json, or a finished workflow's report")
    p.add_argument("report", nargs="?")
    p.add_argument("--workflow", default=None, help="read the report from this Workflow (ARGO_SERVER if set, else "
                   "the Kubernetes API from the current kubeconfig)")
    p.add_argument("--namespace", default=None)
    p.add_argument("--format", choices=["text", "json", "junit", "html", "ctrf"], default="text")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("catalog", help="the catalog of test categories")
    p.add_argument("action", choices=["list"])
    p.set_defaults(func=cmd_catalog)

    p = sub.add_parser("bench", help="benchmarks (diagnose strategies)")
    p.add_argument("what", choices=["diagnose"])
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("completion", help="print a shell completion script (source <(nvcre completion bash))")
    p.add_argument("shell", choices=["bash", "zsh"])
    p.set_defaults(func=cmd_completion)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"nvcre: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
