"""The pod runner's loop (nvcre_hera/podrunner/runner.py) against a stand-in CoreV1Api: a pod that fails to start
holds back none after it, and a retried start binds a pod bound already. The stand-in replaces the API server; what
the real one answers (409 to a second binding) is cited in the runner, and `make e2e` runs the loop against it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from nvcre_hera.podrunner.runner import PodRunner


class Core:
    """CoreV1Api as the runner calls it: pods to list, bindings (409 the second time, as the API server answers)."""

    def __init__(self, names):
        self.items = [{"metadata": {"name": n}, "status": {"phase": "Pending"}} for n in names]
        self.bound: list[str] = []
        self.fail_binding_with: int | None = None

    def list_namespaced_pod(self, namespace, label_selector, field_selector, _preload_content):
        return SimpleNamespace(data=json.dumps({"items": self.items}))

    def create_namespaced_pod_binding(self, name, namespace, body, _preload_content):
        if self.fail_binding_with is not None:
            raise ApiException(status=self.fail_binding_with)
        if name in self.bound:
            raise ApiException(status=409, reason="Conflict")
        self.bound.append(name)


def _runner(core):
    runner = object.__new__(PodRunner)  # no API client: the loop's own logic only
    runner.core, runner.namespace, runner.running, runner.done = core, "argo", {}, set()
    runner.shutdowns_checked, runner.lines = 0.0, []
    runner.say = runner.lines.append
    return runner


def test_a_pod_that_fails_to_start_holds_back_none_after_it():
    core = Core(["wf-a", "wf-b", "wf-c"])
    runner = _runner(core)
    started = []

    def start(pod, now):
        if pod["metadata"]["name"] == "wf-a":
            raise ApiException(status=500, reason="etcdserver: request timed out")
        started.append(pod["metadata"]["name"])
    runner._start = start
    runner.poll()
    assert started == ["wf-b", "wf-c"]
    assert len(runner.lines) == 1 and runner.lines[0].startswith("podrunner: wf-a not started:")
    runner.poll()  # retried each poll, logged each time
    assert len(runner.lines) == 2


def test_a_retried_start_binds_a_pod_bound_already():
    core = Core(["wf-a"])
    runner = _runner(core)
    runner._bind("wf-a")
    runner._bind("wf-a")  # 409: bound by the start that failed after it
    assert core.bound == ["wf-a"]
    core.fail_binding_with = 403
    with pytest.raises(ApiException):
        runner._bind("wf-a")
