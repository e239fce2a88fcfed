"""The workflow's failure paths end with a report, a phase and cleanup, never a workflow that waits for ever.

On Argo a failed DAG gets no outputs (workflow/controller/dag.go, executeDAG returns before setting them), a fan-out
aggregates only its Succeeded children (operator.go processAggregateNodeOutputs), and a task whose argument names a
missing `tasks.*` variable is requeued without limit (dag.go, IsMissingVariableErr). The local executor reproduces
the last as a hung run (phase Running, exit handler never started), so these tests fail on a compiled shape that
would hang on Argo. The `step-crash` / `step-stall` faults kill or stall the test pod itself (sim.spec.STEP_KINDS).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.executor import PodResult, run_workflow
from nvcre_hera.local_run import run_local, step_pod_runner
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.steps.io import Outputs
from nvcre_hera.steps.main import main as step_main

ROOT = Path(__file__).resolve().parent.parent
CERTS = ROOT / "examples" / "certifications"
CLUSTERS = ROOT / "examples" / "clusters"


def blamed(report: dict) -> dict[str, list[str]]:
    return {n["name"]: n["reasons"] for n in report["failedNodes"]}


@pytest.mark.parametrize("cluster", ["step-crash", "step-stall"])
def test_a_failed_test_pod_fails_its_group_and_the_workflow_still_ends(cluster):
    local = run_local(str(CERTS / "intra-node.yaml"), str(CLUSTERS / f"{cluster}.yaml"))
    assert local.run.phase == "Failed"
    assert local.result == "FAILED"
    assert blamed(local.report) == {"gpu-node-02": ["WorkloadFailed"]}
    assert local.run.exit_handler_phase == "Succeeded"
    assert local.report["execution"]["jobObjectsLeftBehind"] == 0
    pods = [n for n in local.run.nodes.values() if n.type == "Pod" and n.template.startswith("test-")]
    failed = [n for n in pods if n.phase in ("Failed", "Error")]
    assert failed, "the fault must fail the test pod itself"
    if cluster == "step-stall":
        assert all("deadline" in n.message for n in failed), [n.message for n in failed]


def _all_nodes_crash(tmp_path: Path) -> Path:
    body = yaml.safe_load((CLUSTERS / "step-crash.yaml").read_text())
    body["spec"]["faults"] = [{"node": f"gpu-node-{i:02d}", "kind": "step-crash"} for i in range(1, 9)]
    path = tmp_path / "all-crash.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def test_a_diagnose_round_whose_every_test_fails_ends_failed_not_hung(tmp_path):
    local = run_local(str(CERTS / "diagnose.yaml"), str(_all_nodes_crash(tmp_path)))
    assert local.run.phase == "Failed", local.run.message
    assert local.result == "FAILED"
    assert local.run.exit_handler_phase == "Succeeded"
    assert local.report["execution"]["jobObjectsLeftBehind"] == 0


def _without_continue_on(workflow: dict) -> dict:
    for tmpl in workflow["spec"]["templates"]:
        for task in (tmpl.get("dag") or {}).get("tasks") or []:
            task.pop("continueOn", None)
    return workflow


def test_the_shape_without_continue_on_hangs_as_it_would_on_argo():
    """The compiled shape before this fix: a crashed test pod fails the category DAG, the judge's argument names
    its missing output, and the workflow waits for ever (the bug seen on Argo). The executor must show that."""
    local = run_local(str(CERTS / "intra-node.yaml"), str(CLUSTERS / "step-crash.yaml"))
    workflow = _without_continue_on(json.loads(json.dumps(local.workflow)))
    workflow["metadata"]["name"] = "hang-check"
    cluster = load_sim_cluster(CLUSTERS / "step-crash.yaml")
    run = run_workflow(workflow, step_pod_runner(cluster, CompileOptions().step_image))
    assert run.phase == "Running"
    assert "waiting for ever" in run.message and "outputs.parameters.results" in run.message
    assert run.exit_handler_phase is None  # Argo never starts onExit for a workflow that never completes


def test_missing_task_output_hangs_but_a_missing_input_is_an_error():
    """Only `tasks.*`/`steps.*` variables are requeued (ReplaceStrict's strict prefixes); others fail the task."""
    doc = yaml.safe_load("""
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: t}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: fail}
      - {name: b, template: echo, depends: "a.Failed", arguments: {parameters: [{name: x, value: "{{tasks.a.outputs.parameters.out}}"}]}}
  - name: fail
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
    container: {image: x, command: [fail]}
  - name: echo
    inputs: {parameters: [{name: x}]}
    container: {image: x, command: [echo]}
""")

    def pods(req):
        return PodResult(exit_code=1 if req.command == ["fail"] else 0, stdout="", files={}, duration_s=1.0)

    run = run_workflow(doc, pods)
    assert run.phase == "Running"
    assert "tasks.a.outputs.parameters.out" in run.message


def test_step_reads_an_argument_argo_moved_to_a_file(tmp_path):
    """Argo v4.0.10+'s emissary passes an argument over 128 KiB as `@/tmp/argo_arg_N.txt`."""
    plan = {"version": 1, "name": "x", "target": {}, "categories": []}
    summary = {"platform": "onprem", "gpu": "h100", "totalNodes": 0, "selectedNodes": 0, "excludedNodes": [],
               "categories": []}
    arg = tmp_path / "argo_arg_1.txt"
    arg.write_text(json.dumps(plan))
    out = Outputs("/tmp/x", in_memory=True)
    code = step_main(["judge", "--plan", f"@{arg}", "--summary", json.dumps(summary), "--out", "/tmp/x"],
                     cluster=None, outputs=out, log=lambda _: None)
    report = json.loads(out.files["/tmp/x/report"])
    assert report["name"] == "x" and report["result"] == "INCOMPLETE" and code == 1


def test_cleanup_lists_only_the_kinds_the_workflow_creates():
    local = run_local(str(CERTS / "intra-node.yaml"), str(CLUSTERS / "healthy-h100-16.yaml"))
    cleanup = next(t for t in local.workflow["spec"]["templates"] if t["name"] == "cleanup")
    args = cleanup["container"]["args"]
    assert args[args.index("--kinds") + 1] == "MPIJob"


def test_workflow_has_a_deadline_and_a_mutex_per_certification():
    local = run_local(str(CERTS / "intra-node.yaml"), str(CLUSTERS / "healthy-h100-16.yaml"))
    spec = local.workflow["spec"]
    tests = [t for t in spec["templates"] if t["name"].startswith("test-")]
    assert spec["activeDeadlineSeconds"] > max(t["activeDeadlineSeconds"] for t in tests)
    assert spec["synchronization"] == {"mutexes": [{"name": "nvcre-intra-node-cert"}]}
