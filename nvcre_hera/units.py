"""Byte sizes and Go durations as the spec spells them, checked strictly because they reach command lines."""

from __future__ import annotations

import re

_BYTES = re.compile(r"^([0-9]+)([KMGT]?)$")
_BYTE_FACTORS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_byte_size(text: str) -> int:
    """"16G" -> 17179869184. Digits with an optional K/M/G/T (powers of 1024, as nccl-tests reads them)."""
    match = _BYTES.fullmatch(text)  # not match(): `$` would accept a trailing newline
    if not match:
        raise ValueError(f"{text!r} is not a byte size (digits with an optional K, M, G or T, e.g. 16G)")
    value = int(match.group(1)) * _BYTE_FACTORS[match.group(2)]
    if value <= 0:
        raise ValueError(f"{text!r} must be greater than zero")
    return value


def go_duration_seconds(text: str) -> float:
    """A Go duration ("1h", "1h30m", "90s", "500ms", "0s") in seconds, as time.ParseDuration reads it (unsigned)."""
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or pos == 0:
        raise ValueError(f"{text!r} is not a Go duration (e.g. 1h, 15m, 90s, 1h30m)")
    return total


def parse_duration(text: str) -> float:
    """A spec duration: a Go duration that must be positive (a zero timeout would fail every test at once)."""
    if not text:
        raise ValueError("empty duration (use a Go duration such as 1h or 15m)")
    total = go_duration_seconds(text)
    if total <= 0:
        raise ValueError(f"{text!r} must be longer than zero")
    return total


def format_bytes(size: float) -> str:
    """17179869184 -> "16 GiB" (for the report card)."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{int(size)} B"


__all__ = ["format_bytes", "go_duration_seconds", "parse_byte_size", "parse_duration"]
