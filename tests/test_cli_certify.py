"""`nvcre certify` and `nvcre report` from the command line: exit codes, outputs, and one-line bad-input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_certify_writes_report_card_and_workflow(tmp_path, capsys):
    code = main(["certify", str(ROOT / "examples" / "certification.yaml"), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "communication/nccl-all-reduce: 1/1 done, 0 failed" in out and "Result:        PASSED" in out and "0 left behind" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["kind"] == "CertificationReport" and report["result"] == "PASSED"
    assert (tmp_path / "report.txt").read_text().startswith("Certification Report")
    assert "kind: Workflow" in (tmp_path / "workflow.yaml").read_text()


def test_certify_failed_exits_1(tmp_path, capsys):
    code = main(["certify", str(ROOT / "examples" / "certifications" / "intra-node.yaml"), "--cluster",
                 str(ROOT / "examples" / "clusters" / "slow-nic.yaml"), "--out", str(tmp_path), "--quiet"])
    assert code == 1
    assert "[" not in capsys.readouterr().out.splitlines()[0]  # --quiet: no progress lines


@pytest.mark.parametrize("cluster, needle", [
    ("missing.yaml", "no such file"),
    ("bad-kind.yaml", "kind"),
    ("bad-fault.yaml", "spec.faults[0].kind"),
])
def test_certify_bad_cluster_is_one_line_exit_2(tmp_path, capsys, cluster, needle):
    (tmp_path / "bad-kind.yaml").write_text("apiVersion: nvcre-hera.dev/v1alpha1\nkind: Cluster\nmetadata: {name: x}\n"
                                            "spec: {platform: aws, gpu: h100, nodes: {count: 2}}\n")
    (tmp_path / "bad-fault.yaml").write_text(
        "apiVersion: nvcre-hera.dev/v1alpha1\nkind: SimulatedCluster\nmetadata: {name: x}\n"
        "spec: {platform: aws, gpu: h100, nodes: {count: 2}, faults: [{node: gpu-node-01, kind: melted}]}\n")
    code = main(["certify", str(ROOT / "examples" / "certification.yaml"), "--cluster", str(tmp_path / cluster),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and needle in err and "Traceback" not in err


def test_report_renders_every_format_and_rejects_bad_input(tmp_path, capsys):
    main(["certify", str(ROOT / "examples" / "certification.yaml"), "--out", str(tmp_path), "--quiet"])
    capsys.readouterr()
    for fmt, marker in (("text", "Result:"), ("json", '"CertificationReport"'), ("junit", "<testsuites"),
                        ("html", "<html")):
        assert main(["report", str(tmp_path / "report.json"), "--format", fmt]) == 0
        assert marker in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["report", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err
