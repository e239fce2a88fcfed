"""Issue 13: several GPU architectures in one run. Discovery groups each architecture apart (never one job across
H100 and A100 nodes), each group runs with its architecture's defaults and is judged with its thresholds
(`thresholds.<gpu>`), the report has one section per architecture and the verdict covers them all;
`architecture: majority` keeps the old exclusion of the minority (and calls a tie a tie)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.job_preview import preview_objects
from nvcre_hera.local_run import run_local
from nvcre_hera.platform import GPU_PRODUCT_LABEL, node_labels, node_name, split_by_architecture
from nvcre_hera.report import render
from nvcre_hera.report.nvsentinel import result_configmaps
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.steps.discover import discover
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.metric_outputs import status_outputs
from nvcre_hera.threshold_select import select_thresholds
from test_steps import plan_for

ROOT = Path(__file__).resolve().parent.parent
CERTS = ROOT / "examples" / "certifications"
CLUSTERS = ROOT / "examples" / "clusters"
MIXED = CLUSTERS / "mixed-h100-a100.yaml"
MIXED_10_6 = CLUSTERS / "mixed-a100-10-h100-6.yaml"
FAULTY = CLUSTERS / "mixed-h100-a100-faulty.yaml"
H100 = "NVIDIA-H100-80GB-HBM3"
A100 = "NVIDIA-A100-SXM4-80GB"


def cert_text(categories: str, extra: str = "") -> str:
    return f"""
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata: {{name: mixed}}
spec:
  target: {{nodeSelector: {{nvidia.com/gpu.present: "true"}}}}
{extra}
  categories: {categories}
"""


def discovered(plan: dict, cluster_path: Path) -> tuple[dict, dict]:
    out, lines = Outputs("/tmp/nvcre", in_memory=True), []
    assert discover(plan, load_sim_cluster(cluster_path), out, lines.append) == 0
    files = {k.rsplit("/", 1)[1]: json.loads(v) for k, v in out.files.items() if not k.endswith(("platform", "gpu"))}
    return files["summary"], files


def products(cluster_path: Path) -> dict[str, str]:
    return {node_name(n): node_labels(n)[GPU_PRODUCT_LABEL] for n in load_sim_cluster(cluster_path).list_nodes()}


def blamed(report: dict) -> dict[str, list[str]]:
    return {n["name"]: n["reasons"] for n in report["failedNodes"]}


def sections(report: dict) -> dict[str, dict]:
    return {a["gpu"]: a for a in report["architectures"]}


# -- discovery ----------------------------------------------------------------------------------------------------

def test_split_by_architecture_largest_first_ties_by_earliest_name() -> None:
    def node(name: str, product: str | None) -> dict:
        return {"metadata": {"name": name, "labels": {GPU_PRODUCT_LABEL: product} if product else {}}}

    nodes = [node("n3", A100), node("n1", H100), node("n2", A100), node("n4", H100), node("n0", None)]
    assert [(k, [node_name(n) for n in ns]) for k, ns in split_by_architecture(nodes)] == [
        ("h100", ["n1", "n4"]), ("a100", ["n2", "n3"]), (None, ["n0"])]


@pytest.mark.parametrize("cluster", [MIXED, MIXED_10_6])
@pytest.mark.parametrize("options", ["{testScale: intra-node}", "{testScale: full-scale}",
                                     "{testScale: full-scale, nodesPerJob: 4}", "{testScale: intra-rack}"])
def test_groups_never_mix_architectures(cluster: Path, options: str) -> None:
    """mixed-a100-10-h100-6 has a rack holding both (gpu-node-09..16): intra-rack still splits it by GPU."""
    summary, files = discovered(plan_for(f"[{{domain: communication, variant: nccl-all-reduce, options: {options}}}]"),
                                cluster)
    label = products(cluster)
    groups = files["groups-0"]
    assert groups
    for g in groups:
        assert {label[n] for n in g["nodes"]} == {H100 if g["gpu"] == "h100" else A100}, g
        assert g["id"].startswith(f"{g['gpu']}-g")
    assert {n for g in groups for n in g["nodes"]} == set(label)  # every node tested
    assert len({g["id"] for g in groups}) == len(groups)
    assert {a["gpu"]: a["selectedNodes"] for a in summary["architectures"]} == \
        {"h100": sum(p == H100 for p in label.values()), "a100": sum(p == A100 for p in label.values())}
    assert summary["excludedNodes"] == []


def test_each_architecture_runs_with_its_own_gpus_per_node(tmp_path: Path) -> None:
    """GB200 trays have 4 GPUs, H100 nodes 8 (catalog/_lib/gpu-defaults.yaml): each group's job asks for its own."""
    path = tmp_path / "h100-gb200.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "SimulatedCluster", "metadata": {"name": "h100-gb200"},
        "spec": {"platform": "onprem", "gpu": "h100", "nodes": {"count": 4, "overrides": [
            {"node": "gpu-node-03", "gpu": "gb200"}, {"node": "gpu-node-04", "gpu": "gb200"}]}, "seed": 1}}))
    plan = plan_for("[{domain: communication, variant: nccl-all-reduce}]")
    objects = preview_objects(plan, load_sim_cluster(path), "nvcre")

    def gpu_limits(obj: dict) -> set[str]:
        found: set[str] = set()

        def walk(x: object) -> None:
            if isinstance(x, dict):
                if "nvidia.com/gpu" in (x.get("limits") or {}):
                    found.add(str(x["limits"]["nvidia.com/gpu"]))
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(obj)
        return found

    by_group = {o["metadata"]["labels"]["nvcre-hera.dev/group"]: gpu_limits(o) for o in objects}
    assert by_group == {"h100-g0": {"8"}, "gb200-g0": {"4"}}


def test_majority_keeps_the_old_exclusion_and_names_a_tie() -> None:
    summary, files = discovered(plan_for("[{domain: communication, variant: nccl-all-reduce}]",
                                         "  architecture: majority"), MIXED)
    assert "architectures" not in summary and summary["gpu"] == "h100"
    reasons = {e["name"]: e for e in summary["excludedNodes"]}
    assert set(reasons) == {f"gpu-node-{i:02d}" for i in range(9, 17)}
    assert {e["reason"] for e in reasons.values()} == {"ArchitectureTie"}
    assert "ties with" in reasons["gpu-node-09"]["message"] and "minority" not in reasons["gpu-node-09"]["message"]
    assert all("gpu" not in g for g in files["groups-0"])  # one architecture: groups as before
    summary, _ = discovered(plan_for("[{domain: communication, variant: nccl-all-reduce}]",
                                     "  architecture: majority"), MIXED_10_6)
    assert summary["gpu"] == "a100"
    assert {e["reason"] for e in summary["excludedNodes"]} == {"MinorityArchitecture"}
    assert len(summary["excludedNodes"]) == 6


def test_one_architecture_is_unchanged() -> None:
    summary, files = discovered(plan_for("[{domain: communication, variant: nccl-all-reduce}]"),
                                CLUSTERS / "healthy-h100-16.yaml")
    assert "architectures" not in summary and summary["gpu"] == "h100"
    assert files["groups-0"] == [{"id": "g0", "nodes": [f"gpu-node-{i:02d}" for i in range(1, 17)]}]


# -- thresholds per GPU -------------------------------------------------------------------------------------------

def test_select_thresholds_per_gpu_wins_key_by_key() -> None:
    options = {"thresholds": {"busBandwidthGBps": "value >= 300", "algBandwidthGBps": "value >= 100",
                              "a100": {"busBandwidthGBps": "value >= 150"}}}
    assert select_thresholds(options, "a100") == (
        {"busBandwidthGBps": "value >= 150", "algBandwidthGBps": "value >= 100"},
        {"busBandwidthGBps": {"kind": "explicit", "from": "thresholds.a100.busBandwidthGBps", "gpu": "a100"},
         "algBandwidthGBps": {"kind": "explicit", "from": "thresholds.algBandwidthGBps"}})
    assert select_thresholds(options, "h100")[0] == {"busBandwidthGBps": "value >= 300",
                                                     "algBandwidthGBps": "value >= 100"}
    assert select_thresholds(options, "unknown")[0] == select_thresholds(options, "h100")[0]
    assert select_thresholds({}, "a100") == ({}, {})


def test_per_gpu_thresholds_reach_the_plan_filtered_by_metric() -> None:
    plan = plan_for("[{domain: communication, variant: nccl-all-reduce}, {domain: diagnostics, variant: dcgm-level4}]",
                    '  thresholds: {busBandwidthGBps: "value >= 300", a100: {busBandwidthGBps: "value >= 150"}}')
    assert plan["categories"][0]["options"]["thresholds"] == {"busBandwidthGBps": "value >= 300",
                                                              "a100": {"busBandwidthGBps": "value >= 150"}}
    assert plan["categories"][1]["options"]["thresholds"] == {}


@pytest.mark.parametrize(("extra", "where", "says"), [
    ('  thresholds: {x100: {busBandwidthGBps: "value >= 1.0"}}', "spec.thresholds.x100", "unknown GPU architecture"),
    ('  thresholds: {a100: {fooGBps: "value >= 1.0"}}', "spec.thresholds.a100.fooGBps", "no category produces"),
    ('  thresholds: {a100: {busBandwidthGBps: "value >="}}', "spec.thresholds.a100.busBandwidthGBps", ""),
    ('  thresholds: {a100: {busBandwidthGBps: " "}}', "spec.thresholds", "a100.busBandwidthGBps has an empty"),
    ('  thresholds: {a100: "value >= 1.0"}', "spec.thresholds.a100", "a100 is a GPU architecture: it holds {metric: CEL}"),
    ("  thresholds: {a100: {busBandwidthGBps: 5}}", "spec.thresholds", "a100.busBandwidthGBps must be a CEL string"),
    ("  architecture: minority", "spec.architecture", "'all' or 'majority'"),
])
def test_spec_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str,
                                             where: str, says: str) -> None:
    path = tmp_path / "cert.yaml"
    path.write_text(cert_text("[{domain: communication, variant: nccl-all-reduce}]", extra))
    code = main(["compile", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{path}: {where}" in err and says in err, err


def test_category_per_gpu_thresholds_error_names_the_category(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cert.yaml"
    path.write_text(cert_text('[{domain: communication, variant: nccl-all-reduce, options: {thresholds: '
                              '{h100: {goodputRatio: "value >= 0.9"}}}}]'))
    code = main(["compile", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"{path}: spec.categories[0].options.thresholds.h100.goodputRatio: " in err, err


# -- whole runs on the simulated clusters -------------------------------------------------------------------------

def test_half_and_half_certifies_both_halves_with_their_own_thresholds() -> None:
    """The issue's figure: 8 H100 + 8 A100 nodes, one run, PASSED (not INCOMPLETE), one section each."""
    local = run_local(str(CERTS / "mixed-arch.yaml"), str(MIXED))
    report = local.report
    assert report["result"] == "PASSED", blamed(report)
    assert report["excludedNodes"] == [] and report["testedNodes"] == 16
    assert {g: (a["result"], a["testedNodes"]) for g, a in sections(report).items()} == {
        "h100": ("PASSED", 8), "a100": ("PASSED", 8)}
    judged = {(c["gpu"], c["variant"]): [t["expression"] for t in c["thresholds"]] for c in report["categories"]}
    assert judged == {("h100", "nccl-all-reduce"): ["value >= 400"], ("a100", "nccl-all-reduce"): ["value >= 200"],
                      ("h100", "nccl-loopback"): ["value >= 300"], ("a100", "nccl-loopback"): ["value >= 150"]}
    for c in report["categories"]:  # each entry judged only its own architecture's nodes
        nodes = {n for g in c["groups"] for n in g["nodes"]}
        assert nodes == set(sections(report)[c["gpu"]]["nodes"])
    a100 = next(c for c in report["categories"] if c["gpu"] == "a100" and c["variant"] == "nccl-all-reduce")
    assert a100["metrics"]["busBandwidthGBps"]["max"] < 400  # the sim's A100 is slower: an H100 bar would fail it
    card = render(report, "text")
    assert "Architecture h100 (NVIDIA-H100-80GB-HBM3)" in card and "Architecture a100 (NVIDIA-A100-SXM4-80GB)" in card
    assert local.run.phase == "Succeeded"


def test_a_fault_in_the_a100_half_blames_only_that_node() -> None:
    report = run_local(str(CERTS / "mixed-arch.yaml"), str(FAULTY)).report
    assert report["result"] == "FAILED"
    assert blamed(report) == {"gpu-node-12": ["ThresholdViolation"]}
    assert {g: a["result"] for g, a in sections(report).items()} == {"h100": "PASSED", "a100": "FAILED"}
    failed = [(c["gpu"], c["variant"]) for c in report["categories"] if c["status"] != "Passed"]
    assert failed == [("a100", "nccl-all-reduce")]  # a slow GPU: NVLink all-reduce sees it, loopback does not
    assert status_outputs(report, [0, 1]) == {"status": "failed", "status-0": "failed", "status-1": "succeeded"}
    maps = result_configmaps(report, workflow_name="wf", namespace="nvcre")
    names = sorted(m["metadata"]["name"] for m in maps)
    assert names == ["wf-c0-nccl-all-reduce-a100-failed-nodes", "wf-c0-nccl-all-reduce-h100-succeeded-nodes",
                     "wf-c1-nccl-loopback-a100-succeeded-nodes", "wf-c1-nccl-loopback-h100-succeeded-nodes"]


def test_ten_a100_six_h100_each_half_certified() -> None:
    report = run_local(str(CERTS / "mixed-arch.yaml"), str(MIXED_10_6)).report
    assert report["result"] == "PASSED", blamed(report)
    assert [(a["gpu"], a["testedNodes"], a["result"]) for a in report["architectures"]] == [
        ("a100", 10, "PASSED"), ("h100", 6, "PASSED")]


def test_ten_six_full_scale_one_job_per_architecture(tmp_path: Path) -> None:
    """The issue's second case: with only an H100 figure the A100s fail it, and the report says where theirs
    go; with `thresholds.a100` both pass, each architecture in its own full-scale job."""
    report = run_local(str(CERTS / "full-scale.yaml"), str(MIXED_10_6)).report
    assert report["result"] == "FAILED" and report["excludedNodes"] == []
    assert set(blamed(report)) == {f"gpu-node-{i:02d}" for i in range(1, 11)}  # the A100s, never the H100s
    a100 = next(c for c in report["categories"] if c["gpu"] == "a100")
    assert "thresholds.a100.busBandwidthGBps" in a100["hint"]
    assert "hint" not in next(c for c in report["categories"] if c["gpu"] == "h100")

    doc = yaml.safe_load((CERTS / "full-scale.yaml").read_text())
    doc["spec"]["thresholds"]["a100"] = {"busBandwidthGBps": "value >= 150"}
    path = tmp_path / "full-scale-per-gpu.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = run_local(str(path), str(MIXED_10_6)).report
    assert report["result"] == "PASSED", blamed(report)
    assert [(c["gpu"], [len(g["nodes"]) for g in c["groups"]]) for c in report["categories"]] == [
        ("a100", [10]), ("h100", [6])]


def test_majority_on_half_and_half_is_incomplete_and_says_tie(tmp_path: Path) -> None:
    doc = yaml.safe_load((CERTS / "mixed-arch.yaml").read_text())
    doc["spec"]["architecture"] = "majority"
    path = tmp_path / "majority.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = run_local(str(path), str(MIXED)).report
    assert report["result"] == "INCOMPLETE" and report["failedNodes"] == []
    assert {e["reason"] for e in report["excludedNodes"]} == {"ArchitectureTie"}
    assert "architectures" not in report and report["testedNodes"] == 8


def test_diagnose_runs_on_one_architecture_and_the_other_is_incomplete() -> None:
    report = run_local(str(CERTS / "diagnose.yaml"), str(MIXED)).report
    assert report["result"] == "INCOMPLETE" and report["failedNodes"] == []
    by_gpu = {c["gpu"]: c for c in report["categories"]}
    assert by_gpu["h100"]["status"] == "Passed"
    assert by_gpu["a100"]["status"] == "Incomplete" and "not diagnosed" in by_gpu["a100"]["incomplete"]


def test_live_progress_holds_a_tagged_group_to_its_gpus_thresholds() -> None:
    from nvcre_hera.progress import Node, Progress

    plan = {"categories": [{"index": 0, "domain": "communication", "variant": "nccl-all-reduce", "options": {
        "testScale": "intra-node",
        "thresholds": {"busBandwidthGBps": "value >= 400", "a100": {"busBandwidthGBps": "value >= 200"}}}}]}
    progress = Progress({"spec": {"arguments": {"parameters": [{"name": "plan", "value": json.dumps(plan)}]}}})

    def test(nid: str, group: dict, value: float) -> dict:
        run = {"group": group["id"], "nodes": group["nodes"], "status": "ok", "metrics": {"busBandwidthGBps": value}}
        return progress.update(Node(nid, "test-0", "Pod", "Succeeded", "", {"group": json.dumps(group)},
                                    {"metrics": json.dumps([run])}, 1.0))[0]

    a100 = test("a", {"id": "a100-g0", "nodes": ["n9"], "gpu": "a100"}, 230.0)
    h100 = test("b", {"id": "h100-g0", "nodes": ["n1"], "gpu": "h100"}, 230.0)
    assert (a100["passed"], a100["threshold"]) == (True, "value >= 200")
    assert (h100["passed"], h100["threshold"]) == (False, "value >= 400")
