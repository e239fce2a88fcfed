"""The diagnose store (nvcre_hera/steps/diagnose_store.py): the plan and run steps keep the planner's state, the
test items and the results in a ConfigMap, and the Workflow carries only keys and ids.

These run the steps against the simulated cluster's ConfigMaps (`SimCluster.create_configmap` …), a stand-in for
the API server: that the API server merges patches key by key, removes a key set to null, lets concurrent patches
all land and answers the service account's calls is shown on the real one (tests/e2e/test_store_on_apiserver.py,
`make e2e`)."""

from __future__ import annotations

import json

import pytest

from nvcre_hera.local_run import run_local
from nvcre_hera.sim.cluster import SimulatedPodKilled, load_sim_cluster
from nvcre_hera.steps import diagnose_store
from test_steps import CLUSTERS, discover, plan_for, step

DIAGNOSE = ("[{domain: communication, variant: nccl-all-reduce, "
            "options: {thresholds: {busBandwidthGBps: 'value >= 300'}}}]")
STORE = "wf-diagnose-0"
WHO = ["--workflow-name", "wf", "--workflow-uid", "u1", "--namespace", "nvcre"]


def test_names_refs_and_the_manifest():
    assert diagnose_store.store_name("cert-abcde", 2) == "cert-abcde-diagnose-2"
    assert len(diagnose_store.store_name("w" * 300, 0)) == 253
    assert diagnose_store.level_of(diagnose_store.ref(7)) == 7
    for bad in ("nvcre-cm:state.", "nvcre-cm:result.r1-t0", "state.3", "nvcre-gz1:abc"):
        with pytest.raises(ValueError, match="not a diagnose store reference"):
            diagnose_store.level_of(bad)
    meta = diagnose_store.manifest(diagnose_store.Store("s", "ns", "wf", "u1"))["metadata"]
    assert meta["ownerReferences"] == [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": "wf",
                                        "uid": "u1"}]
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "nvcre-hera", "nvcre-hera.dev/workflow": "wf"}


class Diagnose:
    """One diagnose driven step by step, as the compiled Workflow does: plan, the round's tests, plan …"""

    def __init__(self, cluster_file: str = "two-faulty-64.yaml") -> None:
        self.cluster = load_sim_cluster(CLUSTERS / cluster_file)
        self.plan = plan_for(DIAGNOSE, "  testScale: diagnose")
        self.setup = discover(self.plan, self.cluster)["setup-0"]
        self.state = "null"

    def plan_step(self, setup: str | None = None) -> tuple[int, dict, list[str]]:
        code, files, lines = step(["plan", "--setup", setup or ("null" if self.state != "null" else self.setup),
                                   "--state", self.state, "--store", STORE, *WHO], self.cluster)
        if code == 0:
            self.state = files["state"]
        return code, files, lines

    def run(self, item: dict) -> tuple[int, dict, list[str]]:
        return step(["run", "--plan", json.dumps(self.plan), "--category", "0", "--group", json.dumps(item),
                     "--platform", "aws", "--gpu", "h100", *WHO, "--store", STORE], self.cluster)

    def data(self) -> dict[str, str]:
        return self.cluster.read_configmap(STORE)


def test_the_workflow_carries_keys_and_ids_and_the_store_keeps_two_levels_at_most():
    d = Diagnose()
    code, files, _ = d.plan_step()
    assert code == 0 and json.loads(files["state"]) == "nvcre-cm:state.1"
    tests = json.loads(files["tests"])
    assert tests and all(set(t) == {"id"} for t in tests)  # the items are in the store
    data = d.data()
    assert json.loads(data["setup"]) == json.loads(d.setup)
    assert {json.loads(data[f"test.{t['id']}"])["id"] for t in tests} == {t["id"] for t in tests}
    levels = 0
    while tests:
        for t in tests:
            code, files, _ = d.run(t)
            assert code == 0 and json.loads(files["metrics"]) == []  # the result went to the store
            assert f"result.{t['id']}" in d.data()
        code, files, _ = d.plan_step()
        assert code == 0
        levels += 1
        tests = json.loads(files["tests"])
        states = sorted(k for k in d.data() if k.startswith("state."))
        assert len(states) <= 2 and states[-1] == f"state.{levels + 1}"
    assert levels >= 2
    verdict = json.loads(files["final"])
    assert verdict  # the last plan step hands the verdict up (a parameter: the judge reads it there)
    old = [k for k in d.data() if k.startswith(("test.", "result."))]
    assert all(k.split(".", 1)[1].startswith(f"r{levels}-") or k.split(".", 1)[1].startswith(f"r{levels - 1}-")
               for k in old), old  # only what the last two plan steps issued is left


def test_a_retried_plan_step_reads_what_it_read_before_and_writes_the_same():
    d = Diagnose()
    d.plan_step()
    first = d.state
    for t in json.loads(step(["plan", "--setup", d.setup, "--state", "null", "--store", STORE, *WHO],
                             d.cluster)[1]["tests"]):
        d.run(t)
    code, once, _ = d.plan_step()
    stored = d.data()["state.2"]
    d.state = first  # Argo retries the pod with the same inputs
    code_again, again, _ = d.plan_step()
    assert code == code_again == 0
    assert once["tests"] == again["tests"] and once["state"] == again["state"]
    assert d.data()["state.2"] == stored


@pytest.mark.parametrize("break_it, says", [
    (lambda cluster: cluster.delete_configmap(STORE), "ConfigMap wf-diagnose-0 does not exist"),
    (lambda cluster: cluster.patch_configmap(STORE, {"state.1": None}), "has no state.1"),
    (lambda cluster: cluster.patch_configmap(STORE, {"setup": None}), "has no setup"),
])
def test_a_plan_step_without_its_state_gives_no_verdict(break_it, says):
    """Fail closed: a store that lost the state is never a fresh start (which would forget what was measured)."""
    d = Diagnose()
    d.plan_step()
    break_it(d.cluster)
    code, files, lines = d.plan_step()
    assert code == 1 and "final" not in files
    assert any(says in line and line.endswith("no verdict") for line in lines), lines


def test_a_first_plan_step_without_a_setup_gives_no_verdict():
    d = Diagnose()
    code, _files, lines = d.plan_step(setup="null")
    assert code == 1 and lines == ["plan: the first plan step got no setup: no verdict"]


def test_a_test_whose_item_is_missing_creates_no_job_and_counts_as_failed():
    d = Diagnose()
    tests = json.loads(d.plan_step()[1]["tests"])
    d.cluster.patch_configmap(STORE, {f"test.{tests[0]['id']}": None})
    code, _files, lines = d.run(tests[0])
    assert code == 1 and d.cluster.jobs_created == 0
    assert lines == [f"run: test {tests[0]['id']}: the diagnose store ConfigMap {STORE} has no test.{tests[0]['id']}; "
                     "no job created"]
    for t in tests[1:]:
        d.run(t)
    _code, _files, lines = d.plan_step()
    assert "plan: 1 test(s) of the last round sent no result: counted as failed" in lines


def test_a_result_the_store_does_not_take_is_a_failed_step():
    d = Diagnose()
    tests = json.loads(d.plan_step()[1]["tests"])
    real = d.cluster.patch_configmap

    def gone(name: str, data: dict) -> None:
        d.cluster.delete_configmap(name)
        real(name, data)

    d.cluster.patch_configmap = gone
    code, _files, lines = d.run(tests[0])
    assert code == 1 and lines[-1].startswith(f"run: test {tests[0]['id']}: its result was not stored: ")
    assert d.cluster.jobs_created == d.cluster.jobs_deleted > 0  # its jobs were still deleted


def test_a_pod_past_its_deadline_writes_nothing():
    """The local runners run a step to its end; a write after the pod's kill time must not land (a `step-stall`
    moves the clock a day on inside the step)."""
    cluster = load_sim_cluster(CLUSTERS / "healthy-h100-16.yaml")
    store = diagnose_store.Store(STORE, "nvcre", "wf", "u1")
    cluster.set_clock(100.0)
    cluster.set_pod_deadline(150.0)
    assert cluster.create_configmap(diagnose_store.manifest(store))
    cluster.sleep(50.0)
    for write in (lambda: cluster.patch_configmap(STORE, {"a": "1"}), lambda: cluster.delete_configmap(STORE)):
        with pytest.raises(SimulatedPodKilled):
            write()
    cluster.set_pod_deadline(None)
    assert cluster.read_configmap(STORE) == {}


def test_a_local_diagnose_leaves_no_store_and_stores_ids_in_the_workflow():
    local = run_local(str(CLUSTERS.parent / "certifications" / "diagnose.yaml"), str(CLUSTERS / "two-faulty-64.yaml"))
    assert local.report["categories"][0]["diagnose"]["suspects"]
    assert local.cluster.configmaps == {}  # the exit handler deleted it
    (name,) = local.cluster.configmap_peak_bytes
    assert name == f"{local.run.name}-diagnose-0" and local.cluster.configmap_peak_bytes[name] > 0
    groups = [json.loads(n.inputs["group"]) for n in local.run.nodes.values()
              if n.type == "Pod" and "group" in n.inputs]
    assert groups and all(set(g) == {"id"} for g in groups)
    cleanup = next(n for n in local.run.nodes.values() if n.type == "Pod" and n.template == "cleanup")
    assert cleanup.phase == "Succeeded"
