"""manifests/: RBAC grants exactly what the steps use, in one namespace (nodes, being cluster-scoped, read-only)."""

from __future__ import annotations

from pathlib import Path

import yaml

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"


def docs() -> list[dict]:
    out = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return out


def rules(kind: str) -> dict[tuple[str, str], set[str]]:
    found = {}
    for doc in docs():
        if doc["kind"] == kind:
            for rule in doc["rules"]:
                for group in rule["apiGroups"]:
                    for res in rule["resources"]:
                        found[(group, res)] = set(rule["verbs"])
    return found


def test_role_grants_only_the_verbs_the_steps_use():
    assert rules("Role") == {
        ("kubeflow.org", "mpijobs"): {"create", "get", "list", "delete"},
        ("jobset.x-k8s.io", "jobsets"): {"create", "get", "list", "delete"},
        ("", "pods"): {"list"},
        ("", "pods/log"): {"get"},
        ("", "configmaps"): {"create", "get", "patch", "delete"},
        ("argoproj.io", "workflowtaskresults"): {"create", "patch"},
    }


def test_cluster_role_only_reads_nodes():
    assert rules("ClusterRole") == {("", "nodes"): {"get", "list"}}


def test_no_wildcards_and_one_namespace():
    for doc in docs():
        for rule in doc.get("rules", []):
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
        if doc["kind"] in ("Role", "RoleBinding", "ServiceAccount"):
            assert doc["metadata"]["namespace"] == "nvcre"
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == "nvcre"
    assert sorted(kustomization["resources"]) == sorted(p.name for p in MANIFESTS.glob("*.yaml")
                                                         if p.name != "kustomization.yaml")


def test_kube_cluster_calls_are_covered_by_the_role():
    """Every API call KubeCluster makes maps to a granted (resource, verb)."""
    source = (Path(__file__).resolve().parent.parent / "nvcre_hera" / "cluster" / "kube.py").read_text()
    needed = {
        "list_node": ("", "nodes", "list"), "read_node": ("", "nodes", "get"),
        "list_namespaced_pod": ("", "pods", "list"), "read_namespaced_pod_log": ("", "pods/log", "get"),
        # the diagnose store (steps/diagnose_store.py)
        "create_namespaced_config_map": ("", "configmaps", "create"),
        "read_namespaced_config_map": ("", "configmaps", "get"),
        "patch_namespaced_config_map": ("", "configmaps", "patch"),
        "delete_namespaced_config_map": ("", "configmaps", "delete"),
    }
    granted = {**rules("Role"), **rules("ClusterRole")}
    for call, (group, res, verb) in needed.items():
        if call in source:
            assert verb in granted[(group, res)], call
    for call, verb in (("create_namespaced_custom_object", "create"), ("get_namespaced_custom_object", "get"),
                       ("delete_namespaced_custom_object", "delete"), ("list_namespaced_custom_object", "list")):
        if call in source:
            assert verb in granted[("kubeflow.org", "mpijobs")] and verb in granted[("jobset.x-k8s.io", "jobsets")]
    for forbidden in ("patch_node", "replace_node", "delete_node", "patch_namespaced_custom_object"):
        assert forbidden not in source  # the tool reports; it never cordons, taints or edits
