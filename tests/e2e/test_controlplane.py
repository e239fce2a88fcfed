"""The loopback control plane is real: the API server enforces the project's RBAC on the workflow's token (a verb
role.yaml does not grant is a 403 from kube-apiserver), the Argo controller picks up a Workflow created through the
API, the Argo Server authenticates bearer tokens as Kubernetes identities, and `down` leaves no process.

Not proven here: that workflows *finish* (there is no kubelet; the pod runner does that)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from nvcre_hera.controlplane import down, ensure_up, load_state
from nvcre_hera.controlplane.procs import alive

pytestmark = pytest.mark.e2e


def _api(kubeconfig) -> k8s.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(kubeconfig))


def _status(fn, *args, **kwargs) -> int:
    try:
        fn(*args, **kwargs)
        return 200
    except k8s.ApiException as e:
        return e.status


def test_the_workflow_token_is_the_service_account_and_rbac_is_enforced(cp):
    sa = _api(cp.sa_kubeconfig)
    review = k8s.AuthenticationV1Api(sa).create_self_subject_review(k8s.V1SelfSubjectReview())
    assert review.status.user_info.username == "system:serviceaccount:nvcre:nvcre-hera"
    co, core = k8s.CustomObjectsApi(sa), k8s.CoreV1Api(sa)
    # granted by manifests/role.yaml and node-reader.yaml
    assert _status(co.list_namespaced_custom_object, "kubeflow.org", "v2beta1", "nvcre", "mpijobs") == 200
    assert _status(co.list_namespaced_custom_object, "jobset.x-k8s.io", "v1alpha2", "nvcre", "jobsets") == 200
    assert _status(core.list_namespaced_pod, "nvcre") == 200
    assert _status(core.list_node) == 200
    # granted by the optional component manifests/components/trainjob, which the e2e control plane applies
    assert _status(co.list_namespaced_custom_object, "trainer.kubeflow.org", "v1alpha1", "nvcre", "trainjobs") == 200
    # not granted: a real 403 from the API server, naming the service account
    with pytest.raises(k8s.ApiException) as e:
        core.list_namespaced_secret("nvcre")
    assert e.value.status == 403
    body = json.loads(e.value.body)
    assert body["reason"] == "Forbidden" and "system:serviceaccount:nvcre:nvcre-hera" in body["message"]
    assert _status(core.list_namespaced_pod, "default") == 403  # one namespace only
    assert _status(core.delete_node, "nvcre-e2e-runner", dry_run="All") == 403  # nodes are read-only
    assert _status(co.list_namespaced_custom_object, "argoproj.io", "v1alpha1", "nvcre", "workflows") == 403


def test_the_crd_schemas_judge_job_objects(cp):
    """A dry-run MPIJob without spec.mpiReplicaSpecs is refused by the v0.8.0 CRD schema (422), with the SA token."""
    co = k8s.CustomObjectsApi(_api(cp.sa_kubeconfig))
    bad = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "bad"}, "spec": {}}
    with pytest.raises(k8s.ApiException) as e:
        co.create_namespaced_custom_object("kubeflow.org", "v2beta1", "nvcre", "mpijobs", bad, dry_run="All")
    assert e.value.status == 422 and "mpiReplicaSpecs" in e.value.body


def _workflow(name: str) -> dict:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": name, "namespace": "nvcre"},
            "spec": {"entrypoint": "main", "serviceAccountName": "nvcre-hera",
                     "templates": [{"name": "main", "container": {"image": "busybox:1.36",
                                                                  "command": ["echo", "hello"]}}]}}


def test_the_controller_picks_up_a_workflow_and_creates_its_pod(cp):
    api = _api(cp.admin_kubeconfig)
    co, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    name = f"e2e-pickup-{uuid.uuid4().hex[:6]}"
    co.create_namespaced_custom_object("argoproj.io", "v1alpha1", "nvcre", "workflows", _workflow(name))
    try:
        deadline, phase, pods = time.monotonic() + 60, None, []
        while time.monotonic() < deadline:
            wf = co.get_namespaced_custom_object("argoproj.io", "v1alpha1", "nvcre", "workflows", name)
            phase = wf.get("status", {}).get("phase")
            pods = core.list_namespaced_pod("nvcre", label_selector=f"workflows.argoproj.io/workflow={name}").items
            if phase in ("Pending", "Running") and pods:
                break
            time.sleep(0.25)
        assert phase in ("Pending", "Running"), f"workflow phase {phase!r} after 60 s"
        assert len(pods) == 1 and pods[0].spec.service_account_name == "nvcre-hera"
        assert [c.name for c in pods[0].spec.containers] == ["wait", "main"]
        assert pods[0].spec.node_name is None  # no scheduler: the runner binds pods
    finally:
        co.delete_namespaced_custom_object("argoproj.io", "v1alpha1", "nvcre", "workflows", name)
        # no kube-controller-manager, so no garbage collector: the pod is deleted by hand
        core.delete_collection_namespaced_pod("nvcre", label_selector=f"workflows.argoproj.io/workflow={name}",
                                              grace_period_seconds=0)


def _argo_get(cp, path: str, token: str | None) -> tuple[int, dict]:
    req = urllib.request.Request(cp.argo_server + path,
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_argo_server_authenticates_bearer_tokens_as_kubernetes_identities(cp):
    assert _argo_get(cp, "/api/v1/workflows/nvcre", None)[0] == 401
    assert _argo_get(cp, "/api/v1/workflows/nvcre", "not-a-token")[0] == 401
    status, body = _argo_get(cp, "/api/v1/workflows/nvcre", cp.submitter_token)
    assert status == 200 and "metadata" in body
    # the workflow's own SA may not list Workflows (role.yaml): Argo Server asks the API server as that token
    status, body = _argo_get(cp, "/api/v1/workflows/nvcre", cp.sa_token)
    assert status == 403 and "not allowed to list workflows" in body.get("message", "")


def test_up_again_reuses_the_healthy_control_plane(cp):
    again = ensure_up(cp.state_dir)
    assert again.pids == cp.pids and again.apiserver == cp.apiserver
    v = load_state(cp.state_dir).versions
    assert (v["etcd"], v["kubernetes"]) == ("3.7.3", "v1.37.2") and v["argo"].startswith("v4.0.5")


def test_down_leaves_no_process(tmp_path):
    sd = tmp_path / "run"
    st = ensure_up(sd)
    procs = list(st.procs.values())
    assert len(procs) == 4 and all(alive(p) for p in procs)
    cli = [sys.executable, "-m", "nvcre_hera.controlplane"]
    assert subprocess.run([*cli, "status", "--state-dir", str(sd)], capture_output=True).returncode == 0
    out = subprocess.run([*cli, "down", "--state-dir", str(sd)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert not any(alive(p) for p in procs) and not sd.exists()
    for p in procs:  # nor any process of their groups
        assert subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True).returncode == 1
    assert down(sd) == []
    again = subprocess.run([*cli, "down", "--state-dir", str(sd)], capture_output=True, text=True)
    assert again.returncode == 0 and "nothing" in again.stdout
