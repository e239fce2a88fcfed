"""KubeCluster against kmock on loopback (tweaks from shared/reference/argo-hera-kubeflow.md §5.2). No real sleeping."""

from __future__ import annotations

import asyncio

import pytest

import kmock  # a dev dependency (pyproject): missing, this file errors rather than skips
from kmock._internal.rendering import Response  # noqa: E402  (not exported; §5.2 tweak 1)
from kubernetes import client  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from nvcre_hera.cluster.kube import KubeCluster, job_phase, node_problem  # noqa: E402
from nvcre_hera.errors import TransientError  # noqa: E402

NS = "certify"
MPI = ("kubeflow.org", "v2beta1", NS, "mpijobs")


class K8sEmu(kmock.KubernetesEmulator):
    """kmock answers CREATE with 200; the kubernetes client only deserializes 201 for custom objects."""

    async def _serve_create(self, request):
        return Response(status=201, payload=await super()._serve_create(request))


class FakeTime:
    def __init__(self, on_sleep=None):
        self.t, self.sleeps, self.on_sleep = 0.0, [], on_sleep

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
        if self.on_sleep:
            self.on_sleep(len(self.sleeps))

    def clock(self) -> float:
        return self.t


def _api(server) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = str(server.url).rstrip("/")
    return client.ApiClient(cfg)


def _cluster(server, fake: FakeTime | None = None) -> KubeCluster:
    fake = fake or FakeTime()
    return KubeCluster(NS, _api(server), sleep=fake.sleep, clock=fake.clock, poll_s=5.0, retries=3)


def _mpijob(name: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}}, "spec": {}}


def _node(name: str, unschedulable: bool = False, ready: str = "True") -> dict:
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}},
            "spec": {"unschedulable": unschedulable}, "status": {"conditions": [{"type": "Ready", "status": ready}]}}


pytestmark = pytest.mark.kmock(cls=K8sEmu)


@pytest.mark.asyncio
async def test_list_nodes_as_dicts(kmock):
    def go():
        core = client.CoreV1Api(_api(kmock))
        for node in (_node("a"), _node("b", unschedulable=True), _node("c", ready="False")):
            core.create_node(node)
        nodes = _cluster(kmock).list_nodes()
        return {n["metadata"]["name"]: node_problem(n) for n in nodes}, nodes[0]
    problems, first = await asyncio.to_thread(go)
    assert problems == {"a": None, "b": "Unschedulable", "c": "NotReady"}
    assert first["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"


@pytest.mark.asyncio
async def test_create_get_list_delete_mpijob(kmock):
    def go():
        cluster = _cluster(kmock)
        assert cluster.create_job(_mpijob("job-a", {"nvcre-hera.dev/workflow": "w1"})) == "job-a"
        assert cluster.create_job(_mpijob("job-b", {"nvcre-hera.dev/workflow": "w2"})) == "job-b"
        kind, obj = cluster.get_job("job-a")
        listed = cluster.list_jobs({"nvcre-hera.dev/workflow": "w1"})  # kmock ignores the selector: filtered here
        gone = cluster.delete_job("job-a"), cluster.delete_job("job-a")
        with pytest.raises(ValueError, match="unsupported job kind"):
            cluster.create_job({"kind": "Pod", "metadata": {"name": "x"}})
        return kind, obj, listed, gone, cluster.get_job("job-a"), cluster.list_jobs({})
    kind, obj, listed, gone, after, remaining = await asyncio.to_thread(go)
    assert kind == "MPIJob" and obj["metadata"]["name"] == "job-a"
    assert listed == ["job-a"]
    assert gone == (True, False) and after is None and remaining == ["job-b"]


@pytest.mark.asyncio
async def test_wait_until_launcher_succeeds_and_read_log(kmock):
    kmock[f"get /api/v1/namespaces/{NS}/pods/job-a-launcher/log"] << kmock.headers(
        {"Content-Type": "text/plain"}) << b"# Avg bus bandwidth    : 123.4\n"

    def go():
        api = _api(kmock)
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        core.create_node(_node("n1"))
        for pod, role in (("job-a-worker-0", "worker"), ("job-a-launcher", "launcher")):
            core.create_namespaced_pod(NS, {"metadata": {"name": pod, "labels": {
                "training.kubeflow.org/job-name": "job-a", "training.kubeflow.org/job-role": role}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}})

        def operator(n_sleeps: int) -> None:  # the mpi-operator marks the launcher done after 3 polls
            if n_sleeps == 3:
                custom.patch_namespaced_custom_object(*MPI, "job-a", {"status": {
                    "replicaStatuses": {"Launcher": {"succeeded": 1}},
                    "conditions": [{"type": "Succeeded", "status": "True"}]}})
        fake = FakeTime(operator)
        cluster = _cluster(kmock, fake)
        cluster.create_job(_mpijob("job-a"))
        stall_calls: list[float] = []
        outcome = cluster.wait_for_job("job-a", ["n1"], 600, lambda text, t: stall_calls.append(t) or False)
        return outcome, fake.sleeps, cluster.job_log("job-a"), stall_calls
    outcome, sleeps, log, stall_calls = await asyncio.to_thread(go)
    assert outcome.phase == "Succeeded" and outcome.exit_code == 0 and outcome.elapsed_s == 15.0
    assert sleeps == [5.0, 5.0, 5.0] and stall_calls == [0.0]
    assert log == "# Avg bus bandwidth    : 123.4\n"


@pytest.mark.asyncio
async def test_wait_sees_a_cordoned_node_and_times_out(kmock):
    def go():
        api = _api(kmock)
        core = client.CoreV1Api(api)
        core.create_node(_node("n1"))
        core.create_node(_node("n2"))

        def cordon(n_sleeps: int) -> None:
            if n_sleeps == 2:
                core.patch_node("n2", {"spec": {"unschedulable": True}})
        cluster = _cluster(kmock, FakeTime(cordon))
        cluster.create_job(_mpijob("job-a"))
        failed = cluster.wait_for_job("job-a", ["n1", "n2"], 600)
        idle = _cluster(kmock)
        timed_out = idle.wait_for_job("job-a", ["n1"], 12)
        return failed, timed_out
    failed, timed_out = await asyncio.to_thread(go)
    assert failed.phase == "Failed" and failed.unhealthy_nodes == {"n2": "Unschedulable"} and failed.elapsed_s == 10
    assert timed_out.phase == "TimedOut" and timed_out.elapsed_s == 12


@pytest.mark.asyncio
async def test_5xx_is_retried_then_succeeds(kmock):
    calls: list[int] = []

    def flaky(request):
        calls.append(1)
        if len(calls) <= 2:
            return Response(status=503, payload={"kind": "Status", "code": 503})
        return Response(status=200, payload={"kind": "NodeList", "apiVersion": "v1", "metadata": {},
                                             "items": [{"metadata": {"name": "n1"}}]})
    kmock["list", kmock.resource("", "v1", "nodes")] << flaky

    def go():
        fake = FakeTime()
        nodes = _cluster(kmock, fake).list_nodes()
        return nodes, fake.sleeps
    nodes, sleeps = await asyncio.to_thread(go)
    assert [n["metadata"]["name"] for n in nodes] == ["n1"]
    assert len(calls) == 3 and sleeps == [1.0, 2.0]


@pytest.mark.asyncio
async def test_persistent_5xx_becomes_transient_error(kmock):
    kmock["list", kmock.resource("", "v1", "nodes")] << (lambda: Response(status=500, payload={"code": 500}))

    def go():
        fake = FakeTime()
        with pytest.raises(TransientError, match="after 4 attempts"):
            _cluster(kmock, fake).list_nodes()
        return fake.sleeps
    assert await asyncio.to_thread(go) == [1.0, 2.0, 4.0]


@pytest.mark.asyncio
async def test_4xx_is_not_retried(kmock):
    calls: list[int] = []

    def forbidden(request):
        calls.append(1)
        return Response(status=403, payload={"kind": "Status", "code": 403, "reason": "Forbidden"})
    kmock["list", kmock.resource("", "v1", "nodes")] << forbidden

    def go():
        fake = FakeTime()
        with pytest.raises(ApiException) as info:
            _cluster(kmock, fake).list_nodes()
        return info.value.status, fake.sleeps
    status, sleeps = await asyncio.to_thread(go)
    assert status == 403 and sleeps == [] and len(calls) == 1


def test_job_phase_per_kind():
    assert job_phase("MPIJob", {"status": {"replicaStatuses": {"Launcher": {"failed": 1}}}}) == "Failed"
    assert job_phase("MPIJob", {"status": {"conditions": [{"type": "Succeeded", "status": "True"}]}}) == "Succeeded"
    assert job_phase("MPIJob", {"status": {"conditions": [{"type": "Running", "status": "True"}]}}) is None
    assert job_phase("JobSet", {"status": {"terminalState": "Completed"}}) == "Succeeded"
    assert job_phase("JobSet", {"status": {"terminalState": "Failed"}}) == "Failed"
    assert job_phase("TrainJob", {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}) == "Succeeded"
    assert job_phase("TrainJob", {}) is None


@pytest.mark.asyncio
async def test_trainjob_and_its_runtime_are_created_listed_and_deleted(kmock):
    """The trainjob backend's two objects go through the same create/list/delete; the launcher pod of an MPI
    TrainJob (JobSet replicated job `launcher`) is the one whose log is read, not node 0's."""
    kmock[f"get /api/v1/namespaces/{NS}/pods/tj-launcher-0-0-x/log"] << kmock.headers(
        {"Content-Type": "text/plain"}) << b"launcher says hi\n"
    labels = {"nvcre-hera.dev/workflow": "w1"}

    def go():
        cluster = _cluster(kmock)
        core = client.CoreV1Api(_api(kmock))
        cluster.create_job({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
                            "metadata": {"name": "tj-runtime", "namespace": NS, "labels": labels}, "spec": {}})
        cluster.create_job({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                            "metadata": {"name": "tj", "namespace": NS, "labels": labels}, "spec": {}})
        for pod, rjob in (("tj-node-0-0-x", "node"), ("tj-launcher-0-0-x", "launcher")):
            core.create_namespaced_pod(NS, {"metadata": {"name": pod, "labels": {
                "jobset.sigs.k8s.io/jobset-name": "tj", "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                "batch.kubernetes.io/job-completion-index": "0"}}, "spec": {"containers": [{"name": "node",
                                                                                             "image": "i"}]}})
        listed = cluster.list_jobs(labels)
        log = cluster.job_log("tj")
        deleted = cluster.delete_job("tj"), cluster.delete_job("tj-runtime")
        return listed, log, deleted, cluster.list_jobs(labels)
    listed, log, deleted, after = await asyncio.to_thread(go)
    assert listed == ["tj", "tj-runtime"] and log == "launcher says hi\n"
    assert deleted == (True, True) and after == []


@pytest.mark.asyncio
async def test_cleanup_lists_only_the_kinds_it_is_given_and_a_403_is_an_error(kmock):
    """Without the optional TrainJob RBAC the API answers 403 for trainjobs. Cleanup lists only the kinds the
    workflow can create (compile passes them), so it never asks; and a 403 it does get is an error, never
    "nothing there": a listing it may not make says nothing about what is left behind (fail closed)."""
    forbidden = Response(status=403, payload={"kind": "Status", "code": 403, "reason": "Forbidden"})
    for plural in ("trainjobs", "trainingruntimes"):
        kmock["list", kmock.resource("trainer.kubeflow.org", "v1alpha1", plural)] << (lambda: forbidden)

    def go():
        cluster = _cluster(kmock)
        cluster.create_job(_mpijob("job-a", {"nvcre-hera.dev/workflow": "w1"}))
        listed = cluster.list_jobs({"nvcre-hera.dev/workflow": "w1"}, ["MPIJob", "JobSet"])
        try:
            cluster.list_jobs({"nvcre-hera.dev/workflow": "w1"})
        except ApiException as err:
            return listed, err.status
        return listed, None
    assert await asyncio.to_thread(go) == (["job-a"], 403)
