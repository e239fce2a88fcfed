"""The SimulatedCluster file: strict, one-line errors that name the field path."""

from __future__ import annotations

import copy

import pytest

from nvcre_hera.errors import InputError
from nvcre_hera.sim.spec import load_spec, parse_spec

BASE = {
    "apiVersion": "nvcre-hera.dev/v1alpha1",
    "kind": "SimulatedCluster",
    "metadata": {"name": "h100-16"},
    "spec": {
        "platform": "aws",
        "gpu": "h100",
        "nodes": {"count": 16, "namePattern": "gpu-node-{index:02d}", "perClique": 0, "perRack": 8},
        "seed": 7,
        "noise": {"sigma": 0.02, "dipProbability": 0.01},
        "faults": [
            {"node": "gpu-node-07", "kind": "slow-nic", "factor": 0.6},
            {"node": "gpu-node-12", "kind": "unschedulable", "atSecond": 30},
        ],
    },
}


def _with(change) -> dict:
    data = copy.deepcopy(BASE)
    change(data)
    return data


def test_issue_example_parses():
    spec = parse_spec(BASE)
    assert spec.spec.nodes.names()[0] == "gpu-node-01"
    assert spec.spec.nodes.names()[-1] == "gpu-node-16"
    assert spec.spec.faults[0].effective_factor == 0.6
    assert spec.spec.faults[1].at_second == 30


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (lambda d: d["spec"]["faults"][1].update(kind="slow-nik"), "c.yaml: spec.faults[1].kind", "slow-nik"),
        (lambda d: d["spec"]["faults"][0].update(fator=0.5), "c.yaml: spec.faults[0].fator", "unknown field"),
        (lambda d: d["spec"].update(extra=1), "c.yaml: spec.extra", "unknown field"),
        (lambda d: d["spec"]["nodes"].update(namePattern="n-{i}"), "c.yaml: spec.nodes.namePattern", "{index}"),
        (lambda d: d["spec"]["nodes"].update(namePattern="n-{index!r}"), "c.yaml: spec.nodes.namePattern", "{index}"),
        (lambda d: d["spec"]["nodes"].update(namePattern="Node{index}"), "c.yaml: spec.nodes.namePattern", "node name"),
        (lambda d: d["spec"]["nodes"].update(namePattern="n-{index:q}"), "c.yaml: spec.nodes.namePattern", "format"),
        (lambda d: d["spec"]["nodes"].update(namePattern="n-1"), "c.yaml: spec.nodes.namePattern", "{index}"),
        (lambda d: d["spec"]["faults"][0].update(node="gpu-node-99"), "c.yaml: spec.faults[0].node", "unknown node"),
        (lambda d: d["spec"]["faults"].append({"kind": "link", "nodes": ["gpu-node-01"]}), "c.yaml: spec.faults[2]",
         "two different nodes"),
        (lambda d: d["spec"]["faults"].append({"kind": "crash", "node": "gpu-node-01", "factor": 0.5}),
         "c.yaml: spec.faults[2]", "factor does not apply"),
        (lambda d: d["spec"]["faults"].append({"kind": "dcgm-fail", "node": "gpu-node-01", "test": "Nope"}),
         "c.yaml: spec.faults[2]", "not a DCGM"),
        (lambda d: d["spec"].update(gpu="h300"), "c.yaml: spec.gpu", "h300"),
        (lambda d: d["spec"].update(platform="ibm"), "c.yaml: spec.platform", "ibm"),
        (lambda d: d.update(kind="Certification"), "c.yaml: kind", "SimulatedCluster"),
        (lambda d: d["spec"]["noise"].update(sigma=-1), "c.yaml: spec.noise.sigma", "greater than"),
        (lambda d: d["spec"]["nodes"].update(overrides=[{"node": "x", "gpu": "a100"}]),
         "c.yaml: spec.nodes.overrides[0].node", "unknown node"),
        (lambda d: (d["spec"]["nodes"].update(namePattern="n{index:d}", count=100), d["spec"].update(faults=[])),
         None, None),  # valid: n1 … n100 are unique
    ],
)
def test_errors_name_the_path(change, where, words):
    data = _with(change)
    if where is None:
        parse_spec(data, "c.yaml")
        return
    with pytest.raises(InputError) as info:
        parse_spec(data, "c.yaml")
    text = str(info.value)
    assert "\n" not in text
    assert info.value.where == where, text
    assert words in text


def test_link_fault_and_overrides():
    data = _with(lambda d: d["spec"].update(
        faults=[{"kind": "link", "nodes": ["gpu-node-01", "gpu-node-02"], "factor": 0.3},
                {"kind": "flapping", "node": "gpu-node-03"}],
        nodes={"count": 4, "overrides": [{"node": "gpu-node-04", "gpus": 4}]}))
    spec = parse_spec(data)
    link, flap = spec.spec.faults
    assert link.members == ("gpu-node-01", "gpu-node-02")
    assert flap.effective_probability == 0.5 and flap.effective_factor == 0.5


def test_load_spec_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec: [unclosed\n")
    with pytest.raises(InputError, match="bad.yaml:.*not valid YAML"):
        load_spec(bad)
    with pytest.raises(InputError, match="cannot read"):
        load_spec(tmp_path / "missing.yaml")
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("42\n")
    with pytest.raises(InputError, match="scalar.yaml: expected a SimulatedCluster"):
        load_spec(scalar)
