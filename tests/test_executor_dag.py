"""Local executor: DAG semantics pinned to argo-workflows v4.1.2 docs and controller source."""

from __future__ import annotations

import json
from typing import Callable

import pytest
import yaml

from nvcre_hera.errors import UnsupportedConstruct
from nvcre_hera.executor import PodRequest, PodResult, WorkflowRun, run_workflow

ECHO = """
- name: echo
  inputs: {parameters: [{name: msg, default: ""}, {name: code, default: "0"}, {name: secs, default: "10"}]}
  outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out, default: "dflt"}}]}
  container: {image: alpine, command: [sh, -c], args: ["echo {{inputs.parameters.msg}}"]}
"""


def wf(templates: str, entry: str = "main", **spec: object) -> dict:
    doc = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf"},
           "spec": {"entrypoint": entry, "templates": yaml.safe_load(templates) + yaml.safe_load(ECHO)}}
    doc["spec"].update(spec)
    return doc


def runner(log: list[PodRequest] | None = None) -> Callable[[PodRequest], PodResult]:
    """Fake pods: exit code and duration from inputs; writes /tmp/out = msg unless msg is 'nofile'."""
    def run(req: PodRequest) -> PodResult:
        if log is not None:
            log.append(req)
        msg = req.inputs.get("msg", "")
        files = {} if msg == "nofile" else {"/tmp/out": msg}
        return PodResult(exit_code=int(req.inputs.get("code", "0")), stdout=msg + "\n", files=files,
                         duration_s=float(req.inputs.get("secs", "10")), error=req.inputs.get("code") == "err")
    return run


def phases(run: WorkflowRun) -> dict[str, str]:
    return {n.display_name: n.phase for n in run.nodes.values()}


def test_failed_test_then_successful_step_leaves_dag_succeeded():
    """dag.go assessDAGPhase: the target's own phase decides its branch, so test Failed -> plan Succeeded is OK."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: test, template: echo, arguments: {parameters: [{name: code, value: "1"}]}}
    - {name: plan, template: echo, depends: "test.Succeeded || test.Failed"}
"""), runner())
    assert phases(run)["test"] == "Failed" and phases(run)["plan"] == "Succeeded"
    assert run.phase == "Succeeded"


def test_omitted_task_inherits_failed_branch():
    """docs/enhanced-depends-logic.md + assessDAGPhase: a bare dependency on a Failed task is Omitted and its
    branch stays Failed, so the DAG fails; `.Failed` runs the handler."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: echo, arguments: {parameters: [{name: code, value: "2"}]}}
    - {name: b, template: echo, depends: a}
    - {name: on-fail, template: echo, depends: a.Failed}
"""), runner())
    p = phases(run)
    assert (p["a"], p["b"], p["on-fail"]) == ("Failed", "Omitted", "Succeeded")
    assert run.phase == "Failed"
    assert run.by_name("wf.b").message == "omitted: depends condition not met"


def test_dependencies_list_and_logic_operators():
    """docs/enhanced-depends-logic.md: `dependencies` = all Succeeded/Skipped; !, ||, && and parentheses."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: echo}
    - {name: s, template: echo, when: "1 == 2"}
    - {name: b, template: echo, dependencies: [a, s]}
    - {name: c, template: echo, depends: "(a.Succeeded && !s.Succeeded) || b.Failed"}
    - {name: d, template: echo, depends: "a.Failed && s.Skipped"}
"""), runner())
    p = phases(run)
    assert (p["s"], p["b"], p["c"], p["d"]) == ("Skipped", "Succeeded", "Succeeded", "Omitted")
    assert run.by_name("wf.s").message == "when '1 == 2' evaluated false"


def test_when_govaluate_bare_words_and_expr_tag():
    """docs/walk-through/conditionals.md: bare words are strings in govaluate; `{{= }}` yields true/false."""
    run = run_workflow(wf("""
- name: main
  inputs: {parameters: [{name: mode}]}
  dag:
    tasks:
    - {name: a, template: echo, when: "{{inputs.parameters.mode}} == fast"}
    - {name: b, template: echo, when: "{{= inputs.parameters['mode'] != 'fast' }}"}
""", arguments={"parameters": [{"name": "mode", "value": "fast"}]}), runner())
    assert phases(run)["a"] == "Succeeded" and phases(run)["b"] == "Skipped"


def test_fan_out_aggregates_outputs_in_loop_order():
    """operator.go processAggregateNodeOutputs: Succeeded children in loop-index order; JSON objects embedded,
    plain strings stay strings; `{{item.field}}` picks a field."""
    log: list[PodRequest] = []
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: fan, template: echo, withParam: '[{"g":"x","t":30},{"g":"y","t":5},{"g":"z","t":1}]',
       arguments: {parameters: [{name: msg, value: "{{item.g}}"}, {name: secs, value: "{{item.t}}"}]}}
    - {name: obj, template: echo, withItems: [1, 2],
       arguments: {parameters: [{name: msg, value: '{"i":{{item}}}'}]}}
    - {name: sum, template: echo, depends: fan && obj,
       arguments: {parameters: [{name: msg, value: "{{tasks.fan.outputs.parameters.out}}|{{tasks.obj.outputs.parameters.out}}"}]}}
"""), runner(log))
    assert run.phase == "Succeeded"
    assert log[-1].inputs["msg"] == '["x","y","z"]|[{"i":1},{"i":2}]'
    assert run.by_name("wf.fan").type == "TaskGroup"
    assert run.by_name("wf.fan(0:g:x,t:30)").phase == "Succeeded"


def test_empty_with_param_skips_and_ends_recursion():
    """dag.go "Skipped, empty params" + docs/walk-through/recursion.md: the recursion stops on an empty list;
    the Skipped recursive task's output resolves to its valueFrom.default (docs/variables.md, v4.0.7+)."""
    run = run_workflow(wf("""
- name: main
  inputs: {parameters: [{name: n}]}
  outputs: {parameters: [{name: depth, valueFrom: {parameter: "{{tasks.recurse.outputs.parameters.depth}}", default: "leaf"}}]}
  dag:
    tasks:
    - {name: plan, template: echo, arguments: {parameters: [{name: msg, value: "{{= asInt(inputs.parameters.n) > 0 ? '[' + string(asInt(inputs.parameters.n) - 1) + ']' : '[]' }}"}]}}
    - {name: recurse, template: main, depends: plan, withParam: "{{tasks.plan.outputs.result}}",
       arguments: {parameters: [{name: n, value: "{{item}}"}]}}
""", arguments={"parameters": [{"name": "n", "value": "3"}]}), runner())
    assert run.phase == "Succeeded"
    skipped = [n for n in run.nodes.values() if n.message == "Skipped, empty params"]
    assert len(skipped) == 1
    assert run.pods_started == 4
    root = run.by_name("wf")
    # each level aggregates its child's list; JSON lists are embedded (aggregatedJSONValueList)
    assert root.outputs["parameters"]["depth"] == '[[["leaf"]]]'


def test_skipped_producer_without_default_fails_consumer():
    """docs/variables.md "Outputs of Skipped and Omitted Nodes": no default -> the reference cannot resolve."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: nodefault, when: "false"}
    - {name: b, template: echo, depends: a, arguments: {parameters: [{name: msg, value: "{{tasks.a.outputs.parameters.x}}"}]}}
    - {name: c, template: echo, depends: a, arguments: {parameters: [{name: msg, value: "{{= tasks.a.outputs.parameters.x ?? 'fb' }}"}]}}
- name: nodefault
  outputs: {parameters: [{name: x, valueFrom: {path: /tmp/x}}]}
  container: {image: alpine}
"""), runner())
    assert run.by_name("wf.b").phase == "Error"
    assert "failed to resolve {{tasks.a.outputs.parameters.x}}" in run.by_name("wf.b").message
    assert run.by_name("wf.c").inputs["msg"] == "fb"


def test_bad_with_param_and_unknown_tag_messages():
    """dag.go expandTask: "withParam value could not be parsed as a JSON list"; unknown tags fail the node."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: echo, withParam: "not json"}
    - {name: b, template: echo, arguments: {parameters: [{name: msg, value: "{{workflow.nope}}"}]}}
"""), runner())
    assert "withParam value could not be parsed as a JSON list" in run.by_name("wf.a").message
    assert run.by_name("wf.b").message == "failed to resolve {{workflow.nope}}"
    assert run.phase == "Error"


def test_missing_output_file_uses_default_or_errors():
    """docs/walk-through/output-parameters.md: valueFrom.default when the file is missing."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: echo, arguments: {parameters: [{name: msg, value: nofile}]}}
    - {name: b, template: strict, arguments: {parameters: [{name: msg, value: nofile}]}}
- name: strict
  inputs: {parameters: [{name: msg}]}
  outputs: {parameters: [{name: x, valueFrom: {path: /tmp/out}}]}
  container: {image: alpine}
"""), runner())
    assert run.outputs_of("echo") == [{"out": "dflt"}]
    assert run.by_name("wf.b").phase == "Error"


def test_recursion_depth_limit():
    """controller.go maxAllowedStackDepth = 100: deeper template calls Error."""
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: again, template: main}
"""), runner())
    assert run.phase == "Error"
    assert any("Maximum recursion depth exceeded" in n.message for n in run.nodes.values())


def test_unsupported_constructs_raise_with_path():
    """Anything the executor does not implement is an explicit error naming the template and field."""
    with pytest.raises(UnsupportedConstruct, match=r"spec.templates\[s\].script"):
        run_workflow(wf("- {name: main, dag: {tasks: [{name: a, template: s}]}}\n- {name: s, script: {image: x, source: y}}"),
                     runner())
    with pytest.raises(UnsupportedConstruct, match=r"spec.templates\[echo2\].memoize"):
        run_workflow(wf("- {name: main, dag: {tasks: []}}\n- {name: echo2, memoize: {}, container: {image: x}}"),
                     runner())
    with pytest.raises(UnsupportedConstruct, match="sprig"):
        run_workflow(wf("- {name: main, dag: {tasks: [{name: a, template: echo, arguments: {parameters: [{name: msg, value: '{{= sprig.upper(\"x\") }}'}]}}]}}"),
                     runner())
    from nvcre_hera.errors import InputError
    with pytest.raises(InputError, match="kind: Workflow"):
        run_workflow({"kind": "WorkflowTemplate", "spec": {}}, runner())


def test_parameter_bytes_and_progress_events():
    """docs/offloading-large-workflows.md: parameters live in status.nodes; we count inputs + outputs."""
    events: list[str] = []
    run = run_workflow(wf("""
- name: main
  dag:
    tasks:
    - {name: a, template: echo, arguments: {parameters: [{name: msg, value: "hello"}, {name: secs, value: "90"}]}}
"""), runner(), on_event=events.append)
    node = run.by_name("wf.a")
    # inputs msg(5)+code(1)+secs(2), output out(5); no result: nothing refers to tasks.a.outputs.result
    assert run.parameter_bytes == 5 + 1 + 2 + 5
    assert "result" not in node.outputs
    assert events[0] == "[   95.0s] ✓ a echo Succeeded 90s"   # main container time, after the 5s pod start
    assert run.wall_time_s == 95.0 and node.started == 0.0


def test_a_pods_stdout_is_its_result_only_where_its_caller_refers_to_it():
    """Argo v4.0.5 operator.go includeScriptOutput/hasOutputResultRef: the controller sets
    ARGO_INCLUDE_SCRIPT_OUTPUT on a pod only when the DAG or Steps template that runs it names its outputs.result
    (`{{tasks.a.outputs.result}}`, or `tasks['a'].outputs.result` in an expression); otherwise no result is stored.
    What this cannot prove: the real controller's run of these templates (the e2e differential runs ours)."""
    for reference in ("{{tasks.a.outputs.result}}", "{{=tasks['a'].outputs.result}}"):
        run = run_workflow(wf(f"""
- name: main
  dag:
    tasks:
    - {{name: a, template: echo, arguments: {{parameters: [{{name: msg, value: "hello"}}]}}}}
    - {{name: b, template: echo, depends: a, arguments: {{parameters: [{{name: msg, value: "{reference}"}}]}}}}
"""), runner())
        assert run.by_name("wf.a").outputs["result"] == "hello", reference
        assert run.by_name("wf.b").outputs["parameters"]["out"] == "hello", reference
        assert "result" not in run.by_name("wf.b").outputs, reference
    steps = run_workflow(wf("""
- name: main
  steps:
  - - {name: a, template: echo, arguments: {parameters: [{name: msg, value: "x"}]}}
  - - {name: b, template: echo, arguments: {parameters: [{name: msg, value: "{{steps.a.outputs.result}}"}]}}
"""), runner())
    assert steps.by_name("wf[0].a").outputs["result"] == "x"
    assert "result" not in steps.by_name("wf[1].b").outputs
