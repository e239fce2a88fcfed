"""The CRDs' CEL rules (x-kubernetes-validations) hold for what we generate, and catch what they are meant to."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from nvcre_hera.compile.plan import CompileOptions
from nvcre_hera.compile.workflow import compile_certification
from nvcre_hera.spec_load import load_certification
from nvcre_hera.validate.check import sample_job_manifests
from nvcre_hera.validate.crd_rules import rule_errors

ROOT = Path(__file__).resolve().parent.parent
CERTS = [ROOT / "examples" / "certification.yaml", *sorted((ROOT / "examples" / "certifications").glob("*.yaml"))]


@pytest.mark.parametrize("cert", CERTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("kind", ["workflow", "template", "cron"])
def test_compiled_documents_satisfy_the_crd_rules(cert, kind):
    doc = compile_certification(load_certification(cert), CompileOptions(kind=kind, step_image="img:1"))
    assert rule_errors(doc) == []


def test_job_manifests_satisfy_the_crd_rules():
    cert = load_certification(ROOT / "examples" / "certifications" / "intra-node.yaml")
    for label, manifest in sample_job_manifests(cert):
        assert rule_errors(manifest) == [], label


def test_rules_catch_what_the_schema_cannot():
    doc = compile_certification(load_certification(CERTS[0]), CompileOptions(step_image="img:1"))
    dag = next(t for t in doc["spec"]["templates"] if t["name"] == "certify")["dag"]
    both = copy.deepcopy(doc)
    next(t for t in both["spec"]["templates"] if t["name"] == "certify")["dag"]["tasks"][1]["dependencies"] = ["x"]
    assert any("depends" in e and "dependencies" in e for e in rule_errors(both))
    digit = copy.deepcopy(doc)
    next(t for t in digit["spec"]["templates"] if t["name"] == "certify")["dag"]["tasks"][1]["name"] = "0task"
    assert any("digit" in e for e in rule_errors(digit))
    assert dag["tasks"][1]["name"][0].isalpha()


def test_trainjob_name_rule():
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "NCCL_Bad"}, "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    assert rule_errors(job)
    job["metadata"]["name"] = "nccl-ok"
    assert rule_errors(job) == []
