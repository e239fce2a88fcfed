"""Node dicts from a SimulatedCluster spec look like the real ones (shared/data/real/nodes/)."""

from __future__ import annotations

import re

import pytest

from nvcre_hera.catalog import architecture_of, platform_settings
from nvcre_hera.sim.nodes import CLIQUE_LABEL, RACK_LABEL, build_nodes, with_health
from nvcre_hera.sim.spec import parse_spec


def _spec(platform="aws", gpu="h100", **nodes):
    return parse_spec({"apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": "t"},
                       "spec": {"platform": platform, "gpu": gpu, "nodes": {"count": 4, **nodes}, "seed": 1}})


@pytest.mark.parametrize(
    ("platform", "pattern"),
    [("aws", r"^aws:///us-east-1a/i-0[0-9a-f]{16}$"), ("gcp", r"^gce://nvcre-sim/us-central1-a/gpu-node-01$"),
     ("azure", r"^azure:///subscriptions/[0-9a-f-]{36}/resourceGroups/.+/virtualMachines/0$"),
     ("oci", r"^ocid1\.instance\.oc1\.iad\.[a-z0-9]+$")],
)
def test_provider_id_by_platform(platform, pattern):
    node = build_nodes(_spec(platform))[0]
    assert re.match(pattern, node["spec"]["providerID"])
    assert node["spec"]["providerID"].startswith(platform_settings(platform)["providerIDPrefix"])


def test_onprem_has_no_provider_id_and_an_rdma_resource():
    node = build_nodes(_spec("onprem"))[0]
    assert "providerID" not in node["spec"]
    assert node["status"]["allocatable"]["rdma/ib"] == "8"


def test_labels_resources_and_ready():
    node = build_nodes(_spec("aws"))[0]
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert architecture_of(labels["nvidia.com/gpu.product"]) == "h100"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["kubernetes.io/hostname"] == "gpu-node-01"
    assert labels["kubernetes.io/arch"] == "amd64"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert node["status"]["allocatable"]["vpc.amazonaws.com/efa"] == "32"  # p5.48xlarge, as the real describe shows
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "message": "kubelet is posting ready status"}]
    assert CLIQUE_LABEL not in labels and RACK_LABEL not in labels


def test_gb300_cliques_racks_and_arm():
    nodes = build_nodes(_spec("oci", "gb300", count=8, perClique=4, perRack=2))
    labels = [n["metadata"]["labels"] for n in nodes]
    assert {l["nvidia.com/gpu.product"] for l in labels} == {"NVIDIA-GB300"}
    assert {l["kubernetes.io/arch"] for l in labels} == {"arm64"}
    assert {l["nvidia.com/gpu.count"] for l in labels} == {"4"}
    cliques = [l[CLIQUE_LABEL] for l in labels]
    assert len(set(cliques[:4])) == 1 and len(set(cliques[4:])) == 1 and cliques[0] != cliques[4]
    assert re.match(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.\d+$", cliques[0])
    assert [l[RACK_LABEL] for l in labels] == ["rack-01", "rack-01", "rack-02", "rack-02", "rack-03", "rack-03",
                                               "rack-04", "rack-04"]
    assert nodes[0]["status"]["allocatable"]["nvidia.com/mlnxnics"] == "8"


def test_overrides_give_minority_nodes():
    nodes = build_nodes(_spec(overrides=[{"node": "gpu-node-02", "gpu": "a100"}, {"node": "gpu-node-03", "gpus": 4}]))
    assert nodes[1]["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert nodes[2]["metadata"]["labels"]["nvidia.com/gpu.count"] == "4"
    assert nodes[2]["status"]["allocatable"]["nvidia.com/gpu"] == "4"


def test_with_health():
    node = build_nodes(_spec())[0]
    cordoned = with_health(node, "Unschedulable")
    assert cordoned["spec"]["unschedulable"] is True
    assert "unschedulable" not in node["spec"]  # the original is untouched
    down = with_health(node, "NotReady")
    assert down["status"]["conditions"][0]["status"] == "False"
    assert down["spec"]["taints"][0]["key"] == "node.kubernetes.io/not-ready"
