"""Issue 9: for random certifications and random simulated faults (every fault kind, random seeds), a fault that
showed in any job the certification ran is never in a PASSED result, and no node is blamed without evidence
against it (a fault of its own, or a job it ran in where something showed).

"Showed" is the simulator's own record of each job (`SimCluster.job_records`: the failure it injected, the value it
decided the job measured, the node health at the job's end), never what our parsers or judge made of the logs: the
property is that nothing between the job and the verdict (log, parse, reasons, planner, judge) turns evidence into
"nothing wrong". A fault that never showed (a slow GPU on a test that does not use it, a flap that did not happen,
a node going bad after its tests) may pass: the certification had no evidence against it.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre_hera.local_run import run_local
from nvcre_hera.sim.spec import FACTOR_KINDS, FAULT_KINDS, HEALTH_KINDS, STEP_KINDS

NODES = [f"gpu-node-{i:02d}" for i in range(1, 5)]
NCCL_TESTS = {"all_reduce", "all_gather", "alltoall", "loopback", "loopback_nvswitch"}
MARGIN = 0.97  # a job counts as below its threshold only when clearly so (the log's peak row may differ by noise)


@st.composite
def faults(draw) -> list[dict]:
    out = []
    for kind in draw(st.lists(st.sampled_from(FAULT_KINDS), min_size=1, max_size=2)):
        fault: dict = {"kind": kind}
        if kind == "link":
            fault["nodes"] = draw(st.lists(st.sampled_from(NODES), min_size=2, max_size=2, unique=True))
        else:
            fault["node"] = draw(st.sampled_from(NODES))
        if kind in FACTOR_KINDS:
            fault["factor"] = draw(st.sampled_from([0.2, 0.5, 0.9]))
        if kind in HEALTH_KINDS:
            fault["atSecond"] = draw(st.sampled_from([0.0, 120.0, 900.0]))
        elif draw(st.booleans()):
            fault["probability"] = draw(st.sampled_from([0.3, 0.7]))
        out.append(fault)
    return out


@st.composite
def certifications(draw) -> dict:
    categories = []
    for variant in draw(st.lists(st.sampled_from(["nccl-all-reduce", "nccl-loopback", "dcgm-level4",
                                                  "nemotron5-8b"]), min_size=1, max_size=3, unique=True)):
        domain = {"dcgm-level4": "diagnostics", "nemotron5-8b": "training"}.get(variant, "communication")
        options: dict = {}
        if variant == "nccl-all-reduce":
            options["testScale"] = draw(st.sampled_from(["intra-node", "intra-rack", "full-scale", "diagnose"]))
            if options["testScale"] == "full-scale":
                options["nodesPerJob"] = draw(st.sampled_from([2, 4]))
        if domain == "communication" and draw(st.booleans()):
            floor = draw(st.sampled_from([50, 200, 300]))
            spelling = draw(st.sampled_from(SPELLINGS))
            options["thresholds"] = {"busBandwidthGBps": spelling.format(floor=floor, sci=f"{floor / 100:g}e2")}
            options["x-floor"] = float(floor)  # the test's own record, removed before the file is written
        categories.append({"domain": domain, "variant": variant, "options": options})
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "prop"},
            "spec": {"target": {}, "repeatCount": draw(st.sampled_from([1, 2])), "categories": categories}}


# Spellings of one floor a user may write (all must be judged alike, issue 9 item 1).
SPELLINGS = ["value >= {floor}.0", "{floor}.0 <= value", "value >= {sci}", "value >= {floor}.0 && value < 5000.0"]


def _floors(cert: dict) -> dict[str, float]:
    """category -> bandwidth floor, taken out of the spec (the loader would reject the unknown field)."""
    out = {}
    for cat in cert["spec"]["categories"]:
        floor = cat["options"].pop("x-floor", None)
        if floor is not None:
            out[f"{cat['domain']}/{cat['variant']}"] = floor
    return out


def showed(job: dict, floors: dict[str, float], cluster) -> str | None:
    """What the simulator says went wrong in this job, or None."""
    bad = [n for n in job["nodes"] if cluster.node_health(n, job["end"])]
    if bad:
        return f"node {bad[0]} turned bad by the end of the job"
    if job["failure"] not in (None, "unschedulable-pods"):
        return f"injected failure {job['failure']}"
    values = job["values"]
    if job["test"] == "dcgm_diag" and values.get("dcgmPassed") is False:
        return "dcgm diag failed"
    if job["test"] in NCCL_TESTS:
        if values.get("transport") == "NET/Socket":
            return "NCCL fell back to sockets on an EFA platform"
        floor = floors.get(str(job["category"]))
        if floor is not None and values.get("busBandwidthGBps", floor) < MARGIN * floor:
            return f"measured {values['busBandwidthGBps']} below {floor}"
    return None


@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cert=certifications(), fault_list=faults(), seed=st.integers(0, 10_000))
def test_a_fault_that_showed_is_never_in_a_passed_result(tmp_path_factory, cert, fault_list, seed) -> None:
    tmp = Path(tmp_path_factory.mktemp("prop"))
    floors = _floors(cert)
    (tmp / "cert.yaml").write_text(yaml.safe_dump(cert))
    (tmp / "cluster.yaml").write_text(yaml.safe_dump({
        "apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": "prop"},
        "spec": {"platform": "aws", "gpu": "h100", "nodes": {"count": len(NODES), "perRack": 2}, "seed": seed,
                 "noise": {"sigma": 0.01}, "faults": fault_list}}))
    local = run_local(str(tmp / "cert.yaml"), str(tmp / "cluster.yaml"))
    evidence = [(job["name"], why) for job in local.cluster.job_records()
                if (why := showed(job, floors, local.cluster))]
    if evidence:
        assert local.result != "PASSED", (evidence, fault_list, cert)
    # No node without evidence against it is blamed: a blamed node has a fault of its own, or it ran in a job
    # where something showed (NVCRE's group blame when the log names no culprit).
    faulty = {n for f in fault_list for n in ([f["node"]] if "node" in f else f["nodes"])}
    shared = {n for job in local.cluster.job_records() if showed(job, floors, local.cluster) for n in job["nodes"]}
    # a step that crashed or stalled on a faulty node leaves its whole group without a result (no job record)
    step_faulty = {f["node"] for f in fault_list if f["kind"] in STEP_KINDS}
    for cat in (local.report or {}).get("categories") or []:
        for group in [*(cat.get("groups") or []), *(cat.get("failedGroups") or [])]:
            if step_faulty & set(group.get("nodes") or []):
                shared |= set(group["nodes"])
    blamed = {n["name"] for n in (local.report or {}).get("failedNodes") or []}
    assert blamed <= faulty | shared, (blamed - faulty - shared, fault_list, cert)


def test_a_healthy_node_padded_with_a_flapper_is_not_blamed(tmp_path: Path) -> None:
    """The property above, on the example Hypothesis found on 2026-12-07, and which fails on 63e9231 too. There are 4
    nodes: gpu-node-02 has a NIC at 0.2, gpu-node-01 flaps at 0.2, there is no bandwidth floor, and the seed is 0.
    gpu-node-01 passed two jobs with its flap off and became a known-healthy partner. The pair of it and
    gpu-node-04 then failed with the flap on, and gpu-node-04 was accused on that one run. gpu-node-01 was accused
    two rounds later, but the accusation that rested on it as a partner was not looked at again: now it goes back to
    a confirmation beside another partner (`items.reopen_padded`), which passes."""
    cert = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "prop"},
            "spec": {"target": {}, "repeatCount": 1, "categories": [
                {"domain": "communication", "variant": "nccl-loopback", "options": {}},
                {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "diagnose"}}]}}
    faults_ = [{"kind": "slow-nic", "node": "gpu-node-02", "factor": 0.2},
               {"kind": "flapping", "node": "gpu-node-01", "factor": 0.2}]
    (tmp_path / "cert.yaml").write_text(yaml.safe_dump(cert))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({
        "apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": "prop"},
        "spec": {"platform": "aws", "gpu": "h100", "nodes": {"count": len(NODES), "perRack": 2}, "seed": 0,
                 "noise": {"sigma": 0.01}, "faults": faults_}}))
    local = run_local(str(tmp_path / "cert.yaml"), str(tmp_path / "cluster.yaml"))
    blamed = {n["name"] for n in (local.report or {}).get("failedNodes") or []}
    assert "gpu-node-04" not in blamed
