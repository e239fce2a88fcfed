"""Local executor: steps, retries, deadlines, exit handler, caps and scale (argo-workflows v4.1.2 docs)."""

from __future__ import annotations


import pytest

from nvcre_hera.errors import UnsupportedConstruct
from nvcre_hera.executor import PodRequest, PodResult, run_workflow
from test_executor_dag import phases, runner, wf


def test_steps_sequential_groups_and_continue_on():
    """docs/walk-through/steps.md + continue-on-fail.md: groups run in order; a failed step fails the Steps
    template unless continueOn; `{{steps.x.outputs.result}}` flows to later groups."""
    log: list[PodRequest] = []
    run = run_workflow(wf("""
- name: main
  steps:
  - - {name: a, template: echo, arguments: {parameters: [{name: msg, value: one}]}}
    - {name: bad, template: echo, continueOn: {failed: true}, arguments: {parameters: [{name: code, value: "3"}]}}
  - - {name: b, template: echo, arguments: {parameters: [{name: msg, value: "{{steps.a.outputs.result}}-{{steps.bad.status}}"}]}}
  - - {name: c, template: echo, arguments: {parameters: [{name: code, value: "1"}]}}
  - - {name: never, template: echo}
"""), runner(log))
    assert [r.inputs.get("msg") for r in log][:3] == ["one", "", "one-Failed"]
    assert run.phase == "Failed"
    assert "never" not in phases(run)
    assert run.by_name("wf[1].b").phase == "Succeeded"


def test_retries_on_error_versus_on_failure():
    """docs/retries.md: OnError retries Error only, OnFailure (default) retries Failed; attempts are children of a
    Retry node, backoff adds simulated time."""
    attempts: dict[str, int] = {}

    def flaky(req: PodRequest) -> PodResult:
        attempts[req.template] = attempts.get(req.template, 0) + 1
        if req.template == "onerror":
            return PodResult(exit_code=1, error=req.attempt < 2, duration_s=1)
        return PodResult(exit_code=1, duration_s=1)

    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: e, template: onerror}
    - {name: f, template: onfailure}
- name: onerror
  retryStrategy: {limit: 3, retryPolicy: OnError, backoff: {duration: "10s", factor: 2}}
  container: {image: x}
- name: onfailure
  retryStrategy: {limit: "2"}
  container: {image: x}
"""), flaky, pod_start_overhead_s=0)
    # OnError: Error, Error, then Failed (not retried further)
    assert attempts["onerror"] == 3 and run.by_name("wf.e").phase == "Failed"
    assert run.by_name("wf.e").type == "Retry" and len(run.by_name("wf.e").children) == 3
    assert attempts["onfailure"] == 3
    # 1s + 10s + 1s + 20s + 1s
    assert run.by_name("wf.e").finished == 33.0


def test_active_deadline_and_timeout_fail_at_the_deadline():
    """docs/walk-through/timeouts.md: a pod past activeDeadlineSeconds Fails at the deadline."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: slow, template: slow}
    - {name: slow2, template: slow2}
- name: slow
  activeDeadlineSeconds: 60
  container: {image: x}
- name: slow2
  timeout: "1m30s"
  container: {image: x}
"""), lambda req: PodResult(exit_code=0, duration_s=1000))
    slow = run.by_name("wf.slow")
    assert slow.phase == "Failed" and slow.finished == 60.0
    assert slow.message == "Pod was active on the node longer than the specified deadline"
    assert run.by_name("wf.slow2").finished == 90.0


def test_the_runner_is_told_when_the_pod_will_be_killed():
    """A runner that runs a step to its end in process must keep it from acting after its pod was killed (the
    diagnose store's writes: docs/diagnose-store.md): each request says when, the earliest of its deadlines."""
    seen: dict[str, float | None] = {}

    def record(req: PodRequest) -> PodResult:
        seen[req.template] = req.kill_time
        return PodResult(exit_code=0, duration_s=1)

    run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: short}
    - {name: b, template: free, depends: a}
- name: short
  activeDeadlineSeconds: 60
  timeout: "2m"
  container: {image: x}
- name: free
  container: {image: x}
""", activeDeadlineSeconds=1000), record, pod_start_overhead_s=0)
    assert seen["short"] == 60.0
    assert seen["free"] == 1000.0  # only the workflow's deadline: 1000 s from the start, the pod started at 1 s


def test_workflow_deadline_and_exit_handler_sees_status():
    """docs/walk-through/exit-handlers.md: onExit runs after the entrypoint with {{workflow.status}} and
    {{workflow.failures}}, also after spec.activeDeadlineSeconds stopped the workflow."""
    log: list[PodRequest] = []
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: echo, arguments: {parameters: [{name: secs, value: "500"}]}}
- name: cleanup
  container: {image: x, args: ["{{workflow.status}}", "{{workflow.failures}}"]}
""", onExit="cleanup", activeDeadlineSeconds=100), runner(log))
    assert run.by_name("wf.a").finished == 100.0
    assert run.phase == "Failed" and run.exit_handler_phase == "Succeeded"
    assert log[-1].args[0] == "Failed" and '"displayName":"a"' in log[-1].args[1].replace(" ", "")


def test_failing_exit_handler_fails_succeeded_workflow():
    """operator.go: if the main workflow succeeded but the exit node was unsuccessful, the workflow fails."""
    run = run_workflow(wf("""
- name: main
  dag: {tasks: [{name: a, template: echo}]}
- name: bye
  container: {image: x}
""", onExit="bye"), lambda r: PodResult(exit_code=int(r.template == "bye")))
    assert run.phase == "Failed" and run.exit_handler_phase == "Failed"


def _concurrency(spec: dict, templates: str, **kw: object) -> int:
    running: list[tuple[float, float]] = []

    def pod(req: PodRequest) -> PodResult:
        running.append((req.start_time, req.start_time + 10))
        return PodResult(exit_code=0, duration_s=10)

    run_workflow(wf(templates, **spec), pod, pod_start_overhead_s=0, **kw)
    points = sorted({s for s, _ in running})
    return max(sum(1 for s, e in running if s <= t < e) for t in points)


FAN = """
- name: main
  dag:
    tasks:
    - {name: a, template: inner, withItems: [1, 2, 3]}
- name: inner
  parallelism: 2
  dag:
    tasks:
    - {name: p, template: %s, withItems: [1, 2, 3, 4, 5]}
- name: locked
  synchronization: {semaphores: [{configMapKeyRef: {name: locks, key: nccl}}]}
  container: {image: x}
"""


def test_parallelism_caps():
    """docs/parallelism.md: spec.parallelism caps pods workflow-wide; template parallelism caps one invocation."""
    assert _concurrency({}, FAN % "echo") == 6          # 3 invocations x 2
    assert _concurrency({"parallelism": 4}, FAN % "echo") == 4


def test_semaphore_cap_and_unknown_semaphore():
    """docs/synchronization.md: a ConfigMap semaphore caps holders; an unknown one is an explicit error."""
    assert _concurrency({}, FAN % "locked", semaphores={"locks/nccl": 1}) == 1
    with pytest.raises(UnsupportedConstruct, match="locks/nccl"):
        _concurrency({}, FAN % "locked")


def test_ten_thousand_pods_with_deep_recursion():
    """Scale: ~10,000 pods and recursion depth 15 (its time is a `make bench` figure, not a unit-test limit)."""
    run = run_workflow(wf("""
- name: main
  inputs: {parameters: [{name: n}]}
  dag:
    tasks:
    - {name: work, template: echo, withParam: "{{= toJson([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66]) }}",
       arguments: {parameters: [{name: msg, value: "{{item}}"}]}}
    - {name: next, template: main, depends: work, when: "{{inputs.parameters.n}} < 15",
       withParam: "{{= asInt(inputs.parameters.n) < 15 ? '[' + string(asInt(inputs.parameters.n) + 1) + ']' : '[]' }}",
       arguments: {parameters: [{name: n, value: "{{item}}"}]}}
    - {name: side, template: main2, depends: work, withItems: [1, 2, 3, 4, 5, 6, 7, 8, 9]}
- name: main2
  dag: {tasks: [{name: w, template: echo, withItems: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70]}]}
""", arguments={"parameters": [{"name": "n", "value": "1"}]}, parallelism=500), runner())
    assert run.phase == "Succeeded"
    assert run.pods_started == 15 * (66 + 9 * 70)
