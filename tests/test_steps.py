"""The runtime steps (`nvcre-step …`) in process against simulated clusters: groups, reasons, cleanup, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.compile.plan import CompileOptions, workflow_plan
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.spec_load import parse_certification, resolve_categories
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.main import main as step_main

CLUSTERS = Path(__file__).resolve().parent.parent / "examples" / "clusters"


def plan_for(categories: str, extra: str = "") -> dict:
    cert = parse_certification(f"""
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata: {{name: steps}}
spec:
  target: {{nodeSelector: {{nvidia.com/gpu.present: "true"}}}}
{extra}
  categories: {categories}
""")
    return workflow_plan(cert, resolve_categories(cert), CompileOptions(step_image="img"))


def step(argv: list[str], cluster) -> tuple[int, dict, list[str]]:
    out, lines = Outputs("/tmp/nvcre", in_memory=True), []
    code = step_main(argv, cluster=cluster, outputs=out, log=lines.append)
    return code, {k.rsplit("/", 1)[1]: v for k, v in out.files.items()}, lines


def discover(plan: dict, cluster) -> dict:
    code, files, _ = step(["discover", "--plan", json.dumps(plan)], cluster)
    assert code == 0
    return files


# mixed-faults.yaml is on-prem; its nodes advertise rdma/ib (sim.nodes.ONPREM_NIC_RESOURCE), as discovery would say
MIXED = ("onprem", {"resource": "rdma/ib", "allocatable": 8})


def run(plan: dict, cluster, group: dict, platform: str, gpu: str, index: int = 0,
        nic: dict | None = None) -> list[dict]:
    code, files, _ = step(["run", "--plan", json.dumps(plan), "--category", str(index), "--group", json.dumps(group),
                           "--platform", platform, "--gpu", gpu, "--workflow-name", "wf", "--workflow-uid", "u1",
                           "--namespace", "nvcre", *(["--nic", json.dumps(nic)] if nic else [])], cluster)
    assert code == 0  # a failed test is data, not a failed step
    return json.loads(files["metrics"])


def test_intra_rack_groups_follow_nvlink_cliques():
    cluster = load_sim_cluster(CLUSTERS / "gb300-nvl72.yaml")
    files = discover(plan_for("[{domain: communication, variant: nccl-all-reduce}]", "  testScale: intra-rack"),
                     cluster)
    groups = json.loads(files["groups-0"])
    assert [len(g["nodes"]) for g in groups] == [18, 18]
    summary = json.loads(files["summary"])
    assert (summary["gpu"], summary["platform"]) == ("gb300", "oci")
    cliques = {n["metadata"]["name"]: n["metadata"]["labels"]["nvidia.com/gpu.clique"] for n in cluster.list_nodes()}
    for g in groups:
        assert len({cliques[n] for n in g["nodes"]}) == 1


def test_full_scale_groups_of_nodes_per_job_with_overflow():
    cluster = load_sim_cluster(CLUSTERS / "healthy-h100-16.yaml")
    files = discover(plan_for("[{domain: communication, variant: nccl-all-reduce, options: {nodesPerJob: 6}}]"),
                     cluster)
    groups = json.loads(files["groups-0"])
    assert [len(g["nodes"]) for g in groups] == [6, 6, 6]
    assert set(groups[2]["nodes"]) >= {"gpu-node-13", "gpu-node-16"}  # 4 leftovers topped up from the first group


def test_socket_fallback_is_a_transport_mismatch_unless_switched_off():
    cluster = load_sim_cluster(CLUSTERS / "mixed-faults.yaml")
    group = {"id": "g0", "nodes": ["gpu-node-14"]}
    on = run(plan_for("[{domain: communication, variant: nccl-loopback}]"), cluster, group, MIXED[0], "h200",
             nic=MIXED[1])
    assert [r["reason"] for r in on[0]["reasons"]] == ["TransportMismatch"]
    off = run(plan_for("[{domain: communication, variant: nccl-loopback, options: {transportCheck: false}}]"),
              cluster, group, MIXED[0], "h200", nic=MIXED[1])
    assert off[0]["reasons"] == [] and off[0]["transport"] == "NET/Socket"


def test_data_corruption_and_dcgm_failure_are_reported():
    cluster = load_sim_cluster(CLUSTERS / "mixed-faults.yaml")
    corrupt = run(plan_for("[{domain: communication, variant: nccl-all-reduce}]", "  testScale: intra-node"),
                  cluster, {"id": "g9", "nodes": ["gpu-node-09"]}, MIXED[0], "h200", nic=MIXED[1])
    assert "DataCorruption" in [r["reason"] for r in corrupt[0]["reasons"]]
    dcgm = run(plan_for("[{domain: diagnostics, variant: dcgm-level4}]"), cluster,
               {"id": "g11", "nodes": ["gpu-node-11"]}, MIXED[0], "h200", nic=MIXED[1])
    (reason,) = dcgm[0]["reasons"]
    assert reason["reason"] == "DiagnosticFailed" and "0" in reason["message"] and "3" in reason["message"]
    assert dcgm[0]["metrics"] == {"dcgmPassed": 0.0}


def test_repeat_count_repeats_the_test_and_deletes_every_job():
    cluster = load_sim_cluster(CLUSTERS / "healthy-h100-16.yaml")
    plan = plan_for("[{domain: communication, variant: nccl-all-reduce, options: {repeatCount: 3}}]")
    results = run(plan, cluster, {"id": "g0", "nodes": ["gpu-node-01", "gpu-node-02"]}, "aws", "h100")
    assert [r["repeat"] for r in results] == [0, 1, 2]
    assert len({r["jobName"] for r in results}) == 3 and all(r["jobDeleted"] for r in results)
    assert cluster.jobs_created == 3 and cluster.jobs_alive() == 0


def test_cleanup_deletes_what_a_crashed_step_left_behind():
    from nvcre_hera.catalog import get_entry
    from nvcre_hera.jobs import JobContext, render_job

    cluster = load_sim_cluster(CLUSTERS / "healthy-h100-16.yaml")
    ctx = JobContext("wf-a", "uid", "nvcre", "aws", "h100")
    entry = get_entry("communication", "nccl-all-reduce")
    for gid in ("g0", "g1"):
        cluster.create_job(render_job(entry, 0, {}, {"id": gid, "nodes": ["gpu-node-01"]}, 0, ctx))
    other = JobContext("wf-b", "uid2", "nvcre", "aws", "h100")
    cluster.create_job(render_job(entry, 0, {}, {"id": "g0", "nodes": ["gpu-node-02"]}, 0, other))
    code, files, lines = step(["cleanup", "--workflow-name", "wf-a", "--namespace", "nvcre", "--status", "Failed"],
                              cluster)
    assert code == 0 and cluster.jobs_alive() == 1  # only this workflow's objects
    assert len(json.loads(files["cleanup"])["deleted"]) == 2
    assert "2 deleted, 0 remaining" in lines[-1]


@pytest.mark.parametrize("argv", [["run", "--plan", "{not json"], ["judge"], ["bogus"]])
def test_bad_step_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as err:
        step_main(argv, cluster=object(), outputs=Outputs("/tmp", in_memory=True), log=lambda line: None)
    assert err.value.code == 2


@pytest.mark.parametrize("ending", [RuntimeError("API server went away"), SystemExit(143)],
                         ids=["the step crashes", "SIGTERM (argo stop/terminate, deadline)"])
def test_a_run_that_ends_mid_job_deletes_its_job(ending):
    """SystemExit(143) is what steps/main.py turns SIGTERM into in a pod; the exit handler does not run on
    `argo terminate`, so the step itself must not leave its MPIJob holding GPUs."""
    cluster = load_sim_cluster(CLUSTERS / "healthy-h100-16.yaml")
    real_wait = cluster.wait_for_job

    def wait_then_end(*a, **kw):
        assert cluster.jobs_alive() == 1  # the job exists while the step waits for it
        real_wait(*a, **kw)
        raise ending

    cluster.wait_for_job = wait_then_end
    plan = plan_for("[{domain: communication, variant: nccl-all-reduce}]")
    with pytest.raises(type(ending)):
        step(["run", "--plan", json.dumps(plan), "--category", "0", "--group",
              json.dumps({"id": "g0", "nodes": ["gpu-node-01", "gpu-node-02"]}), "--platform", "aws", "--gpu", "h100",
              "--workflow-name", "wf", "--workflow-uid", "u1", "--namespace", "nvcre"], cluster)
    assert cluster.jobs_created == 1 and cluster.jobs_alive() == 0
