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
