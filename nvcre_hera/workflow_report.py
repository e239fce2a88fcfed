"""The report a finished Workflow carries: the judge node's `report` output parameter (what `nvcre report
--workflow` and `nvcre submit --wait` read back). Works on a Workflow dict from the Kubernetes API or the Argo
Server alike (both have `status.nodes[*].templateName` and `outputs.parameters`)."""

from __future__ import annotations

import base64
import gzip
import json


def workflow_nodes(workflow: dict) -> dict[str, dict]:
    """`status.nodes`, or, for a workflow over Argo's size limit (1 MiB by default), the nodes the controller
    compressed into `status.compressedNodes`: base64 of gzipped JSON (argo-workflows v4.0.5
    workflow/packer/packer.go DecompressWorkflow, util/file/fileutil.go CompressEncodeString)."""
    status = workflow.get("status") or {}
    if status.get("nodes"):
        return status["nodes"]
    packed = status.get("compressedNodes")
    if not packed:
        return {}
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def report_of(workflow: dict) -> dict | None:
    nodes = workflow_nodes(workflow).values()
    judged = sorted((n for n in nodes if n.get("templateName") == "judge"), key=lambda n: n.get("name", ""))
    for node in reversed(judged):
        for param in (node.get("outputs") or {}).get("parameters") or []:
            if param.get("name") == "report" and param.get("value") not in (None, "", "{}"):
                try:
                    report = json.loads(param["value"])
                except ValueError:
                    return None
                from nvcre_hera.report.timing import spans_from_argo, with_wall_runtimes

                return with_wall_runtimes(report, spans_from_argo(
                    (workflow.get("metadata") or {}).get("name") or "", workflow_nodes(workflow).values())) if isinstance(report, dict) else None
    return None


def fetch_report(name: str, namespace: str | None) -> dict:
    """The finished Workflow's report, through the Argo Server (ARGO_SERVER, ARGO_TOKEN, as the argo CLI) when set,
    else through the Kubernetes API from the current kubeconfig."""
    import os

    from nvcre_hera.errors import InputError

    ns = namespace or os.environ.get("ARGO_NAMESPACE") or "nvcre"
    if os.environ.get("ARGO_SERVER"):
        from hera.workflows import WorkflowsService

        from nvcre_hera.argo_connection import argo_connection

        host, token, verify = argo_connection()
        try:
            wf = WorkflowsService(host=host, token=token, namespace=ns, verify_ssl=verify).get_workflow(
                name, namespace=ns).dict(by_alias=True, exclude_none=True)
        except Exception as exc:  # the server's answer in one line
            raise InputError(f"cannot read workflow {ns}/{name} from {host}: {' '.join(str(exc).split())[:300]}",
                             "--workflow") from None
    else:
        from kubernetes import client, config
        from kubernetes.client.exceptions import ApiException

        try:
            api = config.new_client_from_config()
            wf = client.CustomObjectsApi(api).get_namespaced_custom_object("argoproj.io", "v1alpha1", ns,
                                                                           "workflows", name)
        except (config.ConfigException, OSError) as exc:
            raise InputError(f"no usable kubeconfig: {exc}", "KUBECONFIG") from None
        except ApiException as exc:
            raise InputError(f"cannot read workflow {ns}/{name}: {exc.status} {exc.reason}", "--workflow") from None
    report = report_of(wf)
    if report is None:
        phase = (wf.get("status") or {}).get("phase") or "Pending"
        raise InputError(f"workflow {ns}/{name} ({phase}) has no report yet: its judge has not written one",
                         "--workflow")
    return report


__all__ = ["fetch_report", "report_of"]
