"""NVSentinel's node-list ConfigMaps (nvcre_hera/report/nvsentinel.py) round-trip through the decoding the
`nvcre-certification-monitor` uses, re-stated here from its source (NVIDIA/NVSentinel commit 010df7b5,
health-monitors/nvcre-certification-monitor/pkg/nvcre/nvcre.go: DecodeFailedNodes L156-180, DecodeSucceededNodes
L182-209, gunzip L211+; error code: pkg/controller/helpers.go L36-39 `Variant + "/" + Reason`)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.report.nvsentinel import category_statuses, result_configmaps
from nvcre_hera.sim.cluster import load_sim_cluster
from nvcre_hera.steps.verdict_outputs import write_nvsentinel

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "report"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "expected.json").is_file())
NVCRE_REASONS = {"HardwareFailureDetected", "ThresholdViolation", "WorkloadFailed"}


def _binary(cm: dict, key: str) -> bytes:
    """corev1.ConfigMap.BinaryData is []byte: base64 in the JSON the API server returns."""
    value = (cm.get("binaryData") or {}).get(key)
    return base64.b64decode(value) if value else b""


def monitor_failed_nodes(cm: dict | None) -> list[dict] | None:
    """DecodeFailedNodes: nil ConfigMap or empty entry -> nil; gunzip; json.Unmarshal into []FailedNode{name,
    reason, message} (unknown fields dropped, as encoding/json does)."""
    if cm is None:
        return None
    raw = _binary(cm, "failed-nodes.json.gz")
    if not raw:
        return None
    rows = json.loads(gzip.decompress(raw))
    return [{"name": r.get("name", ""), "reason": r.get("reason", ""), "message": r.get("message", "")} for r in rows]


def monitor_succeeded_nodes(cm: dict | None) -> list[str] | None:
    """DecodeSucceededNodes: gunzip, strings.Split on ",", TrimSpace, drop empty names."""
    if cm is None:
        return None
    raw = _binary(cm, "succeeded-nodes.csv.gz")
    if not raw:
        return None
    return [n.strip() for n in gzip.decompress(raw).decode().split(",") if n.strip()] or None


def _report(case: str) -> dict:
    return json.loads((GOLDEN / case / "expected.json").read_text())


def _maps(report: dict) -> list[dict]:
    return result_configmaps(report, workflow_name="cert-abc12", namespace="nvcre", workflow_uid="uid-1")


def test_threshold_violation_decodes_to_the_monitors_error_codes() -> None:
    report = _report("threshold-violation")
    maps = _maps(report)
    assert [m["metadata"]["name"] for m in maps] == ["cert-abc12-c0-nccl-all-reduce-failed-nodes"]
    rows = monitor_failed_nodes(maps[0])
    assert [(r["name"], r["reason"]) for r in rows] == [("gpu-node-03", "ThresholdViolation"),
                                                        ("gpu-node-04", "ThresholdViolation")]
    assert "measured 281.4000" in rows[0]["message"]
    status = category_statuses(report, maps, "cert-abc12")
    codes = {f"{s['variant']}/{r['reason']}" for s in status for r in monitor_failed_nodes(
        next(m for m in maps if m["metadata"]["name"] == s["failedNodesRef"]["name"]))}
    assert codes == {"nccl-all-reduce/ThresholdViolation"}


def test_hardware_failure_blames_only_the_node_with_nvcres_reason() -> None:
    report = _report("hardware-failure")
    rows = [r for m in _maps(report) for r in monitor_failed_nodes(m) or []]
    blamed = {n["name"] for n in report["failedNodes"]}
    assert {r["name"] for r in rows} == blamed
    assert {r["reason"] for r in rows} == {"HardwareFailureDetected"}


def test_all_passed_lists_every_node_as_succeeded() -> None:
    report = _report("all-passed")
    maps = _maps(report)
    per_category = [sorted({n for g in c["groups"] for n in g["nodes"]}) for c in report["categories"]]
    assert [monitor_succeeded_nodes(m) for m in maps] == per_category
    assert all(monitor_failed_nodes(m) is None for m in maps)
    assert maps[0]["metadata"]["labels"]["nvcre-hera.dev/workflow"] == "cert-abc12"
    assert maps[0]["metadata"]["labels"]["nvcre-hera.dev/certification"] == report["name"]
    assert maps[0]["metadata"]["ownerReferences"][0]["uid"] == "uid-1"


@pytest.mark.parametrize("case", CASES)
def test_every_golden_report_round_trips(case: str) -> None:
    report = _report(case)
    blamed = {n["name"] for n in report["failedNodes"]}
    for cm in _maps(report):
        failed = monitor_failed_nodes(cm) or []
        succeeded = monitor_succeeded_nodes(cm) or []
        assert not (failed and succeeded)
        assert {r["name"] for r in failed} <= blamed
        assert {r["reason"] for r in failed} <= NVCRE_REASONS
        assert not set(succeeded) & blamed
        assert cm["metadata"]["name"] == cm["metadata"]["name"].lower() and len(cm["metadata"]["name"]) <= 253
    for index, cat in enumerate(report["categories"]):
        mine = [m for m in _maps(report) if m["metadata"]["annotations"]["nvcre-hera.dev/category-index"] == str(index)]
        if cat["status"] != "Passed":  # fail closed: a category that did not pass lists no succeeded node
            assert all(monitor_succeeded_nodes(m) is None for m in mine)
        if not cat["groups"]:  # no evidence, no list
            assert mine == []


def test_the_judge_writes_them_through_the_cluster_and_logs_refusals() -> None:
    report = _report("threshold-violation")
    sim = load_sim_cluster(ROOT / "examples" / "clusters" / "one-node.yaml")
    lines: list[str] = []
    written = write_nvsentinel(report, sim, {"workflowName": "wf-1", "namespace": "nvcre"}, lines.append)
    assert written == list(sim.configmaps) == ["wf-1-c0-nccl-all-reduce-failed-nodes"]

    class Refusing:
        def apply_configmap(self, manifest: dict) -> str:
            raise PermissionError("configmaps is forbidden")

    lines.clear()
    assert write_nvsentinel(report, Refusing(), {"workflowName": "wf-1"}, lines.append) == []
    assert "could not write NVSentinel ConfigMap wf-1-c0-nccl-all-reduce-failed-nodes" in lines[0]


def test_certify_writes_the_configmaps_the_monitor_decodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["certify", str(ROOT / "examples/certifications/intra-node.yaml"), "--cluster",
                 str(ROOT / "examples/clusters/slow-nic.yaml"), "--out", str(out), "--quiet",
                 "--nvsentinel-configmaps"])
    assert code == 1
    capsys.readouterr()
    maps = list(yaml.safe_load_all((out / "nvsentinel-configmaps.yaml").read_text()))
    failed = {r["name"]: r["reason"] for m in maps for r in monitor_failed_nodes(m) or []}
    report = json.loads((out / "report.json").read_text())
    assert failed == {n["name"]: "ThresholdViolation" for n in report["failedNodes"]} and failed
    # per category (the monitor clears a variant's failures with that variant's passes only): all-reduce passed
    # on every node, the loopback failed on the slow NIC's node
    by_category = {m["metadata"]["annotations"]["nvcre-hera.dev/category"]: m for m in maps}
    assert sorted(by_category) == ["communication/nccl-all-reduce", "communication/nccl-loopback"]
    assert len(monitor_succeeded_nodes(by_category["communication/nccl-all-reduce"])) == 16
    assert monitor_succeeded_nodes(by_category["communication/nccl-loopback"]) is None


def test_certify_refuses_the_option_on_the_argo_engine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["certify", str(ROOT / "examples/certification.yaml"), "--engine", "argo", "--out",
                 str(tmp_path / "o"), "--nvsentinel-configmaps"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--nvsentinel-configmaps" in err and "Traceback" not in err


def test_compiled_judge_gets_the_option_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra, expected in (([], False), (["--nvsentinel-configmaps"], True)):
        target = tmp_path / "wf.yaml"
        assert main(["compile", str(ROOT / "examples/certification.yaml"), "-o", str(target), *extra]) == 0
        wf = yaml.safe_load(target.read_text())
        judge = next(t for t in wf["spec"]["templates"] if t["name"] == "judge")
        assert ("--nvsentinel-configmaps" in judge["container"]["args"]) is expected
    capsys.readouterr()


def test_the_rbac_component_grants_what_apply_configmap_calls() -> None:
    component = ROOT / "manifests" / "components" / "nvsentinel"
    kust = yaml.safe_load((component / "kustomization.yaml").read_text())
    docs = [d for f in kust["resources"] for d in yaml.safe_load_all((component / f).read_text()) if d]
    rules = {(g, r): set(rule["verbs"]) for d in docs if d["kind"] == "Role" for rule in d["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    assert rules == {("", "configmaps"): {"create", "update"}}
    source = (ROOT / "nvcre_hera" / "cluster" / "kube.py").read_text()
    assert "create_namespaced_config_map" in source and "replace_namespaced_config_map" in source  # create, update
    base = [d for p in sorted((ROOT / "manifests").glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    # the base Role's ConfigMap verbs are the diagnose store's (steps/diagnose_store.py); `update` is this component's
    assert not any("configmaps" in rule["resources"] and "update" in rule["verbs"]
                   for d in base for rule in d.get("rules") or [])
