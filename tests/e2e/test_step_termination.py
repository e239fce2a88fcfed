"""A test pod stopped mid-job deletes its job object itself: `argo terminate` runs no exit handler, and the kubelet
ends a pod past its activeDeadlineSeconds the same way (SIGTERM to the container's process).

Real: the kube-apiserver with RBAC, the MPIJob CRD, the workflow's service-account token, `nvcre-step run` as its
own process, and the signal. Not here: mpi-operator (the MPIJob never starts, so the step is waiting for it, as a
step is for most of a real test), a kubelet's grace period and SIGKILL after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

NODE = "nvcre-e2e-runner"  # the control plane's one Node (docs/controlplane.md)


def _plan() -> dict:
    from nvcre_hera.compile.plan import CompileOptions, workflow_plan
    from nvcre_hera.spec_load import parse_certification, resolve_categories

    cert = parse_certification("""
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata: {name: stop-me}
spec:
  target: {nodeSelector: {nvidia.com/gpu.present: "true"}}
  categories: [{domain: communication, variant: nccl-all-reduce, options: {timeoutPerJob: 10m}}]
""")
    return workflow_plan(cert, resolve_categories(cert), CompileOptions(step_image="img"))


def _mpijobs(api, namespace: str, workflow: str) -> list[dict]:
    from nvcre_hera.cluster.base import WORKFLOW_LABEL

    return api.list_namespaced_custom_object("kubeflow.org", "v2beta1", namespace, "mpijobs",
                                             label_selector=f"{WORKFLOW_LABEL}={workflow}")["items"]


def test_sigterm_mid_job_deletes_the_mpijob_as_the_service_account(cp, tmp_path):
    from kubernetes import client, config

    admin = client.CustomObjectsApi(config.new_client_from_config(str(cp.admin_kubeconfig)))
    workflow = f"stop-me-{os.getpid()}"
    step = Path(sys.executable).parent / "nvcre-step"
    argv = [str(step), "run", "--plan", json.dumps(_plan()), "--category", "0",
            "--group", json.dumps({"id": "g0", "nodes": [NODE]}), "--platform", "onprem", "--gpu", "h100",
            "--workflow-name", workflow, "--workflow-uid", "00000000-0000-0000-0000-000000000001",
            "--namespace", cp.namespace, "--out", str(tmp_path)]
    proc = subprocess.Popen(argv, env={**os.environ, "KUBECONFIG": str(cp.sa_kubeconfig)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _mpijobs(admin, cp.namespace, workflow) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        created = _mpijobs(admin, cp.namespace, workflow)
        assert proc.poll() is None, f"the step ended before it was stopped: {proc.communicate()[0][-800:]}"
        assert len(created) == 1, "the step did not create its MPIJob as the service account"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out[-800:]
    assert f"stopping: deleted {created[0]['metadata']['name']}: True" in out
    assert _mpijobs(admin, cp.namespace, workflow) == []
