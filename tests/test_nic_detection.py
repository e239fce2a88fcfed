"""The NIC (RDMA device) resource: detected from the nodes' status.allocatable in discovery, requested by the
workers, `nicResourceName` winning, and the report saying which one and from where. On a platform whose NCCL runs
over RDMA, finding none is said in the report (INCOMPLETE at best), never a silent run over TCP sockets.
Node dicts here are written by hand in the Kubernetes shape; the resource names are the upstream ones cited in
docs/placement.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.jobs import JobContext, plan_job, render_job
from nvcre_hera.nics import choose_nic, detect_nic
from nvcre_hera.spec_load import parse_certification, resolve_categories

ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = ROOT / "examples" / "clusters"
FULL_SCALE = ROOT / "examples" / "certifications" / "full-scale.yaml"


def _node(name: str, **allocatable: str) -> dict:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "192", "nvidia.com/gpu": "8",
                                                                   **allocatable}}}


SHARED = "rdma/rdma_shared_device_a"


def test_detects_the_shared_rdma_device_on_every_node() -> None:
    found = detect_nic([_node("a", **{SHARED: "63"}), _node("b", **{SHARED: "63"})])
    assert (found.resource, found.allocatable, found.missing) == (SHARED, 63, [])


@pytest.mark.parametrize("name", ["nvidia.com/hostdev", "vpc.amazonaws.com/efa", "rdma/hca_shared_devices_a",
                                  "nvidia.com/mlnxnics"])
def test_detects_each_known_device_plugin_name(name: str) -> None:
    assert detect_nic([_node("a", **{name: "8"})]).resource == name


def test_gpus_cpus_and_zero_counts_are_no_nic() -> None:
    found = detect_nic([_node("a", **{SHARED: "0", "example.com/foo": "4"})])
    assert found.resource is None and "no node offers a NIC resource" in found.message


def test_names_the_nodes_that_lack_it_and_the_smallest_count() -> None:
    found = detect_nic([_node("a", **{"nvidia.com/hostdev": "8"}), _node("b", **{"nvidia.com/hostdev": "4"}),
                        _node("c")])
    assert (found.resource, found.allocatable, found.missing) == ("nvidia.com/hostdev", 4, ["c"])


def test_a_tie_is_no_guess_unless_the_platform_names_one() -> None:
    nodes = [_node("a", **{SHARED: "63", "nvidia.com/hostdev": "8"})]
    assert detect_nic(nodes).resource is None
    assert "set nicResourceName" in detect_nic(nodes).message
    assert detect_nic(nodes, preferred="nvidia.com/hostdev").resource == "nvidia.com/hostdev"


def test_nic_resource_name_wins_over_detection() -> None:
    assert choose_nic({"nicResourceName": "rdma/ib"}, {"resource": SHARED}, None) == ("rdma/ib", "nicResourceName")
    assert choose_nic({}, {"resource": SHARED}, "nvidia.com/mlnxnics") == (SHARED, "detected")
    assert choose_nic({}, {"resource": None}, "nvidia.com/mlnxnics") == (None, "none")


def _category(options: dict | None = None):
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                                  "options": options or {}}]}}
    return resolve_categories(parse_certification(yaml.safe_dump(doc), "cert.yaml"))[0]


def _worker_limits(cat, nic: dict | None) -> dict:
    ctx = JobContext("wf", "uid", "nvcre", "onprem", "h100", nic=nic)
    job = render_job(cat.entry, 0, cat.options, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx)
    return job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_on_prem_workers_request_the_detected_resource() -> None:
    """The on-prem platform names no NIC resource: before detection the workers requested none."""
    assert _worker_limits(_category(), {"resource": SHARED, "allocatable": 63}) == {
        "nvidia.com/gpu": "8", SHARED: "8"}


def test_never_more_than_a_node_offers() -> None:
    assert _worker_limits(_category(), {"resource": "nvidia.com/hostdev", "allocatable": 4}) == {
        "nvidia.com/gpu": "8", "nvidia.com/hostdev": "4"}


def test_nic_resource_name_and_mlnx_per_node_are_taken_as_given() -> None:
    cat = _category({"nicResourceName": "rdma/ib", "mlnxPerNode": 2})
    assert _worker_limits(cat, {"resource": SHARED, "allocatable": 63}) == {"nvidia.com/gpu": "8", "rdma/ib": "2"}


def test_plan_records_where_the_resource_came_from() -> None:
    cat = _category()
    ctx = JobContext("wf", "uid", "nvcre", "onprem", "h100", nic={"resource": None, "allocatable": 0})
    job = plan_job(cat.entry, 0, cat.options, {"id": "g0", "nodes": ["a", "b"]}, 0, ctx)
    assert (job.nic_resource, job.nic_source) == (None, "none")


def _certify(tmp_path: Path, cluster: str, cert: Path = FULL_SCALE) -> tuple[int, dict]:
    code = main(["certify", str(cert), "--cluster", str(CLUSTERS / cluster), "--out", str(tmp_path), "--quiet"])
    return code, json.loads((tmp_path / "report.json").read_text())


def test_certify_on_prem_rdma_requests_it_and_reports_it(tmp_path: Path) -> None:
    """End to end on the simulator, whose stand-in scheduler gives RDMA only to pods that request the nodes'
    resource (sim/placement.py): without the request this run read NET/Socket and failed TransportMismatch."""
    code, report = _certify(tmp_path, "onprem-rdma.yaml")
    (cat,) = report["categories"]
    assert cat["nicResource"] == {"resource": SHARED, "source": "detected"}
    assert (code, report["result"]) == (0, "PASSED")
    assert "NIC:        rdma/rdma_shared_device_a (detected)" in (tmp_path / "report.txt").read_text()


def test_certify_on_prem_without_rdma_says_so(tmp_path: Path) -> None:
    code, report = _certify(tmp_path, "onprem-no-rdma.yaml")
    (cat,) = report["categories"]
    assert cat["nicResource"]["source"] == "none"
    assert "no RDMA device resource was found" in cat["incomplete"]
    assert report["result"] != "PASSED" and code == 1
    # the run itself went over sockets, and the log's own evidence says so as well
    assert cat["failureReason"] == "TransportMismatch"


def test_transport_check_off_reports_no_fabric_gap(tmp_path: Path) -> None:
    """With transportCheck: false the user asked not to judge the transport: the gap is then not reported (the
    socket-speed run still fails its bandwidth threshold)."""
    cert = tmp_path / "cert.yaml"
    doc = yaml.safe_load(FULL_SCALE.read_text())
    doc["spec"]["transportCheck"] = False
    cert.write_text(yaml.safe_dump(doc))
    code, report = _certify(tmp_path / "out", "onprem-no-rdma.yaml", cert)
    assert "incomplete" not in report["categories"][0]
    assert report["categories"][0]["failureReason"] == "ThresholdViolation" and code == 1


class _WithoutNic:
    """onprem-rdma.yaml with the NIC resource taken off some nodes (as where the device plugin's pod is not up)."""

    def __init__(self, names: set[str]) -> None:
        from nvcre_hera.sim.cluster import load_sim_cluster

        self.inner, self.names = load_sim_cluster(CLUSTERS / "onprem-rdma.yaml"), names

    def list_nodes(self) -> list[dict]:
        nodes = self.inner.list_nodes()
        for n in nodes:
            if n["metadata"]["name"] in self.names:
                n["status"]["allocatable"].pop(SHARED)
        return nodes

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_nodes_without_the_resource_are_excluded_not_left_pending() -> None:
    from nvcre_hera.compile.plan import CompileOptions, workflow_plan
    from nvcre_hera.spec_load import load_certification
    from nvcre_hera.steps.discover import discover
    from nvcre_hera.steps.io import Outputs

    cert = load_certification(FULL_SCALE)
    plan = workflow_plan(cert, resolve_categories(cert), CompileOptions(step_image="img"))
    out = Outputs("/tmp/nvcre", in_memory=True)
    assert discover(plan, _WithoutNic({"gpu-node-03"}), out, lambda _: None) == 0
    summary = json.loads(out.files["/tmp/nvcre/summary"])
    assert [(e["name"], e["reason"]) for e in summary["excludedNodes"]] == [("gpu-node-03", "NoNICResource")]
    assert summary["selectedNodes"] == 7
    assert summary["categories"][0]["nic"] == {"resource": SHARED, "source": "detected"}
    groups = json.loads(out.files["/tmp/nvcre/groups-0"])
    assert "gpu-node-03" not in {n for g in groups for n in g["nodes"]}
    assert json.loads(out.files["/tmp/nvcre/nic"]) == {"resource": SHARED, "allocatable": 63}
