"""testScale: diagnose — a recursive DAG that narrows failing nodes down, one planner round per level.

    diagnose-i(setup, index, state, results):  plan ─► round-i (the round's tests, fanned out) ─► recurse (diagnose-i)

The fan-out sits in its own DAG, `round-i`, whose failed tests do not fail it (`continueOn`) and whose `results`
output falls back to `[]`: a fan-out aggregates only its Succeeded children, so when every test of a round failed a
direct reference to `tasks.test.outputs.parameters.metrics` would never resolve and Argo would requeue the
recursive call for ever (workflow/controller/operator.go `processAggregateNodeOutputs`, dag.go). The planner sees
which tests sent nothing and counts them as failed.
`plan` runs the pure planner (`nvcre_hera.diagnose.planner.plan`) on the state and the last round's results and
emits the next round; when it has nothing left to test it emits `[]`, the fan-out and the recursive call are
Skipped ("Skipped, empty params"), and the recursion ends. Each level hands the final verdict up through its
`results` output: the deepest level takes the plan's, the others unwrap their single recursive child's.
The test pods get `index` (the setup without the planner's config, `nodeindex.node_index`): all they need to name
their nodes, at 40 % of the bytes Argo stores once per pod.
The planner keeps network tests within `maxConcurrent` per round itself, so no Argo-level cap is needed (jobs
inside one node or NVLink clique do not count against it). Tests name nodes by index (`nvcre_hera.nodeindex`).
"""

from __future__ import annotations

from hera.workflows import DAG, Container, Parameter, RetryStrategy, Task
from hera.workflows import models as m

from nvcre_hera.spec_load import ResolvedCategory

# The deepest level has no recursive child: take the plan's verdict; above it, unwrap the one child's
# (a fan-out's aggregated output is a JSON list of its children's values).
# Failed and errored test pods are data for the judge, never a reason to stop the DAG that collects results.
CONTINUE = m.ContinueOn(failed=True, error=True)

FINAL_EXPRESSION = ("tasks.recurse.status == 'Skipped' ? tasks.plan.outputs.parameters.final : "
                    "toJson(fromJSON(tasks.recurse.outputs.parameters.results)[0])")


def round_template(cat: ResolvedCategory, test: Container) -> DAG:
    """One round's tests; always Succeeds with a `results` output (the metrics of the tests that sent some)."""
    with DAG(
        name=f"round-{cat.index}",
        inputs=[Parameter(name=n) for n in ("tests", "index", "platform", "gpu", "nic")],
        outputs=[Parameter(name="results", value_from=m.ValueFrom(
            parameter="{{tasks.test.outputs.parameters.metrics}}", default="[]"))],
    ) as dag:
        Task(name="test", template=test, with_param="{{inputs.parameters.tests}}", continue_on=CONTINUE,
             arguments={"group": "{{item}}", "platform": "{{inputs.parameters.platform}}",
                        "gpu": "{{inputs.parameters.gpu}}", "nic": "{{inputs.parameters.nic}}",
                        "setup": "{{inputs.parameters.index}}"})
    return dag


def diagnose_template(cat: ResolvedCategory, plan_step: Container, test: Container) -> DAG:
    i = cat.index
    round_dag = round_template(cat, test)
    inputs = [Parameter(name=n) for n in ("setup", "index", "state", "results", "platform", "gpu", "nic")]
    with DAG(
        name=f"diagnose-{i}",
        inputs=inputs,
        outputs=[Parameter(name="results", value_from=m.ValueFrom(expression=FINAL_EXPRESSION, default="{}"))],
    ) as dag:
        Task(name="plan", template=plan_step, arguments={
            "setup": "{{inputs.parameters.setup}}", "state": "{{inputs.parameters.state}}",
            "results": "{{inputs.parameters.results}}"})
        Task(name="round", template=round_dag, depends="plan", arguments={
            "tests": "{{tasks.plan.outputs.parameters.tests}}", "index": "{{inputs.parameters.index}}",
            "platform": "{{inputs.parameters.platform}}", "gpu": "{{inputs.parameters.gpu}}",
            "nic": "{{inputs.parameters.nic}}"})
        Task(name="recurse", template=dag, depends="round",
             with_param="{{tasks.plan.outputs.parameters.next}}",
             arguments={"setup": "{{inputs.parameters.setup}}", "index": "{{inputs.parameters.index}}",
                        "state": "{{tasks.plan.outputs.parameters.state}}",
                        "results": "{{tasks.round.outputs.parameters.results}}",
                        "platform": "{{inputs.parameters.platform}}", "gpu": "{{inputs.parameters.gpu}}",
            "nic": "{{inputs.parameters.nic}}"})
    return dag


def plan_template(cat: ResolvedCategory, image: str, step, output) -> Container:
    return step(
        f"plan-{cat.index}", image,
        ["plan", "--setup", "{{inputs.parameters.setup}}", "--state", "{{inputs.parameters.state}}",
         "--results", "{{inputs.parameters.results}}", "--out", "/tmp/nvcre"],
        inputs=[Parameter(name="setup"), Parameter(name="state"), Parameter(name="results")],
        outputs=[output("state", "null"), output("tests", "[]"), output("next", "[]"), output("final", "{}")],
        retry_strategy=RetryStrategy(limit=2, retry_policy="OnError"),
    )


__all__ = ["CONTINUE", "FINAL_EXPRESSION", "diagnose_template", "plan_template", "round_template"]
