"""The pod runner's pure part (nvcre_hera.podrunner.pods): what it reads from a pod the Argo controller made and what
it writes back. The shapes are taken from argo-workflows v4.0.5 (cited in the module); these tests pin them on
hand-built pods, and `make e2e` proves them against the real controller."""

from __future__ import annotations

import json

from nvcre_hera.podrunner.pods import (DEADLINE_MESSAGE, MAX_ARG_LEN, finished_status, offload_large_args,
                                       output_parameters, read_pod, running_status, task_result)

TEMPLATE = {"name": "judge", "outputs": {"parameters": [
    {"name": "report", "valueFrom": {"path": "/tmp/nvcre/report", "default": "{}"}},
    {"name": "result", "valueFrom": {"path": "/tmp/nvcre/result"}}]}}


def pod(args: list[str], *, offloaded: bool = False) -> dict:
    main_env = [{"name": "ARGO_CONTAINER_ARGS_FILE", "value": "/argo/config/ARGO_CONTAINER_ARGS_FILE"}] \
        if offloaded else []
    return {
        "metadata": {"name": "wf-judge-1", "namespace": "nvcre", "uid": "u1",
                     "labels": {"workflows.argoproj.io/workflow": "wf"},
                     "annotations": {"workflows.argoproj.io/node-id": "wf-123"},
                     "ownerReferences": [{"kind": "Workflow", "name": "wf", "uid": "wf-uid"}]},
        "spec": {"activeDeadlineSeconds": 300,
                 "initContainers": [{"name": "init", "env": [{"name": "ARGO_TEMPLATE",
                                                              "value": json.dumps(TEMPLATE)}]}],
                 "containers": [{"name": "wait"}, {
                     "name": "main", "env": main_env,
                     "command": ["/var/run/argo/argoexec", "emissary", "--loglevel", "info", "--", "nvcre-step"],
                     "args": args}]},
    }


def test_reads_the_command_after_the_emissary_and_the_template():
    task = read_pod(pod(["judge", "--out", "/tmp/nvcre"]))
    assert task.command == ["nvcre-step", "judge", "--out", "/tmp/nvcre"]
    assert task.node_id == "wf-123" and task.workflow == "wf" and task.workflow_uid == "wf-uid"
    assert task.deadline_s == 300 and task.template["name"] == "judge" and not task.offloaded


def test_appends_args_the_controller_offloaded_to_the_pods_configmap():
    task = read_pod(pod([], offloaded=True), {"ARGO_CONTAINER_ARGS_FILE": json.dumps(["judge", "--x", "1"])})
    assert task.command == ["nvcre-step", "judge", "--x", "1"] and task.offloaded


def test_an_argument_over_128_kib_becomes_an_at_file():
    written = {}
    big = "x" * (MAX_ARG_LEN + 1)
    out = offload_large_args(["judge", big, "y" * MAX_ARG_LEN], written.__setitem__)
    assert out == ["judge", "@/tmp/argo_arg_1.txt", "y" * MAX_ARG_LEN]
    assert written == {"/tmp/argo_arg_1.txt": big}


def test_outputs_use_the_default_and_fail_without_one():
    params, missing = output_parameters(TEMPLATE, {"/tmp/nvcre/result": "PASSED"})
    assert params == [{"name": "report", "value": "{}"}, {"name": "result", "value": "PASSED"}] and missing is None
    _, missing = output_parameters(TEMPLATE, {"/tmp/nvcre/report": "{}"})
    assert missing == "open /tmp/nvcre/result: no such file or directory"


def test_task_result_is_named_after_the_node_and_owned_by_the_workflow():
    body = task_result(read_pod(pod([])), {"exitCode": "0"}, completed=False)
    assert body["metadata"]["name"] == "wf-123"
    assert body["metadata"]["labels"] == {"workflows.argoproj.io/workflow": "wf",
                                          "workflows.argoproj.io/report-outputs-completed": "false"}
    assert body["metadata"]["ownerReferences"][0]["uid"] == "wf-uid"


def test_statuses_a_kubelet_would_write():
    running = running_status(0.0)
    assert running["phase"] == "Running" and [c["name"] for c in running["containerStatuses"]] == ["wait", "main"]
    failed = finished_status(0.0, 5.0, 1)
    main = next(c for c in failed["containerStatuses"] if c["name"] == "main")
    assert failed["phase"] == "Failed" and main["state"]["terminated"]["exitCode"] == 1
    killed = finished_status(0.0, 5.0, 0, deadline=True)
    assert killed["phase"] == "Failed" and killed["reason"] == "DeadlineExceeded"
    assert killed["message"] == DEADLINE_MESSAGE
    assert finished_status(0.0, 5.0, 0)["phase"] == "Succeeded"
