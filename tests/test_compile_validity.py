"""Every compiled document is valid for Argo: each catalog entry × each testScale it supports × the three forms
(Workflow, WorkflowTemplate, CronWorkflow) passes the strict v4.1.2 CRD check and the Argo lint.

Platform and GPU are detected at run time, so the compiled documents do not depend on them; the job manifests do,
and tests/test_jobs.py checks those for every platform and architecture. Also pinned here: the compiled spec does
not grow with the number of nodes, and no template hands a value to a shell.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from nvcre_hera.catalog import load_catalog
from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import compile_certification
from nvcre_hera.spec_load import parse_certification
from nvcre_hera.validate.crd import crd_errors
from nvcre_hera.validate.lint import lint

FORMS = ("workflow", "template", "cron")
SCALE_CASES = [(key, scale) for key, entry in sorted(load_catalog().items()) for scale in entry.test_scales]


def _cert(categories: list[dict], target: dict | None = None, **spec: Any):
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "cert-x"},
           "spec": {"target": target or {}, "categories": categories, **spec}}
    return parse_certification(yaml.safe_dump(doc), "cert.yaml")


def _category(key: str, **options: Any) -> dict:
    domain, variant = key.split("/")
    return {"domain": domain, "variant": variant, **({"options": options} if options else {})}


def _compile(cert, kind: str = "workflow") -> dict:
    return compile_certification(cert, CompileOptions(kind=kind, step_image="img:1"))


def _templates(doc: dict) -> list[dict]:
    spec = doc["spec"]["workflowSpec"] if doc["kind"] == "CronWorkflow" else doc["spec"]
    return spec["templates"]


def test_catalog_scales_cover_every_entry() -> None:
    """The table below is non-trivial: every entry appears with at least one testScale."""
    assert {k for k, _ in SCALE_CASES} == set(load_catalog()) and len(SCALE_CASES) >= 14


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("key", "scale"), SCALE_CASES, ids=[f"{k}@{s}" for k, s in SCALE_CASES])
def test_entry_scale_form_is_valid(key: str, scale: str, form: str) -> None:
    """Entry × testScale × form: the CRD check and the lint both return no problem."""
    cert = _cert([_category(key, testScale=scale)])
    doc = _compile(cert, form)
    assert doc["kind"] == {"workflow": "Workflow", "template": "WorkflowTemplate", "cron": "CronWorkflow"}[form]
    assert crd_errors(doc) == []
    assert lint(doc) == []


@pytest.mark.parametrize("form", FORMS)
def test_all_entries_together_are_valid(form: str) -> None:
    """All eight entries in one certification, with every optional spec field set, in every form."""
    cert = _cert(
        [_category(k) for k in sorted(load_catalog())],
        target={"nodeSelector": {"nvidia.com/gpu.present": "true"},
                "matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["cpu"]}]},
        gangScheduler={"schedulerName": "kai-scheduler"}, priorityClassName="high", maxConcurrent=3,
        workloadMetadata={"labels": {"team": "infra"}}, orchestration={"placement": "Unpinned"},
    )
    doc = _compile(cert, form)
    assert crd_errors(doc) == []
    assert lint(doc) == []
    assert len([t for t in _templates(doc) if t["name"].startswith("category-")]) == len(load_catalog())


def test_64_categories_are_valid() -> None:
    """The largest spec allowed (64 categories) compiles to a valid document with legal, unique names."""
    keys = sorted(load_catalog())
    cert = _cert([_category(keys[i % len(keys)]) for i in range(64)])
    doc = _compile(cert)
    assert crd_errors(doc) == [] and lint(doc) == []
    names = [t["name"] for t in _templates(doc)]
    assert len(names) == len(set(names))


def _plan_of(doc: dict) -> str:
    return doc["spec"]["arguments"]["parameters"][0]["value"]


def test_compiled_spec_does_not_grow_with_nodes() -> None:
    """Two certs differing only in nodeNames (2 vs 200 names) differ only in the plan parameter's target: every
    template is identical, so no template count or size depends on the number of nodes."""
    cats = [_category("communication/nccl-all-reduce"), _category("diagnostics/dcgm-level4")]
    small = _compile(_cert(cats, target={"nodeNames": [f"gpu-node-{i:03d}" for i in range(2)]}))
    big = _compile(_cert(cats, target={"nodeNames": [f"gpu-node-{i:03d}" for i in range(200)]}))
    assert small["spec"]["templates"] == big["spec"]["templates"]
    small_plan, big_plan = json.loads(_plan_of(small)), json.loads(_plan_of(big))
    assert len(big_plan["target"]["nodeNames"]) == 200
    small_plan["target"] = big_plan["target"] = None
    assert small_plan == big_plan
    for doc in (small, big):
        doc["spec"]["arguments"] = None
    assert small == big


SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env", "zsh", "dash"}


def _assert_no_shell(command: list[str], args: list[str]) -> None:
    argv = [*command, *args]
    assert not (argv and argv[0].rsplit("/", 1)[-1] in {"sh", "bash", "zsh", "dash"}), argv
    assert "-c" not in argv[:2], argv
    assert not SHELLS & set(command), argv


@pytest.mark.parametrize("form", FORMS)
def test_no_template_runs_a_shell(form: str) -> None:
    """Every container is argv with our step binary: no `sh -c`, no script template, no shell anywhere."""
    cert = _cert([_category(k) for k in sorted(load_catalog())])
    for tmpl in _templates(_compile(cert, form)):
        assert "script" not in tmpl, tmpl["name"]
        if "container" in tmpl:
            container = tmpl["container"]
            assert container["command"] == ["nvcre-step"], tmpl["name"]
            _assert_no_shell(container["command"], container.get("args", []))


def test_user_strings_stay_in_the_plan_parameter() -> None:
    """Strings a user controls (node names, label values, thresholds) appear only inside the plan JSON, which
    reaches steps as one argv element — never in a template's command, args or name."""
    hostile = "n1; rm -rf /"
    cert = _cert([_category("communication/nccl-all-reduce", thresholds={"busBandwidthGBps": "value >= 1.0"})],
                 target={"nodeNames": [hostile, "$(reboot)"]}, workloadMetadata={"labels": {"team": "x-y"}})
    doc = _compile(cert)
    assert hostile in json.loads(_plan_of(doc))["target"]["nodeNames"]
    templates_text = json.dumps(doc["spec"]["templates"])
    for needle in (hostile, "$(reboot)", "value >= 1.0", "x-y"):
        assert needle not in templates_text
