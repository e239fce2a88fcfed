"""Expression tags and `when` (argo-workflows v4.1.2 docs/variables.md "Expression", conditionals.md)."""

from __future__ import annotations

import pytest

from nvcre_hera.errors import UnsupportedConstruct
from nvcre_hera.executor.expr import ExprError, eval_when, evaluate, render
from nvcre_hera.executor.template import ResolveError, Scope, substitute

ENV = Scope({"inputs.parameters.n": "5", "inputs.parameters.min-size": "2",
             "tasks.t.outputs.parameters.p": '["a","b"]', "tasks.t.status": "Failed"})


@pytest.mark.parametrize(("tag", "want"), [
    ("{{= asInt(inputs.parameters.n) + 1 }}", "6"),
    ("{{= inputs.parameters['min-size'] == '2' }}", "true"),
    ("{{= len(fromJSON(tasks['t'].outputs.parameters['p'])) }}", "2"),
    ("{{= tasks.t.status == 'Failed' and not false ? 'x' : 'y' }}", "x"),
    ("{{= tasks.u?.outputs ?? 'fb' }}", "fb"),
    ("{{= toJson([1, 'a', true]) }}", '[1,"a",true]'),
    ("{{= asFloat('1.5') * 2 }}", "3"),
    ("n={{inputs.parameters.n}}", "n=5"),
])
def test_expression_tags_render_like_argo(tag: str, want: str):
    """Non-string results are JSON-marshalled into the string (util/template/expression_template.go)."""
    assert substitute(tag, ENV) == want


def test_errors():
    """A nil result, unknown tags and sprig are errors; hyphenated bare words break govaluate."""
    with pytest.raises(ResolveError, match="failed to evaluate"):
        substitute("{{= tasks.u.outputs }}", ENV)
    with pytest.raises(ResolveError, match=r"failed to resolve \{\{nope\}\}"):
        substitute("{{nope}}", ENV)
    with pytest.raises(UnsupportedConstruct):
        evaluate("sprig.trim('x')", {})
    with pytest.raises(ExprError, match="Invalid 'when'"):
        eval_when("my-node == my-node")
    assert eval_when("Succeeded == Succeeded") and not eval_when("'a' != 'a' || 2 < 1")
    assert render(2.0) == "2" and render({"a": [1]}) == '{"a":[1]}'
