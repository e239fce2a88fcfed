"""CEL thresholds: what compiles, what the loader rejects (one line, naming the metric), and how results come out."""

from __future__ import annotations

import pytest

from nvcre_hera.thresholds import check_threshold, compile_threshold, evaluate


@pytest.mark.parametrize(("expr", "value", "expected"), [
    ("value >= 300", 371.2, True),
    ("value >= 300", 281.4, False),
    ("value >= 300.0", 300.0, True),
    ("value >= 300 && value < 2000", 371.2, True),
    ("value >= 300 && value < 2000", 2500.0, False),
    ("value >= 300 && value < 2000", 299.9, False),
    ("value <= 2.5", 1.8, True),          # avgStepTimeSec: lower is better
    ("!(value < 0.9)", 0.95, True),
    ("value > 0.5 || value < 0.1", 0.3, False),
    ("value == 1.0", 1.0, True),          # c2cVerified
    ("value in [1.0, 2.0]", 2.0, True),
])
def test_good_expressions(expr: str, value: float, expected: bool) -> None:
    assert evaluate(compile_threshold(expr), value) is expected
    check_threshold("busBandwidthGBps", expr)  # the loader accepts it too


@pytest.mark.parametrize("expr", ["value + 1", "(value * 2.0)", "-value", "300", "'fast'", "null"])
def test_obviously_not_bool_is_rejected_at_compile(expr: str) -> None:
    with pytest.raises(ValueError, match="not a bool"):
        compile_threshold(expr)


@pytest.mark.parametrize("expr", ["value >=", "value >= 300 &&", "value >>= 3", "(value > 1"])
def test_syntax_error(expr: str) -> None:
    with pytest.raises(ValueError, match="CEL syntax error at column"):
        compile_threshold(expr)


def test_empty_expression() -> None:
    with pytest.raises(ValueError, match="empty"):
        compile_threshold("  ")


def test_unknown_variable_names_it_and_the_metric() -> None:
    with pytest.raises(ValueError) as err:
        check_threshold("busBandwidthGBps", "vaule >= 300")
    text = str(err.value)
    assert text == "threshold 'busBandwidthGBps': 'vaule >= 300': unknown variable 'vaule': a threshold sees only `value` and `fleet`"


def test_non_bool_result_found_by_trial_evaluation() -> None:
    # parses, is not "obviously" arithmetic at the root, but yields an int: only the trial run can tell
    with pytest.raises(ValueError, match="result is int 1, not a bool"):
        check_threshold("goodputRatio", "value > 0.5 ? 1 : 0")


def test_evaluate_rejects_non_bool_at_runtime() -> None:
    program = compile_threshold("value > 2.0 ? 1 : false")  # bool at 1.0, int above 2.0
    assert evaluate(program, 1.0) is False
    with pytest.raises(ValueError, match="not a bool"):
        evaluate(program, 3.0)


def test_int_literal_equality_hint() -> None:
    # value is a double; cel-python has no double == int overload, so say how to fix it
    with pytest.raises(ValueError, match=r"no matching overload for == on \(double, int\).*1\.0"):
        check_threshold("c2cVerified", "value == 1")


def test_messages_are_one_line() -> None:
    for expr in ["foo > 1", "value.x > 1", "value >=", "value + 1", "1/0 == 1"]:
        with pytest.raises(ValueError) as err:
            check_threshold("m", expr)
        assert "\n" not in str(err.value) and len(str(err.value)) < 240, str(err.value)


def test_nan_does_not_pass_a_lower_bound() -> None:
    assert evaluate(compile_threshold("value >= 300"), float("nan")) is False
