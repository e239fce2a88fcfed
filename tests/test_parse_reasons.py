"""Reasons and metrics derived from parsed results, and the `nvcre parse` helper (parse_file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre_hera.parsers import (dcgm_reasons, metrics_from, nccl_reasons, parse_dcgm, parse_file, parse_nccl,
                                parse_training, training_reasons)

REAL = Path(__file__).parent / "data" / "real"


def _nccl(name: str) -> dict:
    return parse_nccl((REAL / "nccl" / name).read_text())


def _names(reasons: list[dict]) -> list[str]:
    assert all(set(r) == {"node", "reason", "message"} and r["node"] is None for r in reasons)
    return [r["reason"] for r in reasons]


def test_good_run_has_no_reason() -> None:
    res = _nccl("06-h100-gcp-a3mega-2node-allreduce-full.txt")
    assert nccl_reasons(res, expected_fabric="IB") == []


def test_data_corruption() -> None:
    reasons = nccl_reasons(_nccl("24-rtx3090-2node-inc-nonzero-wrong-108-FAILED.txt"))
    assert _names(reasons) == ["DataCorruption"]
    assert "1073741424 wrong values" in reasons[0]["message"]
    assert "out of bounds values: 108 FAILED" in reasons[0]["message"]


def test_workload_failed_on_init_failure() -> None:
    reasons = nccl_reasons(_nccl("13-rtxa6000-2node-init-failure-mpirun-abort.txt"))
    assert _names(reasons) == ["WorkloadFailed"]
    assert "Test NCCL failure common.cu:959" in reasons[0]["message"]


def test_transport_mismatch_and_switch() -> None:
    res = _nccl("11-v100-2node-socket-fallback-nccl-warn-init.txt")
    # the excerpt ends at init: nothing measured (its WARN is no failure evidence), and the socket fallback shows
    assert _names(nccl_reasons(res, expected_fabric="EFA")) == ["MeasurementNotFound", "TransportMismatch"]
    assert _names(nccl_reasons(res, expected_fabric="efa", transport_check=False)) == ["MeasurementNotFound"]
    assert _names(nccl_reasons(res, expected_fabric=None)) == ["MeasurementNotFound"]
    assert _names(nccl_reasons(res, expected_fabric="ethernet")) == ["MeasurementNotFound"]
    for fabric in ("IB", "InfiniBand", "roce"):
        assert "TransportMismatch" in _names(nccl_reasons(res, expected_fabric=fabric))


def test_measurement_not_found() -> None:
    assert _names(nccl_reasons(parse_nccl("just some text\n"))) == ["MeasurementNotFound"]
    # issue 9 item 2: a table cut after its last row (no footer) is no measurement, whatever its numbers say
    (reason,) = nccl_reasons(_nccl("17-gb10-dgx-spark-2node-nccltests2.20-allreduce-partial.txt"))
    assert reason["reason"] == "MeasurementNotFound" and "footer" in reason["message"]


def test_warn_and_unfinished_table_is_no_measurement_not_a_failure() -> None:
    text = ("h:1:1 [0] NCCL WARN Connect to 10.0.0.2<1234> failed : Connection refused\n"
            "        1024           256     float     sum      -1    10.00    0.10    0.19      0    10.00    0.10    0.19      0\n")
    res = parse_nccl(text)
    assert res["status"] == "incomplete"
    (reason,) = nccl_reasons(res)
    assert reason["reason"] == "MeasurementNotFound" and "Connection refused" in reason["message"]


def test_dcgm_reasons() -> None:
    res = parse_dcgm((REAL / "dcgm" / "01-h100x8-dcgm3.3.8-r3-table-gpu-memory-fail-all-no-fabricmanager.txt")
                     .read_text())
    reasons = dcgm_reasons(res)
    assert _names(reasons) == ["DiagnosticFailed"]
    assert reasons[0]["message"].startswith('dcgmi diag: test "GPU Memory" failed on GPU 0,1,2,3,4,5,6,7: GPU 0 Error')
    res = parse_dcgm((REAL / "dcgm" / "02-l40s-x4-dcgm4.2.3-r2-table-pcie-fail-per-gpu-lines.txt").read_text())
    assert dcgm_reasons(res)[0]["message"].startswith('dcgmi diag: test "pcie" failed: There was an internal error')
    ok = parse_dcgm((REAL / "dcgm" / "06-8gpu-dcgm3.1.0-json-with-null-entries-and-warning-prefix.txt").read_text())
    assert dcgm_reasons(ok) == []
    assert _names(dcgm_reasons(parse_dcgm("Error: DCGM is not running\n"))) == ["WorkloadFailed"]
    assert _names(dcgm_reasons(parse_dcgm(""))) == ["MeasurementNotFound"]


def test_training_reasons() -> None:
    nan = parse_training((REAL / "training" / "04-nemo1-gpt7b-tqdm-train-step-timing-nan-loss-checkpoint.txt")
                         .read_text())
    reasons = training_reasons(nan)
    assert _names(reasons) == ["WorkloadFailed"]
    assert reasons[0]["message"] == "training loss became NaN at iteration 9000"
    assert _names(training_reasons(parse_training("nothing\n"))) == ["MeasurementNotFound"]
    good = parse_training((REAL / "training" / "01-megatron-lm-mixtral8x7b-16xh100-throughput-per-gpu.txt")
                          .read_text())
    assert training_reasons(good) == []


def test_metrics_from() -> None:
    assert metrics_from("nccl", _nccl("04-h100-p5-2node-eks-efa-mpijob-allreduce.txt")) == {
        "busBandwidthGBps": 480.87, "algBandwidthGBps": 256.46}
    assert metrics_from("nccl", parse_nccl("")) == {}
    train = parse_training((REAL / "training" / "06-nemo2-llama3-8b-8xb200-tflops-per-gpu-sci-notation.txt")
                           .read_text())
    m = metrics_from("training", train)
    assert set(m) == {"avgTFLOPsPerGPU", "avgStepTimeSec"}  # goodput not in the log: missing, not 0
    assert m["avgTFLOPsPerGPU"] == pytest.approx(1250.75)
    assert metrics_from("dcgm", {"status": "pass"}) == {"dcgmPassed": 1.0}
    assert metrics_from("dcgm", {"status": "fail"}) == {"dcgmPassed": 0.0}
    assert metrics_from("dcgm", {"status": "incomplete"}) == {}
    assert metrics_from("dcgm", {"status": "error"}) == {}
    with pytest.raises(ValueError):
        metrics_from("hpl", {})


# ---- the CLI helper ---------------------------------------------------------------------------------------------

def test_parse_file_text_and_json() -> None:
    path = str(REAL / "nccl" / "24-rtx3090-2node-inc-nonzero-wrong-108-FAILED.txt")
    text, code = parse_file("nccl", path, as_json=False)
    assert code == 1  # the log shows a failed run
    assert "failed" in text and "busbw max 7.5 GB/s" in text and "rows 27" in text and "DataCorruption" in text
    out, code = parse_file("nccl", path, as_json=True)
    assert code == 1 and json.loads(out)["wrong"] == 1073741424
    text, code = parse_file("dcgm", str(REAL / "dcgm" / "02-l40s-x4-dcgm4.2.3-r2-table-pcie-fail-per-gpu-lines.txt"),
                            False)
    assert code == 1 and "failed tests: pcie" in text
    text, code = parse_file("training", str(REAL / "training" / "01-megatron-lm-mixtral8x7b-16xh100-"
                                            "throughput-per-gpu.txt"), False)
    assert code == 0 and "megatron: 45 iterations" in text


def test_parse_file_errors(tmp_path: Path) -> None:
    text, code = parse_file("nccl", str(tmp_path / "missing.log"), False)
    assert code == 2 and text.startswith(str(tmp_path / "missing.log") + ": ") and "\n" not in text
    f = tmp_path / "x.log"
    f.write_text("x")
    text, code = parse_file("hpl", str(f), True)
    assert code == 2 and text == f"{f}: unknown log kind 'hpl' (use nccl, dcgm, training)"
    text, code = parse_file("nccl", str(tmp_path), False)  # a directory
    assert code == 2 and text.startswith(f"{tmp_path}: cannot read")


def test_parse_file_binary_garbage(tmp_path: Path) -> None:
    f = tmp_path / "bin.log"
    f.write_bytes(bytes(range(256)) * 4)
    text, code = parse_file("nccl", str(f), True)  # read without raising, and it is no nccl-tests log
    assert code == 2 and text == f"{f}: " + "not an nccl-tests log: no result row, `#` header or footer, NCCL " \
        "INFO/WARN line or `Test … failure` line"


def test_abort_banner_after_corruption_is_not_a_second_cause() -> None:
    text = ("        1024           256     float     sum      -1    10.00    0.10    0.19      5    10.00    0.10    0.19      5\n"
            "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 0.19\n"
            "Primary job  terminated normally, but 1 process returned\n")
    assert _names(nccl_reasons(parse_nccl(text))) == ["DataCorruption"]
    crash = text + "host: Test NCCL failure common.cu:1030 'unhandled cuda error'\n"
    assert _names(nccl_reasons(parse_nccl(crash))) == ["DataCorruption", "WorkloadFailed"]
