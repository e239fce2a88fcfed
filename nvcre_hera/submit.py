"""`nvcre submit`: compile and create the Workflow (or WorkflowTemplate / CronWorkflow) on an Argo Server through
Hera's WorkflowsService, configured like the argo CLI: ARGO_SERVER (host:port; https unless ARGO_SECURE=false),
ARGO_TOKEN, ARGO_NAMESPACE, ARGO_INSECURE_SKIP_VERIFY.
"""

from __future__ import annotations

import argparse
import os
import sys

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


def submit(args: argparse.Namespace) -> int:
    from hera.workflows import WorkflowsService

    from nvcre_hera.cli import _compile_options, in_file
    from nvcre_hera.compile.workflow import build
    from nvcre_hera.spec_load import load_certification

    cert = load_certification(args.cert)
    host, token, verify = argo_connection(args.insecure)
    args.namespace = args.namespace or os.environ.get("ARGO_NAMESPACE") or cert.metadata.namespace or "nvcre"
    opts = _compile_options(args)
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
    return 0


__all__ = ["argo_connection", "submit"]
