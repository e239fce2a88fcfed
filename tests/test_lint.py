"""The validators can fail: each negative case breaks one thing in a valid compiled Workflow and must be caught,
by the strict CRD check (schema) or by the lint (Argo's validate.go rules a schema cannot express)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable

import pytest

from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import compile_certification
from nvcre_hera.spec_load import load_certification
from nvcre_hera.validate.crd import crd_errors
from nvcre_hera.validate.lint import lint

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return compile_certification(load_certification(EXAMPLE), CompileOptions(step_image="img:1"))


def _tmpl(doc: dict, name: str) -> dict:
    return next(t for t in doc["spec"]["templates"] if t["name"] == name)


def _task(doc: dict, template: str, task: str) -> dict:
    return next(t for t in _tmpl(doc, template)["dag"]["tasks"] if t["name"] == task)


def test_baseline_is_clean(workflow: dict) -> None:
    """The unmodified example is valid for both checks (the negatives below start from it)."""
    assert crd_errors(workflow) == [] and lint(workflow) == []


def _rename_key(d: dict, old: str, new: str) -> None:
    d[new] = d.pop(old)


CRD_CASES: list[tuple[str, Callable[[dict], object], str]] = [
    ("typo-contianer", lambda d: _rename_key(_tmpl(d, "discover"), "container", "contianer"), "contianer"),
    ("typo-in-spec", lambda d: d["spec"].__setitem__("entryPoint", "certify"), "entryPoint"),
    ("wrong-type", lambda d: _tmpl(d, "test-0").__setitem__("activeDeadlineSeconds", [1]), "activeDeadlineSeconds"),
    ("missing-image-field-type", lambda d: _tmpl(d, "judge")["container"].__setitem__("args", "judge"), "args"),
    ("bad-template-list", lambda d: d["spec"].__setitem__("templates", {"a": 1}), "templates"),
]


@pytest.mark.parametrize(("mutate", "needle"), [c[1:] for c in CRD_CASES], ids=[c[0] for c in CRD_CASES])
def test_crd_check_fails(workflow: dict, mutate: Callable[[dict], object], needle: str) -> None:
    """A misspelled key or a wrong type fails the strict CRD check (the API server would prune or reject it)."""
    doc = copy.deepcopy(workflow)
    mutate(doc)
    errors = crd_errors(doc)
    assert errors and any(needle in e for e in errors), errors


def test_crd_check_rejects_wrong_api_version_and_kind(workflow: dict) -> None:
    """apiVersion must be the CRD's storage version; an unknown kind has no schema."""
    doc = copy.deepcopy(workflow)
    doc["apiVersion"] = "argoproj.io/v1beta1"
    assert any(e.startswith("apiVersion:") for e in crd_errors(doc))
    assert crd_errors({"kind": "Pod"})[0].startswith("kind: 'Pod' has no vendored CRD")


def _set_arg(doc: dict, template: str, task: str, param: str, value: str) -> None:
    for p in _task(doc, template, task)["arguments"]["parameters"]:
        if p["name"] == param:
            p["value"] = value
            return
    raise AssertionError(param)


def _long_name(d: dict) -> None:
    d["metadata"].pop("generateName")
    d["metadata"]["name"] = "w" * 64


LINT_CASES: list[tuple[str, Callable[[dict], object], str]] = [
    ("dangling-task-output",
     lambda d: _set_arg(d, "certify", "judge", "summary", "{{tasks.x.outputs.parameters.y}}"),
     "names a task that is not an upstream dependency"),
    ("undeclared-output-of-real-task",
     lambda d: _set_arg(d, "certify", "judge", "summary", "{{tasks.discover.outputs.parameters.nope}}"),
     "names an output 'discover' does not declare"),
    ("undeclared-input",
     lambda d: _tmpl(d, "test-0")["container"]["args"].append("{{inputs.parameters.z}}"),
     "names an input the template does not declare"),
    ("undeclared-workflow-parameter",
     lambda d: _tmpl(d, "discover")["container"]["args"].append("{{workflow.parameters.nope}}"),
     "workflow parameter that is not declared"),
    ("item-outside-withParam",
     lambda d: _tmpl(d, "judge")["container"]["args"].append("{{item}}"),
     "outside withParam"),
    ("depends-cycle",
     lambda d: _task(d, "certify", "discover").__setitem__("depends", "judge"),
     "depends has a cycle"),
    ("depends-on-missing-task",
     lambda d: _task(d, "certify", "judge").__setitem__("depends", "ghost.Succeeded"),
     "depends on unknown task 'ghost'"),
    ("depends-unknown-result",
     lambda d: _task(d, "certify", "judge").__setitem__("depends", "discover.Finished"),
     "unknown task result 'Finished'"),
    ("illegal-template-name",
     lambda d: _tmpl(d, "cleanup").__setitem__("name", "a_b") or d["spec"].__setitem__("onExit", "a_b"),
     "templates.a_b: template name is not legal"),
    ("illegal-task-name",
     lambda d: _task(d, "certify", "discover").__setitem__("name", "dis_cover"),
     "task name is not legal"),
    ("missing-template",
     lambda d: _task(d, "certify", "discover").__setitem__("template", "nope"),
     "template 'nope' does not exist"),
    ("missing-entrypoint",
     lambda d: d["spec"].__setitem__("entrypoint", "main"),
     "template 'main' does not exist"),
    ("workflow-name-over-63", _long_name, "workflow name"),
    ("generate-name-over-58",
     lambda d: d["metadata"].__setitem__("generateName", "g" * 59),
     "must be 1–58 characters"),
    ("output-path-without-default",
     lambda d: _tmpl(d, "discover")["outputs"]["parameters"][0]["valueFrom"].pop("default"),
     "declares no valueFrom.default"),
    ("illegal-parameter-name",
     lambda d: _tmpl(d, "judge")["inputs"]["parameters"].append({"name": "a b"}),
     "parameter name 'a b' is not legal"),
    ("required-input-not-given",
     lambda d: _tmpl(d, "judge")["inputs"]["parameters"].append({"name": "extra"}),
     "input 'extra' of template 'judge' is not given"),
    ("argument-not-an-input",
     lambda d: _task(d, "certify", "judge")["arguments"]["parameters"].append({"name": "bogus", "value": "1"}),
     "argument 'bogus' is not an input"),
    ("task-starting-with-digit",
     lambda d: _task(d, "certify", "judge").__setitem__("name", "1judge"),
     "may not start with a digit"),
]


@pytest.mark.parametrize(("mutate", "needle"), [c[1:] for c in LINT_CASES], ids=[c[0] for c in LINT_CASES])
def test_lint_fails(workflow: dict, mutate: Callable[[dict], object], needle: str) -> None:
    """Each broken reference, name or dependency is reported by the lint."""
    doc = copy.deepcopy(workflow)
    mutate(doc)
    problems = lint(doc)
    assert any(needle in p for p in problems), problems


def test_lint_reads_cron_workflow_spec(workflow: dict) -> None:
    """A CronWorkflow is linted through spec.workflowSpec (a broken reference there is found)."""
    cron = compile_certification(load_certification(EXAMPLE), CompileOptions(kind="cron", step_image="img:1"))
    assert lint(cron) == []
    next(t for t in cron["spec"]["workflowSpec"]["templates"] if t["name"] == "judge")["container"]["args"].append(
        "{{inputs.parameters.z}}")
    assert any("inputs.parameters.z" in p for p in lint(cron))
