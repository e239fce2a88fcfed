"""Training-log parser: Megatron-LM, NeMo 1 tqdm and NeMo 2 progress lines; stall helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre_hera.parsers.training import detect_stall, last_step_progress, parse_training

REAL = Path(__file__).parent / "data" / "real" / "training"


def _read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_every_real_log_is_covered() -> None:
    assert sorted(p.name for p in REAL.glob("*.txt")) == [
        "01-megatron-lm-mixtral8x7b-16xh100-throughput-per-gpu.txt",
        "04-nemo1-gpt7b-tqdm-train-step-timing-nan-loss-checkpoint.txt",
        "06-nemo2-llama3-8b-8xb200-tflops-per-gpu-sci-notation.txt",
    ]


def test_real_01_megatron() -> None:
    res = parse_training(_read("01-megatron-lm-mixtral8x7b-16xh100-throughput-per-gpu.txt"))
    assert res["framework"] == "megatron"
    assert res["iterations"] == 45 and res["totalIterations"] == 100
    assert res["stepsParsed"] == 6 and res["warmupStepsExcluded"] == 1
    # iteration 15 (5926.4 ms, 220.4) is the excluded first line
    assert res["avgStepTimeSec"] == pytest.approx((5912.7 + 5706.3 + 5444.9 + 5533.8 + 5718.6) / 5 / 1000)
    assert res["avgTFLOPsPerGPU"] == pytest.approx((220.9 + 228.9 + 239.8 + 236.0 + 228.4) / 5)
    assert res["lossNaN"] is False and res["lastLoss"] == pytest.approx(1.834162)
    assert res["goodputRatio"] is None
    assert res["logInterval"] == 1


def test_real_04_nemo1_nan_loss() -> None:
    res = parse_training(_read("04-nemo1-gpt7b-tqdm-train-step-timing-nan-loss-checkpoint.txt"))
    assert res["framework"] == "nemo1"
    assert res["iterations"] == 9000  # global_step=9e+3
    assert res["totalIterations"] == 301500
    assert res["stepsParsed"] == 1 and res["warmupStepsExcluded"] == 0
    assert res["avgStepTimeSec"] == pytest.approx(0.615)
    assert res["avgTFLOPsPerGPU"] is None
    assert res["lossNaN"] is True and res["lossNaNAtIteration"] == 9000 and res["lastLoss"] is None


def test_real_06_nemo2_scientific_tflops() -> None:
    res = parse_training(_read("06-nemo2-llama3-8b-8xb200-tflops-per-gpu-sci-notation.txt"))
    assert res["framework"] == "nemo2"
    assert res["iterations"] == 49 and res["totalIterations"] == 99
    assert res["stepsParsed"] == 5 and res["warmupStepsExcluded"] == 1
    assert res["avgStepTimeSec"] == pytest.approx((6.061 + 6.082 + 6.071 + 6.06) / 4)
    assert res["avgTFLOPsPerGPU"] == pytest.approx((1252 + 1248 + 1250 + 1253) / 4)
    assert res["lossNaN"] is False and res["lastLoss"] == pytest.approx(11.96)


def _mega(it: int, ms: float, loss: str = "2.0E+00", tflops: float = 400.0, nan_iters: int = 0) -> str:
    return (f" [2024-01-01 00:00:00] iteration {it:8d}/    1000 | consumed samples: {it * 8:12d} | "
            f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
            f"lm loss: {loss} | loss scale: 1.0 | number of skipped iterations:   0 | "
            f"number of nan iterations: {nan_iters:3d} |\n")


def test_warmup_first_line_excluded() -> None:
    res = parse_training(_mega(1, 30000.0, tflops=50.0) + _mega(2, 1000.0) + _mega(3, 1200.0))
    assert res["avgStepTimeSec"] == pytest.approx(1.1) and res["avgTFLOPsPerGPU"] == pytest.approx(400.0)
    assert parse_training(_mega(1, 30000.0), warmup_steps=0)["avgStepTimeSec"] == pytest.approx(30.0)


def test_megatron_nan_loss_and_nan_counter() -> None:
    assert parse_training(_mega(1, 1.0) + _mega(2, 1.0, loss="nan"))["lossNaNAtIteration"] == 2
    assert parse_training(_mega(10, 1.0, nan_iters=3))["lossNaN"] is True


def test_duplicated_steps_keep_last_values() -> None:
    res = parse_training(_mega(1, 9.0) + _mega(2, 5.0) + _mega(3, 1.0) + _mega(3, 3.0))
    assert res["stepsParsed"] == 3 and res["avgStepTimeSec"] == pytest.approx(0.004)


def test_tqdm_refreshes_on_carriage_returns() -> None:
    line = ("Epoch 0:  {p}%|##| {n}/100 [00:10<01:30, v_num=1, reduced_train_loss=2.5{n}, global_step={g}.0, "
            "train_step_timing in s=0.5{n}]")
    text = "\r".join(line.format(p=n, n=n, g=n - 1) for n in (1, 2, 3)) + "\n"
    res = parse_training(text)
    assert res["framework"] == "nemo1" and res["iterations"] == 2 and res["stepsParsed"] == 3
    assert res["avgStepTimeSec"] == pytest.approx((0.52 + 0.53) / 2)


def test_goodput_explicit_only() -> None:
    assert parse_training(_mega(1, 1.0) + "Goodput: 87.5%\n")["goodputRatio"] == pytest.approx(0.875)
    assert parse_training(_mega(1, 1.0) + "job goodput = 0.91\n")["goodputRatio"] == pytest.approx(0.91)
    assert parse_training(_mega(1, 1.0))["goodputRatio"] is None


def test_nothing_to_read() -> None:
    res = parse_training("loading checkpoint...\nTraceback (most recent call last):\n")
    assert res["framework"] is None and res["iterations"] == 0 and res["avgStepTimeSec"] is None


def test_last_step_progress() -> None:
    assert last_step_progress("") == (0, None)
    it, avg = last_step_progress(_mega(1, 5000.0) + _mega(2, 2000.0) + _mega(3, 4000.0))
    assert it == 3 and avg == pytest.approx(3.0)


def test_detect_stall() -> None:
    log = _mega(1, 5000.0) + _mega(2, 2000.0) + _mega(3, 2000.0)  # avg 2 s, logged every step
    assert detect_stall(log, 6.5) is True
    assert detect_stall(log, 5.5) is False
    assert detect_stall(log, 9.0, multiplier=5.0) is False
    assert detect_stall(log, 5.5, min_seconds=60.0) is False
    assert detect_stall("", 1e9) is False  # no baseline yet: the run deadline covers a hang at startup


def test_detect_stall_scales_with_log_interval() -> None:
    log = _mega(10, 2000.0) + _mega(20, 2000.0) + _mega(30, 2000.0)  # a line every 10 steps of 2 s
    assert parse_training(log)["logInterval"] == 10
    assert detect_stall(log, 30.0) is False
    assert detect_stall(log, 61.0) is True
