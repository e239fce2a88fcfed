"""Single-node diagnose screens, the workflow side (docs/diagnose-screens.md): a diagnose test item with a `kind`
runs the catalog's loopback entry or the category's own workload on its one node, through the simulated cluster;
plan_step passes `kind` through; the compiled workflow carries it from the plan's item to the run step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main as cli_main
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.steps import screen_values
from nvcre_hera.steps.diagnose_store import Store, manifest
from test_steps import CLUSTERS, MIXED, discover, plan_for, step

DIAGNOSE = ("[{domain: communication, variant: nccl-all-reduce, "
            "options: {thresholds: {busBandwidthGBps: 'value >= 300'}}}]")
ROOT = Path(__file__).resolve().parent.parent


def _env(obj: object) -> dict[str, str]:
    """Every container env var in a manifest, by name."""
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for item in obj.get("env") or []:
            if isinstance(item, dict) and "value" in item:
                out[item["name"]] = item["value"]
        for value in obj.values():
            out.update(_env(value))
    elif isinstance(obj, list):
        for value in obj:
            out.update(_env(value))
    return out


class Screens:
    """A simulated cluster, its diagnose plan and setup, and every job manifest the run step creates."""

    def __init__(self, cluster_file: str, extra: str = "  testScale: diagnose",
                 where: tuple[str, str, dict | None] = ("aws", "h100", None)) -> None:
        self.platform, self.gpu, self.nic = where
        self.cluster = load_sim_cluster(CLUSTERS / cluster_file)
        self.plan = plan_for(DIAGNOSE, extra)
        self.setup = json.loads(discover(self.plan, self.cluster)["setup-0"])
        self.manifests: list[dict] = []
        real = self.cluster.create_job

        def record(manifest: dict) -> str:
            self.manifests.append(manifest)
            return real(manifest)

        self.cluster.create_job = record
        names = [n["metadata"]["name"] for n in self.cluster.list_nodes()]
        self.index = {name: i for i, name in enumerate(sorted(names))}  # every node is eligible in these clusters

    def run_item(self, item: dict) -> tuple[int, dict | None, list[str]]:
        """The run step on one test item, as the compiled workflow runs it: the item and the setup in the diagnose
        store (put there as a plan step would), the item's id on the command line, the result read back."""
        store = Store("wf-diagnose-0", "nvcre", "wf", "u1")
        self.cluster.create_configmap(manifest(store))
        self.cluster.patch_configmap(store.name, {"setup": json.dumps(self.setup),
                                                  f"test.{item['id']}": json.dumps(item)})
        code, files, lines = step(["run", "--plan", json.dumps(self.plan), "--category", "0", "--group",
                                   json.dumps({"id": item["id"]}), "--platform", self.platform, "--gpu", self.gpu,
                                   *(["--nic", json.dumps(self.nic)] if self.nic else []), "--workflow-name", "wf",
                                   "--workflow-uid", "u1", "--namespace", "nvcre", "--store", store.name],
                                  self.cluster)
        assert json.loads(files["metrics"]) == []  # the result is in the store
        stored = self.cluster.read_configmap(store.name).get(f"result.{item['id']}")
        return code, None if stored is None else json.loads(stored)[0], lines

    def run(self, node: str, kind: str, test_id: str = "s0") -> tuple[dict, list[str]]:
        item = {"id": test_id, "ranges": [[self.index[node], self.index[node] + 1]], "network": False, "kind": kind,
                "each": True}
        code, result, lines = self.run_item(item)
        assert code == 0  # a failed test is data
        return result, lines

    def value(self, node: str, kind: str) -> float:
        result, _ = self.run(node, kind)
        assert result["status"] == "ok" and result["jobs"] == result["deleted"] == 1, result
        assert result["kind"] == kind  # the plan step leaves screens out of what the thresholds judge
        return float(screen_values.unpack(result["values"])[0])


def test_the_setup_names_the_screens_for_an_nccl_category():
    screens = Screens("healthy-h100-16.yaml")
    assert screens.setup["config"]["screens"] == ["loopback", "intra"]
    only = Screens("healthy-h100-16.yaml", "  testScale: diagnose\n  diagnoseScreens: [intra]")
    assert only.setup["config"]["screens"] == ["intra"]
    off = Screens("healthy-h100-16.yaml", "  testScale: diagnose\n  diagnoseScreens: []")
    assert off.setup["config"]["screens"] == []


def test_screens_only_for_an_nccl_parser():
    from nvcre_hera.steps.screen import screens_for

    assert screens_for({"diagnoseScreens": ["loopback", "intra"]}, "nccl") == ["loopback", "intra"]
    assert screens_for({"diagnoseScreens": ["loopback", "intra"]}, "training") == []
    assert screens_for({"diagnoseScreens": ["loopback", "intra"]}, "exit") == []


def test_loopback_runs_the_catalogs_loopback_entry_on_one_node_with_the_category_timeouts():
    screens = Screens("healthy-h100-16.yaml")
    screens.run("gpu-node-03", "loopback")
    (job,) = screens.manifests
    spec = json.loads(job["metadata"]["annotations"]["nvcre-hera.dev/test-spec"])
    assert spec["category"] == "communication/nccl-loopback" and spec["test"] == "loopback"
    assert spec["nodes"] == ["gpu-node-03"]
    env = _env(job)
    assert env["NCCL_SHM_DISABLE"] == "1" and env["NCCL_P2P_DISABLE"] == "1"
    assert "/opt/nccl-tests/build/all_reduce_perf" in json.dumps(job)
    # the diagnose category's timeoutPerJob (15m), not the loopback entry's own 30m
    assert '"activeDeadlineSeconds": 900' in json.dumps(job)
    assert job["metadata"]["labels"]["nvcre-hera.dev/category"] == "c0"
    assert screens.cluster.jobs_alive() == 0


def test_intra_runs_the_category_workload_on_one_node():
    screens = Screens("healthy-h100-16.yaml")
    screens.run("gpu-node-03", "intra")
    (job,) = screens.manifests
    spec = json.loads(job["metadata"]["annotations"]["nvcre-hera.dev/test-spec"])
    assert spec["category"] == "communication/nccl-all-reduce" and spec["test"] == "all_reduce"
    assert spec["nodes"] == ["gpu-node-03"]
    assert "NCCL_P2P_DISABLE" not in _env(job) and "NCCL_SHM_DISABLE" not in _env(job)
    assert screens.cluster.jobs_alive() == 0


def test_slow_nic_shows_in_loopback_not_in_intra():
    """slow-nic.yaml: gpu-node-07's NICs at 60 %."""
    screens = Screens("slow-nic.yaml")
    bad_loop, good_loop = screens.value("gpu-node-07", "loopback"), screens.value("gpu-node-02", "loopback")
    bad_intra, good_intra = screens.value("gpu-node-07", "intra"), screens.value("gpu-node-02", "intra")
    assert bad_loop < 0.75 * good_loop, (bad_loop, good_loop)
    assert abs(bad_intra - good_intra) < 0.06 * good_intra, (bad_intra, good_intra)
    assert good_intra > good_loop  # NVLink beats the node's own NICs: the two screens measure different paths
    assert screens.cluster.jobs_created == 4 and screens.cluster.jobs_alive() == 0


@pytest.mark.parametrize(("cluster", "node", "where"), [
    ("slow-gpu.yaml", "gpu-node-05", ("aws", "h100", None)),  # GPUs at 60 %
    ("mixed-faults.yaml", "gpu-node-06", (MIXED[0], "h200", MIXED[1])),  # NVLink at 60 % (on-prem H200, IB)
], ids=["slow-gpu", "nvlink-degraded"])
def test_slow_gpu_or_nvlink_shows_in_intra_not_in_loopback(cluster, node, where):
    screens = Screens(cluster, where=where)
    bad_intra, good_intra = screens.value(node, "intra"), screens.value("gpu-node-03", "intra")
    bad_loop, good_loop = screens.value(node, "loopback"), screens.value("gpu-node-03", "loopback")
    assert bad_intra < 0.75 * good_intra, (bad_intra, good_intra)
    assert abs(bad_loop - good_loop) < 0.06 * good_loop, (bad_loop, good_loop)


@pytest.mark.parametrize("kind", ["nvswitch", "", None])
def test_an_unknown_kind_fails_naming_group_kind_and_creates_no_job(kind):
    screens = Screens("healthy-h100-16.yaml")
    result, lines = screens.run("gpu-node-03", kind)
    assert result["status"] == "failed" and result["busBandwidthGBps"] is None
    assert result["jobs"] == result["deleted"] == 0
    assert any(r.startswith("group.kind: ") for r in result["reasons"]), result
    assert screens.manifests == [] and screens.cluster.jobs_created == 0
    assert any("group.kind" in line for line in lines)


def test_a_batch_runs_one_single_node_job_per_node_all_at_once():
    """Two nodes, one item: a job on each node, the second created before the first is awaited, so the batch takes
    the simulated time of one job, not two."""
    single = Screens("healthy-h100-16.yaml")
    t0 = single.cluster.now()
    single.value("gpu-node-01", "intra")
    one_job = single.cluster.now() - t0
    screens = Screens("healthy-h100-16.yaml")
    item = {"id": "s0", "ranges": [[0, 2]], "network": False, "kind": "intra", "each": True}
    t0 = screens.cluster.now()
    code, result, _ = screens.run_item(item)
    took = screens.cluster.now() - t0
    repeats = int(screens.plan["categories"][0]["options"].get("repeatCount") or 1)
    values = screen_values.unpack(result["values"])  # packed as it travels the Workflow
    assert code == 0 and result["status"] == "ok" and result["values"].startswith(screen_values.PREFIX)
    assert len(values) == 2 and all(v > 400 for v in values)
    assert result["jobs"] == result["deleted"] == 2 * repeats and screens.cluster.jobs_alive() == 0
    nodes = [json.loads(m["metadata"]["annotations"]["nvcre-hera.dev/test-spec"])["nodes"] for m in screens.manifests]
    assert nodes[:2] == [["gpu-node-01"], ["gpu-node-02"]]
    assert took < 1.5 * one_job


def test_the_thresholds_are_not_held_against_a_screen():
    """A healthy node's loopback (~320 GB/s on AWS H100) is below a 400 GB/s all-reduce floor: only the category's
    own tests count in what the verdict judges."""
    from nvcre_hera.steps.plan_step import measured

    results = [[{"id": "l0", "status": "ok", "busBandwidthGBps": 190.0, "kind": "loopback",
                 "ext": {"busBandwidthGBps": [190.0, 190.0]}}],
               [{"id": "i0", "status": "ok", "busBandwidthGBps": 470.0, "kind": "intra",
                 "ext": {"busBandwidthGBps": [470.0, 470.0]}}],
               [{"id": "r1-t0", "status": "ok", "busBandwidthGBps": 352.0, "ext": {"busBandwidthGBps": [352.0, 355.0]}}]]
    seen = measured(None, results, {"busBandwidthGBps": "value >= 400"})
    assert seen["runs"] == 1
    assert seen["metrics"]["busBandwidthGBps"] == {"min": 352.0, "max": 355.0, "n": 1, "missing": 0}


def test_a_test_without_kind_has_none_in_its_result():
    screens = Screens("healthy-h100-16.yaml")
    item = {"id": "r1-t0", "ranges": [[0, 2]], "network": True}
    code, result, _ = screens.run_item(item)
    assert code == 0 and result["status"] == "ok" and "kind" not in result
    (job,) = screens.manifests
    assert json.loads(job["metadata"]["annotations"]["nvcre-hera.dev/test-spec"])["nodes"] == ["gpu-node-01",
                                                                                              "gpu-node-02"]


def _plan_with(monkeypatch: pytest.MonkeyPatch, tests: list[dict]) -> dict:
    """plan_step with the planner replaced by one that answers `tests` once; returns the items it stored."""
    import nvcre_hera.steps.plan_step as plan_step_module
    from nvcre_hera.steps.io import Outputs

    monkeypatch.setattr(plan_step_module, "plan", lambda state, results, config, now=None: {
        "tests": tests, "state": {"x": 1}, "stats": {"rounds": 1}})
    from nvcre_hera.steps.diagnose_store import Store

    screens = Screens("healthy-h100-16.yaml")
    out = Outputs("/tmp/nvcre", in_memory=True)
    store = Store("wf-diagnose-0", "nvcre", "wf", "u1")
    assert plan_step_module.plan_step(screens.setup, None, screens.cluster, out, lambda line: None, store) == 0
    ids = [t["id"] for t in json.loads(out.files["/tmp/nvcre/tests"])]  # the Workflow carries ids, the store items
    return [json.loads(screens.cluster.read_configmap(store.name)[f"test.{i}"]) for i in ids]


def test_plan_step_passes_kind_through_only_when_given(monkeypatch):
    items = _plan_with(monkeypatch, [
        {"id": "r1-t0", "nodes": [3, 4], "network": False, "kind": "loopback", "each": True},
        {"id": "r1-t1", "nodes": [8], "network": False, "kind": "intra", "each": True},
        {"id": "r1-t2", "nodes": [5, 6, 7], "network": True}])
    assert items == [{"id": "r1-t0", "ranges": [[3, 5]], "network": False, "kind": "loopback", "each": True},
                     {"id": "r1-t1", "ranges": [[8, 9]], "network": False, "kind": "intra", "each": True},
                     {"id": "r1-t2", "ranges": [[5, 8]], "network": True}]


def test_the_compiled_workflow_carries_kind_to_the_run_step(monkeypatch, tmp_path):
    """End to end through the compiled YAML and the local executor: a planner that opens with a loopback and an
    intra screen on every node sees, in its next call, each node's measured value (the slow-nic node's loopback
    low, its intra not), and every job the screens created is deleted."""
    import nvcre_hera.steps.plan_step as plan_step_module
    from nvcre_hera.local_run import run_local

    calls: list[tuple[dict, list[dict]]] = []

    def planner(state, results, config, now=None):
        calls.append((config, list(results)))
        if state is None:
            n = config["nodeCount"]
            tests = [{"id": kind[0], "nodes": list(range(n)), "network": False, "kind": kind, "each": True}
                     for kind in config["screens"]]
            return {"tests": tests, "state": {"round": 1}, "stats": {"rounds": 1}}
        return {"tests": [], "state": {"round": 2}, "suspects": [], "stats": {"rounds": 2, "jobs": len(results)}}

    monkeypatch.setattr(plan_step_module, "plan", planner)
    cert = tmp_path / "cert.yaml"
    cert.write_text(yaml.safe_dump({
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "screens"},
        "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "testScale": "diagnose",
                 "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                 "options": {"thresholds": {"busBandwidthGBps": "value >= 300"}}}]}}))
    local = run_local(str(cert), str(CLUSTERS / "slow-nic.yaml"))
    assert len(calls) == 2 and calls[0][0]["screens"] == ["loopback", "intra"]
    values = {f"{r['id']}{i}": v for r in calls[1][1] for i, v in enumerate(r["values"])}
    assert len(values) == 32 and all(r["status"] == "ok" for r in calls[1][1])
    slow = sorted(local.cluster.list_nodes(), key=lambda n: n["metadata"]["name"])
    slow_i = [n["metadata"]["name"] for n in slow].index("gpu-node-07")
    loops = [values[f"l{i}"] for i in range(16) if i != slow_i]
    intras = [values[f"i{i}"] for i in range(16) if i != slow_i]
    assert values[f"l{slow_i}"] < 0.75 * min(loops)
    assert min(intras) * 0.94 < values[f"i{slow_i}"]
    assert min(intras) > max(loops)  # the intra items ran the NVLink path, the loopback ones the NICs
    assert local.cluster.jobs_created == 32 and local.cluster.jobs_alive() == 0
    assert local.report["cleanup"]["jobsCreated"] == local.report["cleanup"]["jobsDeleted"] == 32


def _write_cert(tmp_path: Path, options: dict) -> Path:
    data = yaml.safe_load((ROOT / "examples" / "certifications" / "diagnose.yaml").read_text())
    data["spec"].update(options)
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_option_default_is_both_screens():
    from nvcre_hera.spec_load import load_certification, resolve_categories

    cert = load_certification(str(ROOT / "examples" / "certifications" / "diagnose.yaml"))
    (cat,) = resolve_categories(cert)
    assert cat.options["diagnoseScreens"] == ["loopback", "intra"]


@pytest.mark.parametrize(("value", "words"), [
    (["loopback", "loopback"], "names a screen twice"),
    (["loopback", "intra", "intra"], "at most 2"),
    (["nvswitch"], "'loopback' or 'intra'"),
    ("loopback", "valid list"),
])
def test_a_bad_option_value_is_one_line_and_exit_2(tmp_path, capsys, value, words):
    path = _write_cert(tmp_path, {"diagnoseScreens": value})
    code = cli_main(["validate", str(path)])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"nvcre: {path}: spec.diagnoseScreens") and words in err, err


def test_cleanup_lists_the_loopback_job_kind_when_the_category_makes_another():
    """The onExit cleanup lists only the kinds in --kinds (the Role grants list on MPIJob and JobSet): a diagnose
    category whose own jobs are JobSets (an exec entry) still has its loopback screens' MPIJobs cleaned up."""
    from nvcre_hera.catalog import get_entry
    from nvcre_hera.compile.workflow import job_kinds
    from nvcre_hera.spec_load import ResolvedCategory

    exec_entry = get_entry("communication", "nccl-all-reduce").model_copy(update={"framework": "exec"})
    options = {"testScale": "diagnose", "diagnoseScreens": ["loopback", "intra"]}
    assert job_kinds([ResolvedCategory(0, exec_entry, options)], None) == ["JobSet", "MPIJob"]
    assert job_kinds([ResolvedCategory(0, exec_entry, {**options, "diagnoseScreens": ["intra"]})], None) == ["JobSet"]
    assert job_kinds([ResolvedCategory(0, exec_entry, {**options, "testScale": "full-scale"})], None) == ["JobSet"]
