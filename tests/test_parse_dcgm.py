"""dcgmi diag parser: the real table (3.x, 4.x) and JSON outputs, plus synthetic layout quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.parsers.dcgm import parse_dcgm

REAL = Path(__file__).parent / "data" / "real" / "dcgm"
ALL8 = {str(i): "fail" for i in range(8)}


def _parse(name: str) -> dict:
    return parse_dcgm((REAL / name).read_text(encoding="utf-8"))


def test_every_real_log_is_covered() -> None:
    assert sorted(p.name for p in REAL.glob("*.txt")) == [
        "01-h100x8-dcgm3.3.8-r3-table-gpu-memory-fail-all-no-fabricmanager.txt",
        "02-l40s-x4-dcgm4.2.3-r2-table-pcie-fail-per-gpu-lines.txt",
        "06-8gpu-dcgm3.1.0-json-with-null-entries-and-warning-prefix.txt",
    ]


def test_real_01_dcgm3_table_fail_all() -> None:
    res = _parse("01-h100x8-dcgm3.3.8-r3-table-gpu-memory-fail-all-no-fabricmanager.txt")
    assert res["format"] == "table"
    assert res["status"] == "fail"
    assert res["version"] == "3.3.8" and res["driverVersion"] == "560.35.03"
    assert res["failedTests"] == ["GPU Memory"]
    assert res["failedGpus"] == list(range(8))  # "Fail - All" with 8 device ids detected
    names = [t["name"] for t in res["tests"]]
    assert names == ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
                     "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap",
                     "Graphics Processes", "Inforom", "PCIe", "GPU Memory", "Memory Bandwidth", "EUD Test"]
    by = {t["name"]: t for t in res["tests"]}
    assert by["GPU Memory"]["category"] == "Hardware" and by["GPU Memory"]["gpus"] == ALL8
    assert by["PCIe"]["status"] == "skip" and by["PCIe"]["category"] == "Integration"
    assert by["EUD Test"]["status"] == "skip" and by["EUD Test"]["category"] == "Stress"
    assert by["Inforom"]["status"] == "pass" and by["Inforom"]["category"] == "Deployment"
    warnings = by["GPU Memory"]["warnings"]
    assert len(warnings) == 8
    # wrapped mid-word ("Restar|t DCGM", "initiali|ze"): re-joined
    assert warnings[3].startswith("GPU 3 Error using CUDA API cuInit Check DCGM and system logs for errors. "
                                  "Reset GPU. Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: "
                                  "'system not yet initialized'")
    assert warnings[7].endswith("Refer to https://github.com/nvidia/cuda-samples")
    info = by["Persistence Mode"]["info"][0]
    assert info.startswith('Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi')
    assert info.endswith("Persistence mode for GPU 4 is disabled. Enable pers")  # dcgmi's own truncation


def test_real_02_dcgm4_table_fail_without_failing_gpu() -> None:
    res = _parse("02-l40s-x4-dcgm4.2.3-r2-table-pcie-fail-per-gpu-lines.txt")
    assert res["status"] == "fail"  # even with no closing border: a failure is a failure
    assert res["version"] == "4.2.3" and res["driverVersion"] == "570.148.08"
    assert [(t["name"], t["category"], t["status"]) for t in res["tests"]] == [
        ("software", "Deployment", "pass"), ("memory", "Hardware", "pass"), ("pcie", "Integration", "fail")]
    pcie = res["tests"][2]
    assert pcie["gpus"] == {"0": "pass", "1": "pass", "2": "pass", "3": "pass"}
    assert res["failedTests"] == ["pcie"] and res["failedGpus"] == []
    assert len(pcie["warnings"]) == 4
    assert pcie["warnings"][0] == ("There was an internal error during the test: 'A child process (152) exited "
                                   "with non-zero status 1' Check DCGM and system logs for errors. Reset GPU. "
                                   "Restart DCGM. Rerun diagnostics.")


def test_real_06_json_with_nulls_and_warning_prefix() -> None:
    res = _parse("06-8gpu-dcgm3.1.0-json-with-null-entries-and-warning-prefix.txt")
    assert res["format"] == "json"
    assert res["status"] == "pass" and res["version"] == "3.1.0"
    assert len(res["tests"]) == 10  # 9 Deployment tests + "software" in Custom; the nulls are skipped
    assert res["tests"][3]["name"] == "Permissions and OS-related Blocks"
    assert res["tests"][9] == {"name": "software", "category": "Custom", "status": "pass",
                               "gpus": {str(i): "pass" for i in range(8)}, "warnings": [], "info": []}
    assert res["tests"][0]["gpus"] == {str(i): "pass" for i in range(8)}  # "gpu_ids": "0,1,...,7"
    assert res["failedTests"] == [] and res["failedGpus"] == []


# ---- synthetic -------------------------------------------------------------------------------------------------

BORDER = "+---------------------------+------------------------------------------------+"


def _cell(name: str, value: str) -> str:
    return f"| {name:<25} | {value:<45}  |"


def _table(*rows: str, closed: bool = True) -> str:
    lines = [BORDER, _cell("Diagnostic", "Result"), BORDER.replace("-", "="),
             "|-----  Metadata  ----------+------------------------------------------------|",
             _cell("DCGM Version", "3.3.5"), _cell("GPU Device IDs Detected", "2330,2330,2330,2330"),
             "+-----  Hardware  ----------+------------------------------------------------+", *rows]
    if closed:
        lines.append(BORDER)
    return "\n".join(lines) + "\n"


def test_dcgm3_per_gpu_pass_and_fail_lines() -> None:
    res = parse_dcgm(_table(_cell("GPU Memory", "Pass - GPUs: 0, 1, 2"), _cell("", "Fail - GPU: 3"),
                            _cell("Warning", "GPU 3 DBE detected"), _cell("Diagnostic", "Pass - All")))
    assert res["status"] == "fail" and res["failedGpus"] == [3] and res["failedTests"] == ["GPU Memory"]
    mem = res["tests"][0]
    assert mem["gpus"] == {"0": "pass", "1": "pass", "2": "pass", "3": "fail"}
    assert mem["warnings"] == ["GPU 3 DBE detected"]
    assert res["tests"][1]["gpus"] == {str(i): "pass" for i in range(4)}


def test_dcgm4_gpu_line_fail_fails_the_test() -> None:
    res = parse_dcgm(_table(_cell("memory", "Pass"), _cell("", "GPU0: Pass"), _cell("", "GPU1: Fail")))
    assert res["status"] == "fail" and res["failedGpus"] == [1]


def test_all_pass_table_and_unclosed_table() -> None:
    rows = (_cell("Denylist", "Pass"), _cell("PCIe", "Skip - All"))
    assert parse_dcgm(_table(*rows))["status"] == "pass"
    assert parse_dcgm(_table(*rows, closed=False))["status"] == "incomplete"


def test_error_and_empty_outputs() -> None:
    res = parse_dcgm("Error: unable to establish a connection to the specified host: localhost\n")
    assert res["status"] == "error" and res["errors"] and res["tests"] == []
    assert parse_dcgm("")["status"] == "incomplete"
    assert parse_dcgm("{ not json\n")["status"] == "incomplete"


def test_dcgm4_json_entities_and_summary() -> None:
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memory", "results": [
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1, "status": "Fail",
             "warnings": [{"warning": "GPU 1 had uncorrectable memory errors", "error_id": 95}]},
            None],
         "test_summary": {"status": "Fail"}},
        {"name": "diagnostic", "results": [{"entity_group": "CPU", "entity_id": 0, "status": "Pass"}],
         "test_summary": {"status": "Pass"}}]}, None]},
        "metadata": {"version": "4.1.1"}}
    res = parse_dcgm("Running diag...\n" + json.dumps(doc, indent=2))
    assert res["format"] == "json" and res["version"] == "4.1.1"
    assert res["status"] == "fail" and res["failedTests"] == ["memory"] and res["failedGpus"] == [1]
    assert res["tests"][0]["warnings"] == ["GPU 1 had uncorrectable memory errors"]
    assert res["tests"][1]["gpus"] == {}  # a CPU entity is not a GPU


def test_json_runtime_error() -> None:
    res = parse_dcgm(json.dumps({"DCGM GPU Diagnostic": {"runtime_error": "Could not start NVVS", "version": "3.2"}}))
    assert res["status"] == "error" and res["errors"] == ["Could not start NVVS"]


@pytest.mark.parametrize("cut", [50, 200, 1000])
def test_truncated_json_is_incomplete(cut: int) -> None:
    text = (REAL / "06-8gpu-dcgm3.1.0-json-with-null-entries-and-warning-prefix.txt").read_text()[:cut]
    assert parse_dcgm(text)["status"] == "incomplete"


# --- issue 9 item 8: fail closed on DCGM output that diagnosed nothing, ran twice, or could not complete ---------

def test_every_test_skipped_is_not_a_pass() -> None:
    from nvcre_hera.parsers.reasons import dcgm_reasons, metrics_from

    res = parse_dcgm(_table(_cell("GPU Memory", "Skip - All"), _cell("Diagnostic", "Skip - All"),
                            _cell("PCIe", "Skip - All")))
    assert res["status"] == "incomplete"
    assert metrics_from("dcgm", res) == {}
    (reason,) = dcgm_reasons(res)
    assert reason["reason"] == "MeasurementNotFound" and "skipped" in reason["message"]


def test_two_table_runs_are_judged_on_the_last() -> None:
    failed_then_passed = _table(_cell("GPU Memory", "Fail - GPU: 3")) + _table(_cell("GPU Memory", "Pass - All"))
    res = parse_dcgm(failed_then_passed)
    assert res["status"] == "pass" and [t["name"] for t in res["tests"]] == ["GPU Memory"]
    passed_then_failed = _table(_cell("GPU Memory", "Pass - All")) + _table(_cell("GPU Memory", "Fail - GPU: 3"))
    res = parse_dcgm(passed_then_failed)
    assert res["status"] == "fail" and res["failedGpus"] == [3]


def test_two_json_runs_are_judged_on_the_last() -> None:
    def run(status: str) -> str:
        return json.dumps({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
            {"name": "GPU Memory", "results": [{"gpu_ids": "0", "status": status}]}]}], "version": "3.3.5"}})
    assert parse_dcgm(run("Pass") + "\n" + run("Fail"))["status"] == "fail"
    assert parse_dcgm(run("Fail") + "\n" + run("Pass"))["status"] == "pass"


@pytest.mark.parametrize("body", [
    _table(_cell("GPU Memory", "Pass - All")),                      # a closed table of passes, then the error
    _table(_cell("GPU Memory", "Fail - GPU: 3"), closed=False),      # a partial failure, then the error
    json.dumps({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "GPU Memory", "results": [{"gpu_ids": "0", "status": "Pass"}]}]}]}}) + "\n",  # JSON, then the error
])
def test_unable_to_complete_is_an_error(body: str) -> None:
    from nvcre_hera.parsers.reasons import dcgm_reasons, metrics_from

    res = parse_dcgm(body + "Error: Unable to complete diagnostic for group 2. Return: (-29) GPU is lost\n")
    assert res["status"] == "error"
    assert metrics_from("dcgm", res) == {}
    assert dcgm_reasons(res)[0]["reason"] == "WorkloadFailed"
