"""`nvcre-step discover|run|judge|cleanup`: argument parsing and wiring; the work is in the step modules.

In a pod the step talks to the real cluster (`KubeCluster`) and writes output files; the local executor calls
`main(argv, cluster=sim, outputs=...)` in process with the simulated cluster.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from nvcre_hera.cluster.base import Cluster
from nvcre_hera.steps.diagnose_store import Store
from nvcre_hera.steps.io import Outputs


def _unfile(text: str) -> str:
    """Argo's emissary (v4.0.10+, cmd/argoexec/commands/emissary.go) passes an argument longer than 128 KiB as
    `@/tmp/argo_arg_N.txt`, a file holding it. No JSON value and no `INDEX=JSON` starts with `@`."""
    if not text.startswith("@"):
        return text
    try:
        return Path(text[1:]).read_text()
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {exc.strerror}") from None


def _json_arg(text: str) -> object:
    text = _unfile(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc.msg} at position {exc.pos}") from None


def _results_arg(text: str) -> tuple[int, object]:
    index, sep, payload = _unfile(text).partition("=")
    if not sep or not index.isdigit():
        raise argparse.ArgumentTypeError("expected INDEX=JSON")
    return int(index), _json_arg(payload)


STORE_HELP = ("diagnose: the ConfigMap that carries the planner's state, the test items and the results "
              "(steps/diagnose_store.py)")


def _store(args: argparse.Namespace) -> Store | None:
    """The diagnose store a run or plan step was given, or None."""
    if not args.store:
        return None
    return Store(name=args.store, namespace=args.namespace, workflow_name=args.workflow_name,
                 workflow_uid=args.workflow_uid)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nvcre-step", description="Steps of an nvcre-hera certification workflow.")
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("discover")
    p.add_argument("--plan", type=_json_arg, required=True)
    p.add_argument("--out", default="/tmp/nvcre")
    p.add_argument("--namespace", default=None)
    p = sub.add_parser("run")
    p.add_argument("--plan", type=_json_arg, required=True)
    p.add_argument("--category", type=int, required=True)
    p.add_argument("--group", type=_json_arg, required=True)
    p.add_argument("--platform", required=True)
    p.add_argument("--gpu", required=True)
    p.add_argument("--nic", type=_json_arg, default=None,
                   help='what discovery found: {"resource": NAME or null, "allocatable": N}; null: no discovery ran')
    p.add_argument("--workflow-name", required=True)
    p.add_argument("--workflow-uid", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--store", default=None, help=STORE_HELP)
    p.add_argument("--out", default="/tmp/nvcre")
    p = sub.add_parser("plan")
    p.add_argument("--setup", type=_json_arg, required=True, help="discovery's; null below the first level")
    p.add_argument("--state", type=_json_arg, required=True, help="null on the first level, then the state's key")
    p.add_argument("--store", required=True, help=STORE_HELP)
    p.add_argument("--workflow-name", required=True)
    p.add_argument("--workflow-uid", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--out", default="/tmp/nvcre")
    p = sub.add_parser("judge")
    p.add_argument("--plan", type=_json_arg, required=True)
    p.add_argument("--summary", type=_json_arg, required=True)
    p.add_argument("--results", type=_results_arg, action="append", default=[])
    p.add_argument("--groups", type=_results_arg, action="append", default=[],
                   help="INDEX=JSON: the groups discovery planned for a category (a group without results failed)")
    p.add_argument("--nvsentinel-configmaps", action="store_true",
                   help="also write the failed/succeeded node lists as the ConfigMaps NVSentinel's "
                        "nvcre-certification-monitor reads (needs manifests/components/nvsentinel)")
    p.add_argument("--workflow-name", default=None)
    p.add_argument("--workflow-uid", default=None)
    p.add_argument("--namespace", default=None)
    p.add_argument("--out", default="/tmp/nvcre")
    p = sub.add_parser("cleanup")
    p.add_argument("--workflow-name", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--status", default="Unknown")
    p.add_argument("--kinds", default="MPIJob,JobSet,TrainJob,TrainingRuntime",
                   help="job kinds the workflow can create (cleanup lists only these: RBAC grants only these)")
    p.add_argument("--configmaps", default="",
                   help="ConfigMaps the workflow's steps created (the diagnose stores), comma-separated: deleted")
    p.add_argument("--out", default="/tmp/nvcre")
    return parser


def _exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit(143), so `finally`/`except` blocks run (the run step deletes its job objects).
    The kubelet sends SIGTERM when the pod's activeDeadlineSeconds passes or it is deleted or evicted, and Argo's
    `stop`/`terminate` end running pods the same way (argo-workflows v4.0.5 workflow/controller/exec_control.go
    L18-49, applyExecutionControl -> PodController.TerminateContainers); Python's default for SIGTERM is to die at once, running nothing."""
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None, *, cluster: Cluster | None = None, outputs: Outputs | None = None,
         log: Callable[[str], None] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = outputs or Outputs(args.out)
    say = log or (lambda line: print(line, flush=True))
    in_pod = cluster is None
    if in_pod:  # in a pod (in process, the runner models how the pod ends)
        _exit_on_sigterm()
    if cluster is None and (args.step != "judge" or args.nvsentinel_configmaps):
        from nvcre_hera.cluster.kube import KubeCluster

        cluster = KubeCluster(namespace=getattr(args, "namespace", None))
    if args.step == "discover":
        from nvcre_hera.steps.discover import discover

        return discover(args.plan, cluster, out, say)
    if args.step == "run":
        from nvcre_hera.jobs.base import context_from_plan
        from nvcre_hera.steps.run import run_test

        ctx = context_from_plan(args.plan, workflow_name=args.workflow_name, workflow_uid=args.workflow_uid,
                                namespace=args.namespace, platform=args.platform, gpu=args.gpu, nic=args.nic)
        return run_test(args.plan, args.category, args.group, ctx, cluster, out, say, store=_store(args))
    if args.step == "plan":
        from nvcre_hera.steps.plan_step import plan_step

        return plan_step(args.setup, args.state, cluster, out, say, _store(args), clock=time.time if in_pod else None)
    if args.step == "judge":
        from nvcre_hera.steps.verdict import judge_step

        nvsentinel = ({"workflowName": args.workflow_name or args.plan.get("name"), "workflowUid": args.workflow_uid,
                       "namespace": args.namespace} if args.nvsentinel_configmaps else None)
        return judge_step(args.plan, args.summary, dict(args.results), out, say, groups=dict(args.groups),
                          cluster=cluster, nvsentinel=nvsentinel)
    from nvcre_hera.steps.cleanup import cleanup

    return cleanup(args.workflow_name, args.status, cluster, out, say,
                   kinds=[k for k in args.kinds.split(",") if k],
                   configmaps=[c for c in args.configmaps.split(",") if c])


if __name__ == "__main__":
    sys.exit(main())
