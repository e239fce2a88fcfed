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

from nvcre_hera.errors import InputError


def argo_connection(insecure: bool = False) -> tuple[str, str | None, bool]:
    """(host URL, token, verify TLS) from the argo CLI's environment variables."""
    server = os.environ.get("ARGO_SERVER", "").strip()
    if not server:
        raise InputError("ARGO_SERVER is not set (host:port of the Argo Server, as for the argo CLI)", "environment")
    if "://" not in server:
        secure = os.environ.get("ARGO_SECURE", "true").lower() != "false"
        server = ("https://" if secure else "http://") + server
    skip = insecure or os.environ.get("ARGO_INSECURE_SKIP_VERIFY", "").lower() == "true"
    return server.rstrip("/"), os.environ.get("ARGO_TOKEN") or None, not skip


def submit(args: argparse.Namespace, compile_options: Callable, in_file: Callable) -> int:
    """`compile_options(args)` and `in_file(path)` come from the CLI (passed in: this module does not import it)."""
    from hera.workflows import WorkflowsService

    from nvcre_hera.compile.workflow import build
    from nvcre_hera.spec_load import load_certification

    cert = load_certification(args.cert)
    if getattr(args, "kube", False):
        args.namespace = args.namespace or cert.metadata.namespace or _kube_namespace() or "nvcre"
        opts = compile_options(args)
        with in_file(args.cert):
            doc = build(cert, opts).to_dict()
        return submit_kube(doc, opts.namespace, wait=getattr(args, "wait", False))
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
    print(f"Argo UI: {host}/workflows/{opts.namespace}/{name}" if holder.kind == "Workflow" else
          f"Argo UI: {host}/{'cron-workflows' if holder.kind == 'CronWorkflow' else 'workflow-templates'}/"
          f"{opts.namespace}/{name}")
    if getattr(args, "wait", False) and holder.kind == "Workflow":
        return wait_for_verdict(lambda: holder.workflows_service.get_workflow(name, namespace=opts.namespace)
                                .dict(by_alias=True, exclude_none=True), name)
    return 0


def _kube_namespace() -> str | None:
    from kubernetes import config

    try:
        _, context = config.list_kube_config_contexts()
    except (config.ConfigException, OSError):
        return None
    return (context or {}).get("context", {}).get("namespace")


def submit_kube(doc: dict, namespace: str, *, wait: bool = False) -> int:
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
    if wait and doc["kind"] == "Workflow":
        from kubernetes import client

        custom = client.CustomObjectsApi(api)
        return wait_for_verdict(lambda: custom.get_namespaced_custom_object(
            "argoproj.io", "v1alpha1", namespace, "workflows", name), name)
    return 0


def wait_for_verdict(get: Callable[[], dict], name: str, poll_s: float = 2.0) -> int:
    """Poll until the workflow ends; exit 0 PASSED, 1 otherwise (FAILED, INCOMPLETE, or no report), like certify."""
    from nvcre_hera.workflow_report import report_of

    while True:
        wf = get()
        phase = (wf.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed", "Error"):
            break
        time.sleep(poll_s)
    report = report_of(wf)
    result = (report or {}).get("result", "no report")
    print(f"workflow {name} {phase}: {result}")
    return 0 if result == "PASSED" else 1


__all__ = ["argo_connection", "submit", "submit_kube", "wait_for_verdict"]
