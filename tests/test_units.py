"""Byte sizes and Go durations: the strict parsers that guard values reaching workload command lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvcre_hera.units import format_bytes, parse_byte_size, parse_duration


@pytest.mark.parametrize(("text", "expected"), [
    ("8", 8), ("1K", 1024), ("512M", 512 << 20), ("16G", 16 << 30), ("32G", 32 << 30), ("1T", 1 << 40),
])
def test_byte_size_powers_of_1024(text: str, expected: int) -> None:
    """K/M/G/T are powers of 1024, as nccl-tests reads `-e`."""
    assert parse_byte_size(text) == expected


@pytest.mark.parametrize("text", ["16 GB", "16g", "16GB", "16GiB", "0", "0G", "-1G", "", "1.5G", "G", " 16G", "16G\n"])
def test_byte_size_rejects(text: str) -> None:
    """Anything but digits with one upper-case K/M/G/T suffix, or zero, is an error saying how to write it."""
    with pytest.raises(ValueError, match="byte size|greater than zero"):
        parse_byte_size(text)


@pytest.mark.parametrize(("text", "seconds"), [
    ("1h", 3600), ("15m", 900), ("90s", 90), ("1h30m", 5400), ("500ms", 0.5), ("1.5h", 5400), ("2h0m10s", 7210),
])
def test_duration_go_syntax(text: str, seconds: float) -> None:
    """Go durations as NVCRE writes them (`timeoutPerJob: 1h`)."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["1 hour", "-5m", "", "5", "1d", "0s", "m", "1h 30m", "h1"])
def test_duration_rejects(text: str) -> None:
    """No spaces, no sign, no bare numbers, no days, nothing of length zero."""
    with pytest.raises(ValueError):
        parse_duration(text)


@given(st.integers(min_value=1, max_value=1 << 20), st.sampled_from(["", "K", "M", "G", "T"]))
def test_byte_size_round_trip(number: int, suffix: str) -> None:
    """Every well-formed size parses to number × factor."""
    factor = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[suffix]
    assert parse_byte_size(f"{number}{suffix}") == number * factor


@given(st.text(max_size=12))
def test_byte_size_never_crashes(text: str) -> None:
    """Arbitrary text either parses to a positive int or raises ValueError (never another exception)."""
    try:
        assert parse_byte_size(text) > 0
    except ValueError:
        pass


@given(st.text(max_size=12))
def test_duration_never_crashes(text: str) -> None:
    """Arbitrary text either parses to a positive number of seconds or raises ValueError."""
    try:
        assert parse_duration(text) > 0
    except ValueError:
        pass


@pytest.mark.parametrize(("size", "text"), [
    (17179869184, "16 GiB"), (1536, "1.5 KiB"), (100, "100 B"), (1 << 40, "1 TiB"), (3 << 20, "3 MiB"),
])
def test_format_bytes(size: int, text: str) -> None:
    """The report card's rendering of sizes."""
    assert format_bytes(size) == text
