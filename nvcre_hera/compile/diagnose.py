"""testScale: diagnose — a recursive DAG that narrows failing nodes down, one planner round per level.

    diagnose-i(setup, state, results):  plan ─► test (fan-out over the round's tests) ─► recurse (diagnose-i)

`plan` runs the pure planner (`nvcre_hera.diagnose.planner.plan`) on the state and the last round's results and
emits the next round; when it has nothing left to test it emits `[]`, the fan-out and the recursive call are
Skipped ("Skipped, empty params"), and the recursion ends. Each level hands the final verdict up through its
`results` output: the deepest level takes the plan's, the others unwrap their single recursive child's.
The planner keeps network tests within `maxConcurrent` per round itself, so no Argo-level cap is needed (jobs
inside one node or NVLink clique do not count against it). Tests name nodes by index (`nvcre_hera.nodeindex`).
"""

from __future__ import annotations

from hera.workflows import DAG, Container, Parameter, RetryStrategy, Task
from hera.workflows import models as m

from nvcre_hera.spec_load import ResolvedCategory

# The deepest level has no recursive child: take the plan's verdict; above it, unwrap the one child's
# (a fan-out's aggregated output is a JSON list of its children's values).
FINAL_EXPRESSION = ("tasks.recurse.status == 'Skipped' ? tasks.plan.outputs.parameters.final : "
                    "toJson(fromJSON(tasks.recurse.outputs.parameters.results)[0])")


def diagnose_template(cat: ResolvedCategory, plan_step: Container, test: Container) -> DAG:
    i = cat.index
    inputs = [Parameter(name=n) for n in ("setup", "state", "results", "platform", "gpu")]
    with DAG(
        name=f"diagnose-{i}",
        inputs=inputs,
        outputs=[Parameter(name="results", value_from=m.ValueFrom(expression=FINAL_EXPRESSION, default="{}"))],
    ) as dag:
        Task(name="plan", template=plan_step, arguments={
            "setup": "{{inputs.parameters.setup}}", "state": "{{inputs.parameters.state}}",
            "results": "{{inputs.parameters.results}}"})
        Task(name="test", template=test, depends="plan", with_param="{{tasks.plan.outputs.parameters.tests}}",
             arguments={"group": "{{item}}", "platform": "{{inputs.parameters.platform}}",
                        "gpu": "{{inputs.parameters.gpu}}", "setup": "{{inputs.parameters.setup}}"})
        Task(name="recurse", template=dag,
             depends="plan && (test.Succeeded || test.Failed || test.Errored || test.Skipped)",
             with_param="{{tasks.plan.outputs.parameters.next}}",
             arguments={"setup": "{{inputs.parameters.setup}}", "state": "{{tasks.plan.outputs.parameters.state}}",
                        "results": "{{tasks.test.outputs.parameters.metrics}}",
                        "platform": "{{inputs.parameters.platform}}", "gpu": "{{inputs.parameters.gpu}}"})
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


__all__ = ["FINAL_EXPRESSION", "diagnose_template", "plan_template"]
