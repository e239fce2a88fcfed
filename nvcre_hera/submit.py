"""`nvcre submit`: compile and create the Workflow (or WorkflowTemplate / CronWorkflow) on an Argo Server through
Hera's WorkflowsService, configured like the argo CLI: ARGO_SERVER (host:port; https unless ARGO_SECURE=false),
ARGO_TOKEN, ARGO_NAMESPACE, ARGO_INSECURE_SKIP_VERIFY.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable

from nvcre_hera.argo_connection import argo_connection
from nvcre_hera.errors import InputError


def submit(args: argparse.Namespace, compile_options: Callable, in_file: Callable) -> int:
    """`compile_options(args)` and `in_file(path)` come from the CLI (passed in: this module does not import it)."""
    from hera.workflows import WorkflowsService

    from nvcre_hera.compile.workflow import build
    from nvcre_hera.spec_load import load_certification

    cert = load_certification(args.cert)
    waiter = _waiter(args)
    if waiter is not None and getattr(args, "as_kind", "workflow") != "workflow":
        raise InputError("only a Workflow runs to a verdict: drop --wait/--watch, or submit --as workflow",
                         "--wait")
    if getattr(args, "kube", False):
        args.namespace = args.namespace or cert.metadata.namespace or _kube_namespace() or "nvcre"
        opts = compile_options(args)
        with in_file(args.cert):
            doc = build(cert, opts).to_dict()
        return submit_kube(doc, opts.namespace, waiter=waiter)
    host, token, verify = argo_connection(args.insecure)
    args.namespace = args.namespace or os.environ.get("ARGO_NAMESPACE") or cert.metadata.namespace or "nvcre"
    opts = compile_options(args)
    with in_file(args.cert):
        holder = build(cert, opts)
    holder.workflows_service = WorkflowsService(host=host, token=token, namespace=opts.namespace, verify_ssl=verify)
    try:
        created = holder.create()
    except Exception as exc:  # the server's answer, in one line: a 4xx names what it rejected
        message = " ".join(str(exc).split())[:500]
        print(f"nvcre: submit to {host} failed: {message}", file=sys.stderr)
        return 1
    name = getattr(getattr(created, "metadata", None), "name", None) or "?"
    print(f"submitted {holder.kind} {opts.namespace}/{name} to {host}")
    print(f"Argo UI: {ui_url(host, holder.kind, opts.namespace, name)}", flush=True)
    if waiter is not None and holder.kind == "Workflow":
        return wait_for_verdict(lambda: holder.workflows_service.get_workflow(name, namespace=opts.namespace)
                                .dict(by_alias=True, exclude_none=True), name, **waiter)
    return 0


def ui_url(host: str, kind: str, namespace: str, name: str) -> str:
    """The Argo UI page of what was created: the server serves the UI at its root, and the UI routes a workflow as
    `/workflows/<namespace>/<name>` (argo-workflows ui/src/workflows/components/workflows-container.tsx, the
    `:namespace/:name` route under `uiUrl('workflows')` of ui/src/app-router.tsx), templates and cron workflows
    likewise under `/workflow-templates` and `/cron-workflows`."""
    route = {"Workflow": "workflows", "CronWorkflow": "cron-workflows"}.get(kind, "workflow-templates")
    return f"{host}/{route}/{namespace}/{name}"


def _kube_namespace() -> str | None:
    from kubernetes import config

    try:
        _, context = config.list_kube_config_contexts()
    except (config.ConfigException, OSError):
        return None
    return (context or {}).get("context", {}).get("namespace")


def submit_kube(doc: dict, namespace: str, *, waiter: dict | None = None) -> int:
    """Create the document through the Kubernetes API from the current kubeconfig, as `kubectl create` would."""
    from kubernetes import config
    from kubernetes.client.exceptions import ApiException

    from nvcre_hera.argo_run import create_workflow

    try:
        api = config.new_client_from_config()
    except (config.ConfigException, OSError) as exc:
        raise InputError(f"no usable kubeconfig: {exc}", "KUBECONFIG") from None
    try:
        created = create_workflow(api, namespace, doc)
    except ApiException as exc:
        reason = json.loads(exc.body).get("message") if exc.body and exc.body.startswith("{") else exc.reason
        print(f"nvcre: create {doc['kind']} in {namespace} failed: {exc.status} {reason}", file=sys.stderr)
        return 1
    name = created["metadata"]["name"]
    print(f"created {doc['kind']} {namespace}/{name} through the Kubernetes API")
    if waiter is not None and doc["kind"] == "Workflow":
        from kubernetes import client

        custom = client.CustomObjectsApi(api)
        return wait_for_verdict(lambda: custom.get_namespaced_custom_object(
            "argoproj.io", "v1alpha1", namespace, "workflows", name), name, **waiter)
    return 0


POLL_ERRORS = 5  # consecutive failed polls before --wait gives up (exit 1: no verdict is no pass)


def _waiter(args: argparse.Namespace) -> dict | None:
    """--wait / --watch / --wait-timeout as keyword arguments of wait_for_verdict, None without --wait or --watch."""
    if not (getattr(args, "wait", False) or getattr(args, "watch", False)):
        return None
    timeout = getattr(args, "wait_timeout", None)
    if timeout is not None and timeout <= 0:
        raise InputError(f"{timeout:g} is not a positive number of seconds", "--wait-timeout")
    poll = getattr(args, "poll_interval", 2.0)
    if poll is None or not poll > 0:
        raise InputError(f"{poll} is not a positive number of seconds", "--poll-interval")
    return {"watch": bool(getattr(args, "watch", False)), "timeout_s": timeout, "poll_s": poll}


def wait_for_verdict(get: Callable[[], dict], name: str, poll_s: float = 2.0, *, watch: bool = False,
                     timeout_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> int:
    """Poll until the workflow ends, then print its report card; exit 0 PASSED, 1 otherwise (FAILED, INCOMPLETE, no
    report, or still running at `timeout_s`), like certify. `watch`: live progress from `status.nodes` meanwhile,
    with the same formatter as certify (nvcre_hera.progress)."""
    from nvcre_hera.progress import Printer
    from nvcre_hera.report import render_card
    from nvcre_hera.workflow_report import report_of, workflow_nodes

    printer = Printer("text") if watch else None
    started, errors = clock(), 0
    while True:
        try:
            wf = get()
            errors = 0
        except Exception as exc:  # noqa: BLE001 - the server's answer, in one line; a few misses are retried
            errors += 1
            print(f"nvcre: reading workflow {name} failed ({errors}/{POLL_ERRORS}): {' '.join(str(exc).split())[:300]}",
                  file=sys.stderr)
            if errors >= POLL_ERRORS:
                return 1
            sleep(poll_s)
            continue
        status = wf.get("status") or {}
        phase = status.get("phase")
        if printer is not None:
            if printer.progress is None:
                printer.start(wf)
            for node in sorted(workflow_nodes(wf).values(), key=lambda n: str(n.get("finishedAt") or "")):
                printer.argo_node(node, status.get("startedAt"))
        if phase in ("Succeeded", "Failed", "Error"):
            break
        if timeout_s is not None and clock() - started > timeout_s:
            print(f"nvcre: workflow {name} is still {phase or 'Pending'} after {timeout_s:g}s (--wait-timeout): "
                  "no verdict", file=sys.stderr)
            return 1
        sleep(poll_s)
    if printer is not None:
        printer.end(name, phase, status.get("message") or "", clock() - started)
    report = report_of(wf)
    if report is None:
        print(f"nvcre: workflow {name} ended {phase} before its judge wrote a report: "
              f"{status.get('message') or 'see the workflow'}", file=sys.stderr)
        return 1
    print()
    print(render_card(report).rstrip("\n"))
    print(f"workflow {name} {phase}: {report.get('result')}")
    return 0 if report.get("result") == "PASSED" else 1


__all__ = ["submit", "submit_kube", "ui_url", "wait_for_verdict"]
