"""The diagnose store (nvcre_hera/steps/diagnose_store.py) on the real kube-apiserver, as the workflow's service
account, through `KubeCluster`: the Role grants what the plan, run and cleanup steps call and no `list`; a merge
patch removes a key with null and concurrent patches of different keys all land (the run pods of one round write
their results at once); a retried create is answered 409 and left as it is.

Not proven here: the garbage collector deleting a store with its Workflow (no kube-controller-manager runs on the
loopback control plane); `make e2e` shows the stores' owner references (e2e/differential.py `stores_left`)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from nvcre_hera.cluster.base import ConfigMapMissing
from nvcre_hera.cluster.kube import KubeCluster
from nvcre_hera.steps.diagnose_store import Store, manifest, result_key, store_name

pytestmark = pytest.mark.e2e


def test_the_store_lives_on_the_api_server_as_the_service_account(cp):
    sa_client = k8s_config.new_client_from_config(config_file=str(cp.sa_kubeconfig))
    cluster = KubeCluster(namespace=cp.namespace, api_client=sa_client, sleep=lambda s: None)
    workflow = f"store-{uuid.uuid4().hex[:8]}"
    store = Store(name=store_name(workflow, 0), namespace=cp.namespace, workflow_name=workflow,
                  workflow_uid=str(uuid.uuid4()))
    assert cluster.read_configmap(store.name) is None
    assert cluster.create_configmap(manifest(store)) is True
    assert cluster.create_configmap(manifest(store)) is False  # a retried first plan step
    keys = [result_key(f"r1-t{i}") for i in range(24)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda key: cluster.patch_configmap(store.name, {key: key.upper()}), keys))
    assert cluster.read_configmap(store.name) == {key: key.upper() for key in keys}
    cluster.patch_configmap(store.name, {keys[0]: None, "state.1": "x"})
    data = cluster.read_configmap(store.name)
    assert keys[0] not in data and data["state.1"] == "x" and len(data) == len(keys)

    admin = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(cp.admin_kubeconfig)))
    meta = admin.read_namespaced_config_map(store.name, cp.namespace).metadata
    assert [(o.kind, o.name, o.uid) for o in meta.owner_references] == [("Workflow", workflow, store.workflow_uid)]
    assert meta.labels["nvcre-hera.dev/workflow"] == workflow

    with pytest.raises(k8s.ApiException) as denied:  # cleanup deletes by name: no list is granted
        k8s.CoreV1Api(sa_client).list_namespaced_config_map(cp.namespace)
    assert denied.value.status == 403

    assert cluster.delete_configmap(store.name) is True
    assert cluster.delete_configmap(store.name) is False
    with pytest.raises(ConfigMapMissing):  # a run step whose store is gone: its test counts as failed
        cluster.patch_configmap(store.name, {keys[1]: "late"})
