"""The pod runner's loop: poll the namespace's workflow pods, run each once, end it on its simulated schedule.

Time: the simulated cluster has its own clock. A workflow's simulated time is `(real - t0) * scale`, t0 its first
pod's start, so a pod whose step took D simulated seconds ends D/scale real seconds after it started, and a pod's
`activeDeadlineSeconds` (our test templates' backstop) is read in simulated seconds: the pod is killed at
deadline/scale. Everything the controller does (retries, DAG order, the workflow deadline) stays in real time, as
it is in a cluster. Steps run one at a time in this process; each sees the simulated clock of its pod's start.
"""

from __future__ import annotations

import json
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from nvcre_hera.podrunner.mirror import MirroredCluster
from nvcre_hera.podrunner.pods import (COMPLETED_LABEL, PodTask, finished_status, offload_large_args,
                                       output_parameters, read_pod, running_status, task_result)

SIM_CLUSTER_ANNOTATION = "nvcre-hera.dev/sim-cluster"
RUNNER_NODE = "nvcre-e2e-runner"
MIN_POD_S = 0.3
SIGTERM_EXIT = 143
NODE_NAME_ANNOTATION = "workflows.argoproj.io/node-name"
NOT_DONE = "status.phase!=Succeeded,status.phase!=Failed"
SHUTDOWN_CHECK_S = 0.5


@dataclass
class Running:
    task: PodTask
    started: float
    ends: float
    exit_code: int
    files: dict[str, str]
    log: str
    deadline: bool = False


@dataclass
class WorkflowSim:
    cluster: Any
    t0: float
    path: str
    pods: int = 0


@dataclass
class PodRunner:
    admin: Any  # kubernetes ApiClient, as the kubelet (pod binding and status, offload ConfigMaps, Nodes)
    service_account: Any  # ApiClient with the workflow's service-account token (task results, mirrored calls)
    namespace: str
    default_cluster: str
    scale: float = 100.0
    state_dir: Path | None = None
    say: Callable[[str], None] = print
    running: dict[str, Running] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    sims: dict[str, WorkflowSim] = field(default_factory=dict)
    nodes_made: set[str] = field(default_factory=set)
    api_calls_as_sa: int = 0
    shutdowns_checked: float = 0.0

    def __post_init__(self) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(self.admin)
        self.custom = client.CustomObjectsApi(self.admin)
        self.sa_custom = client.CustomObjectsApi(self.service_account)
        self._ensure_node(RUNNER_NODE, {"kubernetes.io/hostname": RUNNER_NODE, "nvcre-hera.dev/role": "step-runner"})

    # --- the loop ---------------------------------------------------------------------------------------------------
    def poll(self) -> None:
        now = time.time()
        # Only pods that are not done, as raw JSON: the namespace keeps every finished pod (no pod GC here), and
        # listing and deserialising thousands of them each poll made a 256-node run crawl. The API server deletes
        # a terminal pod at once (no grace period), so finished pods need nothing from the runner.
        resp = self.core.list_namespaced_pod(self.namespace, label_selector="workflows.argoproj.io/workflow",
                                             field_selector=NOT_DONE, _preload_content=False)
        live = {}
        for obj in json.loads(resp.data).get("items") or []:
            name = obj["metadata"]["name"]
            live[name] = obj
            if obj["metadata"].get("deletionTimestamp"):
                self._delete_now(name)  # the kubelet's part of a graceful delete: the containers are gone
                self.running.pop(name, None)
                continue
            if name not in self.running and name not in self.done and (obj.get("status") or {}).get("phase") in (
                    None, "Pending"):
                try:
                    self._start(obj, now)
                except Exception:  # noqa: BLE001 - a kubelet starts each pod on its own: one that fails to start
                    # (a transient API error) is retried next poll and must not hold back the pods after it
                    self.say(f"podrunner: {name} not started: " + traceback.format_exc().strip().splitlines()[-1])
        for name in [n for n in self.running if n not in live]:
            self.running.pop(name)  # deleted under us (workflow deleted, pod GC)
        for name, run in list(self.running.items()):
            if run.ends <= now:
                self._finish(name, run, now)
        self._shutdowns(now)

    def serve(self, stop: Callable[[], bool], interval_s: float = 0.1) -> None:
        while not stop():
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - a transient API error must not end the runner; log and go on
                self.say("podrunner: " + traceback.format_exc().strip().splitlines()[-1])
            time.sleep(interval_s)

    # --- one pod ----------------------------------------------------------------------------------------------------
    def _start(self, pod: dict, now: float) -> None:
        name = pod["metadata"]["name"]
        configmap = None
        if any(v.get("name") == "argo-env-config" for v in pod["spec"].get("volumes") or []):
            configmap = self.core.read_namespaced_config_map(name, self.namespace).data
        task = read_pod(pod, configmap)
        self._bind(name)
        self.core.patch_namespaced_pod_status(name, self.namespace, {"status": running_status(now)})
        sim = self._sim(task, pod, now)
        sim_start = (now - sim.t0) * self.scale
        code, files, log, sim_s = self._run_step(task, sim, sim_start)
        deadline = task.deadline_s is not None and sim_s > float(task.deadline_s)
        real_s = max(MIN_POD_S, (float(task.deadline_s) if deadline else sim_s) / self.scale)
        self.running[name] = Running(task, now, now + real_s, code, {} if deadline else files, log, deadline)
        sim.pods += 1

    def _run_step(self, task: PodTask, sim: WorkflowSim, sim_start: float) -> tuple[int, dict, str, float]:
        from nvcre_hera.steps.inprocess import run_step
        from nvcre_hera.steps.io import Outputs

        if not task.command or task.command[0] != "nvcre-step":
            return 127, {}, f"exec: {task.command[:1]}: not found (the runner runs only nvcre-step)", 1.0
        cluster = sim.cluster
        cluster.set_clock(sim_start)
        cluster.set_pod_deadline(None if task.deadline_s is None else sim_start + float(task.deadline_s))
        mirror = MirroredCluster(cluster, self.service_account, task.namespace)
        with tempfile.TemporaryDirectory(prefix="argo-args-") as tmp:
            def write(path: str, text: str) -> None:
                Path(tmp, Path(path).name).write_text(text)
            argv = offload_large_args(task.command[1:], write)
            argv = [f"@{tmp}/{Path(a[1:]).name}" if a.startswith("@/tmp/argo_arg_") else a for a in argv]
            out_dir = argv[argv.index("--out") + 1] if "--out" in argv else "/tmp/nvcre"
            outputs = Outputs(out_dir, in_memory=True)
            code, log = run_step(argv, cluster=mirror, outputs=outputs)
        self.api_calls_as_sa += mirror.calls
        return code, outputs.files, log, max(0.0, cluster.now() - sim_start) + 1.0

    def _finish(self, name: str, run: Running, now: float, *, exit_code: int | None = None) -> None:
        code = run.exit_code if exit_code is None else exit_code
        params, missing = output_parameters(run.task.template, run.files) if code == 0 or run.files else ([], None)
        if missing and code == 0:
            code, run.log = 1, run.log + f"\nwait: failed to save outputs: {missing}"
        outputs: dict[str, Any] = {"exitCode": str(code)}
        if params:
            outputs["parameters"] = params
        self._report(run.task, outputs)
        status = finished_status(run.started, now, code, deadline=run.deadline and exit_code is None)
        self.core.patch_namespaced_pod_status(name, self.namespace, {"status": status})
        self.running.pop(name, None)
        self.done.add(name)
        self._record(run.task)
        tail = run.log.strip().splitlines()[-1:] if code else []
        self.say(f"podrunner: {name} {status['phase']} (exit {code}){' deadline' if run.deadline else ''}"
                 + (f": {tail[0][:200]}" if tail else ""))

    def _report(self, task: PodTask, outputs: dict) -> None:
        """argoexec wait: create the task result (outputs not yet complete), then mark it complete."""
        from kubernetes.client.exceptions import ApiException

        body = task_result(task, outputs, completed=False)
        try:
            self.sa_custom.create_namespaced_custom_object("argoproj.io", "v1alpha1", task.namespace,
                                                           "workflowtaskresults", body)
        except ApiException as err:
            if err.status != 409:
                raise
            self.sa_custom.patch_namespaced_custom_object("argoproj.io", "v1alpha1", task.namespace,
                                                          "workflowtaskresults", task.node_id, {"outputs": outputs})
        self.sa_custom.patch_namespaced_custom_object("argoproj.io", "v1alpha1", task.namespace,
                                                      "workflowtaskresults", task.node_id,
                                                      {"metadata": {"labels": {COMPLETED_LABEL: "true"}}})
        self.api_calls_as_sa += 2

    def _shutdowns(self, now: float) -> None:
        """`argo stop|terminate` set spec.shutdown; the controller then signals running mains through pods/exec,
        which has no kubelet to reach here (exec_control.go): the runner delivers the SIGTERM itself."""
        if not self.running or now - self.shutdowns_checked < SHUTDOWN_CHECK_S:
            return
        self.shutdowns_checked = now
        # only the workflows with running pods (a list of every Workflow, some near 1 MiB, each poll was the
        # runner's other cost)
        stopping = set()
        for workflow in {run.task.workflow for run in self.running.values()}:
            flow = self.custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", self.namespace, "workflows",
                                                            workflow)
            if (flow.get("spec") or {}).get("shutdown"):
                stopping.add(workflow)
        for name, run in list(self.running.items()):
            # exit-handler pods run on under Stop (and Terminate never starts them): operator.go, onExit
            if run.task.workflow in stopping and ".onExit" not in run.task.annotations.get(NODE_NAME_ANNOTATION, ""):
                self._finish(name, run, now, exit_code=SIGTERM_EXIT)

    # --- plumbing ---------------------------------------------------------------------------------------------------
    def _sim(self, task: PodTask, pod: dict, now: float) -> WorkflowSim:
        key = task.workflow_uid or task.workflow
        if key not in self.sims:
            from nvcre_hera.sim.cluster import load_sim_cluster

            path = task.annotations.get(SIM_CLUSTER_ANNOTATION) or self.default_cluster
            cluster = load_sim_cluster(path)
            for node in cluster.list_nodes():
                self._ensure_node(node["metadata"]["name"], node["metadata"].get("labels") or {})
            self.sims[key] = WorkflowSim(cluster, now, path)
        return self.sims[key]

    def _record(self, task: PodTask) -> None:
        """What the simulated cluster saw, for `certify --engine argo` to report (jobs created, left behind)."""
        if self.state_dir is None:
            return
        sim = self.sims.get(task.workflow_uid or task.workflow)
        if sim is None:
            return
        out = Path(self.state_dir) / "sims"
        out.mkdir(parents=True, exist_ok=True)
        body = {"workflow": task.workflow, "uid": task.workflow_uid, "cluster": sim.path, "pods": sim.pods,
                "jobObjectsCreated": sim.cluster.jobs_created, "jobObjectsLeftBehind": sim.cluster.jobs_alive(),
                "simulatedSeconds": round(sim.cluster.now(), 1), "scale": self.scale}
        tmp = out / f".{task.workflow}.json"
        tmp.write_text(json.dumps(body))
        tmp.replace(out / f"{task.workflow}.json")

    def _bind(self, name: str) -> None:
        from kubernetes import client

        body = client.V1Binding(metadata=client.V1ObjectMeta(name=name),
                                target=client.V1ObjectReference(api_version="v1", kind="Node", name=RUNNER_NODE))
        from kubernetes.client.exceptions import ApiException

        # the client cannot deserialize the Status this returns (kubernetes-client/python issue 825)
        try:
            self.core.create_namespaced_pod_binding(name, self.namespace, body, _preload_content=False)
        except ApiException as err:
            # 409: bound already (the API server's BindingREST.assignPod, kubernetes v1.37.2
            # pkg/registry/core/pod/storage/storage.go L290-296): a start that failed after binding is retried
            if err.status != 409:
                raise

    def _delete_now(self, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)
        except ApiException as err:
            if err.status != 404:
                raise

    def _ensure_node(self, name: str, labels: dict[str, str]) -> None:
        from kubernetes.client.exceptions import ApiException

        if name in self.nodes_made:
            return
        try:
            self.core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
        except ApiException as err:
            if err.status != 409:
                raise
        self.nodes_made.add(name)


__all__ = ["PodRunner", "RUNNER_NODE", "SIM_CLUSTER_ANNOTATION"]
