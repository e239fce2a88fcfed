"""report_of reads the judge's `report` output from a Workflow as the API or the Argo Server returns it, including a
workflow whose nodes the controller compressed (over Argo's 1 MiB size limit: status.compressedNodes, base64 of gzip
of the nodes' JSON, argo-workflows workflow/packer/packer.go)."""

import base64
import gzip
import json

from nvcre_hera.workflow_report import report_of, workflow_nodes

JUDGE = {"id": "wf-1", "name": "wf.judge", "templateName": "judge", "phase": "Succeeded",
         "outputs": {"parameters": [{"name": "report", "value": '{"result": "FAILED"}'}]}}


def test_plain_nodes() -> None:
    assert report_of({"status": {"nodes": {"wf-1": JUDGE}}}) == {"result": "FAILED"}


def test_compressed_nodes() -> None:
    packed = base64.b64encode(gzip.compress(json.dumps({"wf-1": JUDGE}).encode())).decode()
    wf = {"status": {"nodes": None, "compressedNodes": packed}}
    assert list(workflow_nodes(wf)) == ["wf-1"]
    assert report_of(wf) == {"result": "FAILED"}


def test_no_judge_no_report() -> None:
    assert report_of({"status": {}}) is None
    assert report_of({"status": {"nodes": {"x": {**JUDGE, "templateName": "discover"}}}}) is None


def test_stored_parameter_bytes_counts_inputs_outputs_and_results_compressed_or_not() -> None:
    """What the controller keeps of every node's parameters, counted by hand: the same figure the local executor
    reports (executor/model.py NodeStatus.stored_bytes), whether or not the nodes were compressed."""
    from nvcre_hera.argo_run import stored_parameter_bytes

    plan = {"id": "wf-2", "name": "wf.plan", "templateName": "plan", "phase": "Succeeded",
            "inputs": {"parameters": [{"name": "state", "value": "abc"}, {"name": "setup", "value": "é"}]},
            "outputs": {"parameters": [{"name": "next", "value": "[0]"}], "result": "ok"}}
    nodes = {"wf-1": JUDGE, "wf-2": plan, "wf-3": {"id": "wf-3", "type": "DAG"}}
    by_hand = len('{"result": "FAILED"}') + 3 + 2 + 3 + 2  # "é" is two bytes, as etcd stores it
    assert stored_parameter_bytes({"status": {"nodes": nodes}}) == by_hand
    packed = base64.b64encode(gzip.compress(json.dumps(nodes).encode())).decode()
    assert stored_parameter_bytes({"status": {"compressedNodes": packed}}) == by_hand
