"""testScale: diagnose — a recursive DAG that narrows failing nodes down, one planner round per level.

    diagnose-i(setup, state):  plan ─► round-i (the round's tests, fanned out) ─► recurse (diagnose-i)

What the rounds measure does not travel as parameters: the plan and run steps keep it in the category's diagnose
store, a ConfigMap named after the Workflow (`nvcre_hera/steps/diagnose_store.py`). The first plan step creates it
and puts the setup there; each plan step writes the planner's state and the next round's test items there, and
passes on only the state's key and the tests' ids; each test pod reads its item and the node index there and
writes its result there. So the Workflow stores a few bytes per test and per level, where the state, the items and
the results (a round of screens holds a value per node) took most of its room (docs/diagnose-store.md).
The fan-out sits in its own DAG, `round-i`, whose failed tests do not fail it (`continueOn`): a failed test is data,
and the next plan step, finding no result for it in the store, counts it as failed.
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
from nvcre_hera.steps.diagnose_store import store_name

# The deepest level has no recursive child: take the plan's verdict; above it, unwrap the one child's
# (a fan-out's aggregated output is a JSON list of its children's values).
# Failed and errored test pods are data for the judge, never a reason to stop the DAG that collects results.
CONTINUE = m.ContinueOn(failed=True, error=True)

FINAL_EXPRESSION = ("tasks.recurse.status == 'Skipped' ? tasks.plan.outputs.parameters.final : "
                    "toJson(fromJSON(tasks.recurse.outputs.parameters.results)[0])")


def round_template(cat: ResolvedCategory, test: Container) -> DAG:
    """One round's tests; always Succeeds (their results are in the diagnose store)."""
    with DAG(name=f"round-{cat.index}", inputs=[Parameter(name=n) for n in ("tests", "platform", "gpu", "nic")]) as dag:
        Task(name="test", template=test, with_param="{{inputs.parameters.tests}}", continue_on=CONTINUE,
             arguments={"group": "{{item}}", "platform": "{{inputs.parameters.platform}}",
                        "gpu": "{{inputs.parameters.gpu}}", "nic": "{{inputs.parameters.nic}}"})
    return dag


def diagnose_template(cat: ResolvedCategory, plan_step: Container, test: Container) -> DAG:
    i = cat.index
    round_dag = round_template(cat, test)
    common = {n: f"{{{{inputs.parameters.{n}}}}}" for n in ("platform", "gpu", "nic")}
    with DAG(
        name=f"diagnose-{i}",
        inputs=[Parameter(name=n) for n in ("setup", "state", "platform", "gpu", "nic")],
        outputs=[Parameter(name="results", value_from=m.ValueFrom(expression=FINAL_EXPRESSION, default="{}"))],
    ) as dag:
        Task(name="plan", template=plan_step, arguments={
            "setup": "{{inputs.parameters.setup}}", "state": "{{inputs.parameters.state}}"})
        Task(name="round", template=round_dag, depends="plan",
             arguments={"tests": "{{tasks.plan.outputs.parameters.tests}}", **common})
        # the first plan step put the setup into the store: the levels below read it there
        Task(name="recurse", template=dag, depends="round", with_param="{{tasks.plan.outputs.parameters.next}}",
             arguments={"setup": "null", "state": "{{tasks.plan.outputs.parameters.state}}", **common})
    return dag


def compiled_store_name(cat: ResolvedCategory) -> str:
    """The category's diagnose store (steps/diagnose_store.py), named after the running Workflow."""
    return store_name("{{workflow.name}}", cat.index)


def plan_template(cat: ResolvedCategory, image: str, step, output) -> Container:
    return step(
        f"plan-{cat.index}", image,
        ["plan", "--setup", "{{inputs.parameters.setup}}", "--state", "{{inputs.parameters.state}}",
         "--store", compiled_store_name(cat),
         "--workflow-name", "{{workflow.name}}", "--workflow-uid", "{{workflow.uid}}",
         "--namespace", "{{workflow.namespace}}", "--out", "/tmp/nvcre"],
        inputs=[Parameter(name="setup"), Parameter(name="state")],
        outputs=[output("state", "null"), output("tests", "[]"), output("next", "[]"), output("final", "{}")],
        retry_strategy=RetryStrategy(limit=2, retry_policy="OnError"),
    )


__all__ = ["CONTINUE", "FINAL_EXPRESSION", "compiled_store_name", "diagnose_template", "plan_template",
           "round_template"]
